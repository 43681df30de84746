package oteltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PrometheusVersion is the Prometheus server .ci/install-prometheus.sh
// builds (Go module version; Prometheus 3.x).
const PrometheusVersion = "v0.316.0"

// PrometheusBinary finds Prometheus: CLINK_PROMETHEUS, else the tools
// cache; "" when it is not there.
func PrometheusBinary() string {
	return tool("CLINK_PROMETHEUS", "prometheus-"+PrometheusVersion, "prometheus")
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL string // http://127.0.0.1:PORT
	log *bytes.Buffer
}

// StartPrometheus runs Prometheus scraping targets (host:port, path
// /metrics) every 250 ms, with token as the bearer token when set. Without
// Prometheus it skips the test, or fails it when CLINK_REQUIRE_OTELCOL=1.
func StartPrometheus(t testing.TB, token string, targets ...string) *Prometheus {
	t.Helper()
	bin := PrometheusBinary()
	if bin == "" {
		if os.Getenv("CLINK_REQUIRE_OTELCOL") == "1" {
			t.Fatal("no Prometheus server: run .ci/install-prometheus.sh (CLINK_REQUIRE_OTELCOL=1)")
		}
		t.Skip("no Prometheus server (.ci/install-prometheus.sh builds it)")
	}
	dir := t.TempDir()
	auth := ""
	if token != "" {
		auth = fmt.Sprintf("    authorization:\n      credentials: %q\n", token)
	}
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 250ms\n  scrape_timeout: 200ms\nscrape_configs:\n  - job_name: clink\n%s    static_configs:\n      - targets: [%s]\n", auth, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := &Prometheus{URL: "http://" + addr, log: &bytes.Buffer{}}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(p.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not get ready:\n%s", p.log.String())
		}
	}
	return p
}

// Series is one sample of an instant query: its labels and value.
type Series struct {
	Labels map[string]string
	Value  string
}

// Query runs an instant PromQL query through the HTTP API.
func (p *Prometheus) Query(t testing.TB, q string) []Series {
	t.Helper()
	resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", q, body.Error)
	}
	var out []Series
	for _, r := range body.Data.Result {
		v := ""
		if len(r.Value) == 2 {
			v, _ = r.Value[1].(string)
		}
		out = append(out, Series{Labels: r.Metric, Value: v})
	}
	return out
}

// Log is Prometheus's own output.
func (p *Prometheus) Log() string { return p.log.String() }
