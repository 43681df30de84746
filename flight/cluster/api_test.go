package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
)

// startAPI runs a Coordinator with its HTTP API and token, no Workers.
func startAPI(t *testing.T, token string) *Coordinator {
	t.Helper()
	return startAPIWith(t, CoordinatorConfig{Token: token})
}

// startAPIWith is startAPI with more of the configuration (addresses on
// 127.0.0.1 unless given).
func startAPIWith(t *testing.T, cfg CoordinatorConfig) *Coordinator {
	t.Helper()
	if cfg.FlightAddr == "" {
		cfg.FlightAddr = "127.0.0.1:0"
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.Log == nil {
		cfg.Log = &syncBuf{}
	}
	cfg.Connectors = builtin.Registry()
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() {
		c.mu.Lock()
		ids := append([]string{}, c.order...)
		c.mu.Unlock()
		for _, id := range ids {
			c.Cancel(id)
		}
		cancel()
		<-done
	})
	return c
}

func filePlan(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\"}\n"), 0o644)
	plan := compile(t, `CREATE TABLE t (k STRING) WITH ('connector'='file', 'path'='`+in+`');
CREATE TABLE o (k STRING) WITH ('connector'='file', 'path'='`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k FROM t`)
	data, err := proto.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAPIJobShape: job ids are JSON numbers in every answer (list, detail,
// operators, submit, cancel) while paths take them as /jobs/1; each job of
// the list has state, status and error_count.
func TestAPIJobShape(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{})
	w := fc.add(t, "f1", 1)
	srv := httptest.NewServer(fc.c.api())
	defer srv.Close()
	base := srv.URL + "/api/v1"
	resp := fc.submitReq(t, &SubmitRequest{Parallelism: 1})
	if data, _ := json.Marshal(resp); !strings.Contains(string(data), `"job":1,`) {
		t.Errorf("submit answer %s", data)
	}
	w.expect(t, actDeploy)
	fc.waitState(t, "1", StateRunning)
	var list struct{ Jobs []map[string]any }
	httpJSON(t, "GET", base+"/jobs", "", nil, &list)
	if len(list.Jobs) != 1 {
		t.Fatalf("jobs %+v", list)
	}
	j := list.Jobs[0]
	for k, want := range map[string]any{"id": 1.0, "name": "fake", "state": StateRunning, "status": StateRunning, "error_count": 0.0, "parallelism": 1.0} {
		if j[k] != want {
			t.Errorf("jobs[0].%s = %#v, want %#v (%v)", k, j[k], want, j)
		}
	}
	var detail map[string]any
	httpJSON(t, "GET", base+"/jobs/1", "", nil, &detail)
	if detail["id"] != 1.0 || detail["status"] != StateRunning || detail["error_count"] != 0.0 || detail["guarantee"] == nil {
		t.Errorf("detail %v", detail)
	}
	var typed JobDetail // a Go client reads the number back
	httpJSON(t, "GET", base+"/jobs/1", "", nil, &typed)
	if typed.ID != "1" || typed.Status != StateRunning {
		t.Errorf("typed detail %+v", typed)
	}
	var ops map[string]any
	httpJSON(t, "GET", base+"/jobs/1/operators", "", nil, &ops)
	if ops["job"] != 1.0 {
		t.Errorf("operators %v", ops)
	}
	var cancel map[string]any
	if code := httpJSON(t, "PATCH", base+"/jobs/1?mode=cancel", "", nil, &cancel); code != http.StatusAccepted || cancel["job"] != 1.0 {
		t.Errorf("cancel %d %v", code, cancel)
	}
	var old JobID // an older Coordinator's "1" still reads
	if err := json.Unmarshal([]byte(`"7"`), &old); err != nil || old != "7" {
		t.Errorf("string id: %q %v", old, err)
	}
}

// TestSubmitToHTTPPort: given the HTTP API's address (Flink's REST port)
// instead of the Flight address, Submit asks GET /api/v1/config for the
// Flight address and submits there; the token applies to that route as to
// the others.
func TestSubmitToHTTPPort(t *testing.T) {
	c := startAPI(t, "tok")
	var cfg map[string]any
	if code := httpJSON(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/config", "", nil, &cfg); code != http.StatusUnauthorized {
		t.Fatalf("config without the token: %d", code)
	}
	httpJSON(t, "GET", "http://"+c.HTTPAddr()+"/api/v1/config", "tok", nil, &cfg)
	if cfg["flight_addr"] != c.FlightAddr() {
		t.Fatalf("config %v", cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := Submit(ctx, c.HTTPAddr(), "tok", &SubmitRequest{Name: "via-http", Plan: filePlan(t)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Job != "1" || resp.Via != c.FlightAddr() {
		t.Fatalf("submit %+v, flight %s", resp, c.FlightAddr())
	}
	if resp, err := Submit(ctx, c.FlightAddr(), "tok", &SubmitRequest{Name: "direct", Plan: filePlan(t)}); err != nil || resp.Via != "" || resp.Job != "2" {
		t.Fatalf("direct submit %+v %v", resp, err)
	}
	if _, err := Submit(ctx, c.HTTPAddr(), "wrong", &SubmitRequest{Name: "x", Plan: filePlan(t)}); err == nil || !strings.Contains(err.Error(), "bearer token") {
		t.Fatalf("wrong token: %v", err)
	}
	// Nobody there: the old message.
	if _, err := Submit(ctx, "127.0.0.1:1", "", &SubmitRequest{Name: "x", Plan: filePlan(t)}); err == nil || !strings.Contains(err.Error(), "cannot reach the Coordinator at 127.0.0.1:1") {
		t.Fatalf("nobody: %v", err)
	}
	// An unspecified host in flight_addr becomes the host that answered.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"flight_addr": "0.0.0.0:6123"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	if got, answered, err := FlightAddrOf(ctx, host, ""); err != nil || !answered || got != "127.0.0.1:6123" {
		t.Fatalf("FlightAddrOf %s: %q %v %v", host, got, answered, err)
	}
}
