// Package oteltest runs a real OpenTelemetry Collector for tests: the one
// .ci/install-otelcol.sh builds (receiver otlp, exporter file), on free
// loopback ports, writing what it receives as OTLP JSON lines that the
// test reads back.
package oteltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Version is the collector release .ci/install-otelcol.sh builds, and
// its build of builder.yaml: the cache directory's name.
const Version = "v0.161.0-2"

// Binary finds the collector: CLINK_OTELCOL, else the tools cache; "" when
// it is not there.
func Binary() string { return tool("CLINK_OTELCOL", "otelcol-"+Version, "otelcol-clink") }

// tool finds a program: the path in env, else dir/name in the tools
// cache (CLINK_TOOLS_CACHE, default ~/.cache/clink-tools); "" when it is
// not there.
func tool(env, dir, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	cache := os.Getenv("CLINK_TOOLS_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "clink-tools")
	}
	p := filepath.Join(cache, dir, name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	return ""
}

// Collector is a running collector.
type Collector struct {
	// HTTP is the OTLP/HTTP endpoint (http://127.0.0.1:PORT), GRPC the
	// OTLP/gRPC one (127.0.0.1:PORT).
	HTTP, GRPC string
	dir        string
	cmd        *exec.Cmd
	log        *bytes.Buffer
}

// Start runs a collector until the test ends. Without one it skips the
// test, or fails it when CLINK_REQUIRE_OTELCOL=1 (make test).
func Start(t testing.TB) *Collector {
	t.Helper()
	bin := Binary()
	if bin == "" {
		if os.Getenv("CLINK_REQUIRE_OTELCOL") == "1" {
			t.Fatal("no OpenTelemetry Collector: run .ci/install-otelcol.sh (CLINK_REQUIRE_OTELCOL=1)")
		}
		t.Skip("no OpenTelemetry Collector (.ci/install-otelcol.sh builds it)")
	}
	dir := t.TempDir()
	hp, gp := freePort(t), freePort(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
      grpc:
        endpoint: %s
exporters:
  file/traces:
    path: %s
    flush_interval: 100ms
  file/metrics:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
`, hp, gp, filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "metrics.jsonl"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Collector{HTTP: "http://" + hp, GRPC: gp, dir: dir, log: &bytes.Buffer{}}
	c.cmd = exec.Command(bin, "--config", filepath.Join(dir, "config.yaml"))
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err := net.Dial("tcp", hp); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not listen on %s", hp)
		}
	}
	return c
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Span is a span as the file exporter wrote it.
type Span struct {
	Service      string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Name         string
	Attributes   map[string]string // values as their JSON text, strings unquoted
	Events       []string
}

// Spans reads every span received so far.
func (c *Collector) Spans(t testing.TB) []Span {
	t.Helper()
	var out []Span
	c.lines(t, "traces.jsonl", func(line []byte) {
		var req struct {
			ResourceSpans []struct {
				Resource   struct{ Attributes []kv } `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID      string `json:"traceId"`
						SpanID       string `json:"spanId"`
						ParentSpanID string `json:"parentSpanId"`
						Name         string `json:"name"`
						Attributes   []kv   `json:"attributes"`
						Events       []struct {
							Name string `json:"name"`
						} `json:"events"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("collector output: %v: %.200s", err, line)
		}
		for _, rs := range req.ResourceSpans {
			svc := attrs(rs.Resource.Attributes)["service.name"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Service: svc, TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Attributes: attrs(s.Attributes)}
					for _, e := range s.Events {
						sp.Events = append(sp.Events, e.Name)
					}
					out = append(out, sp)
				}
			}
		}
	})
	return out
}

// Metrics reads the names of the metrics received so far, by service.
func (c *Collector) Metrics(t testing.TB) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	c.lines(t, "metrics.jsonl", func(line []byte) {
		var req struct {
			ResourceMetrics []struct {
				Resource     struct{ Attributes []kv } `json:"resource"`
				ScopeMetrics []struct {
					Metrics []struct {
						Name string `json:"name"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("collector output: %v: %.200s", err, line)
		}
		for _, rm := range req.ResourceMetrics {
			svc := attrs(rm.Resource.Attributes)["service.name"]
			if out[svc] == nil {
				out[svc] = map[string]bool{}
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					out[svc][m.Name] = true
				}
			}
		}
	})
	return out
}

// Log is the collector's own output.
func (c *Collector) Log() string { return c.log.String() }

func (c *Collector) lines(t testing.TB, name string, f func([]byte)) {
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			f(line)
		}
	}
}

type kv struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func attrs(list []kv) map[string]string {
	m := map[string]string{}
	for _, a := range list {
		var v map[string]json.RawMessage
		json.Unmarshal(a.Value, &v)
		for _, raw := range v {
			m[a.Key] = strings.Trim(string(raw), `"`)
		}
	}
	return m
}

// WaitSpans waits until the collector holds a span of every name among
// those match accepts, and returns those spans.
func (c *Collector) WaitSpans(t testing.TB, match func(Span) bool, names []string, timeout time.Duration) []Span {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(200 * time.Millisecond) {
		var got []Span
		have := map[string]bool{}
		for _, s := range c.Spans(t) {
			if match(s) {
				got = append(got, s)
				have[s.Name] = true
			}
		}
		var missing []string
		for _, n := range names {
			if !have[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v spans (have %v)\ncollector:\n%s", missing, have, c.Log())
		}
	}
}

// Root returns the span named root and checks that every other span is
// its child, in its trace.
func Root(t testing.TB, spans []Span, root string) Span {
	t.Helper()
	var r Span
	for _, s := range spans {
		if s.Name == root {
			r = s
		}
	}
	if r.SpanID == "" || r.ParentSpanID != "" {
		t.Fatalf("no root span %s: %+v", root, r)
	}
	for _, s := range spans {
		if s.Name != root && (s.TraceID != r.TraceID || s.ParentSpanID != r.SpanID) {
			t.Errorf("%s span not under the %s span: trace %s parent %s, want %s %s", s.Name, root, s.TraceID, s.ParentSpanID, r.TraceID, r.SpanID)
		}
	}
	return r
}
