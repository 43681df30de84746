package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/substrait/logictest"
	"github.com/clink-dev/clink/substrait/sql"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testCluster is a Coordinator and Workers in this process; they talk
// over Arrow Flight on loopback as separate processes would.
type testCluster struct {
	c       *Coordinator
	workers []*Worker
	outs    []*syncBuf
	log     *syncBuf
	stop    []context.CancelFunc
}

func startCluster(t testing.TB, workers, slots int, cfg CoordinatorConfig) *testCluster {
	t.Helper()
	tc := &testCluster{log: &syncBuf{}}
	cfg.FlightAddr = "127.0.0.1:0"
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	cfg.Connectors = builtin.Registry()
	cfg.Log = tc.log
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.c = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() {
		for _, s := range tc.stop {
			s()
		}
		cancel()
		<-done
		if t.Failed() {
			t.Logf("cluster log:\n%s", tc.log.String())
		}
	})
	for i := range workers {
		tc.addWorker(t, fmt.Sprintf("w%d", i+1), slots)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		n := len(c.workers)
		c.mu.Unlock()
		if n == workers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers registered", n, workers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return tc
}

func (tc *testCluster) addWorker(t testing.TB, id string, slots int) *Worker {
	out := &syncBuf{}
	w, err := NewWorker(WorkerConfig{ID: id, Coordinator: tc.c.FlightAddr(), Slots: slots, Token: tc.c.cfg.Token,
		Connectors: builtin.Registry(), Stdout: out, Log: tc.log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	tc.workers = append(tc.workers, w)
	tc.outs = append(tc.outs, out)
	tc.stop = append(tc.stop, func() { cancel(); <-done })
	return w
}

// wait polls a job until it reaches a final state.
func (tc *testCluster) wait(t testing.TB, id string, timeout time.Duration) JobDetail {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d, ok := tc.c.Job(id)
		if !ok {
			t.Fatalf("no job %s", id)
		}
		if terminal(d.State) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after %s", id, d.State, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runPlan submits a plan and returns the rows every Worker printed,
// sorted, and the job's final detail.
func (tc *testCluster) runPlan(t testing.TB, plan *pb.Plan, par, batch int) ([]string, JobDetail, error) {
	t.Helper()
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range tc.outs {
		o.take()
	}
	resp, err := tc.c.Submit(&SubmitRequest{Name: "logic", Plan: data, Parallelism: par, BatchSize: batch, LingerMS: 3_600_000})
	if err != nil {
		return nil, JobDetail{}, err
	}
	d := tc.wait(t, string(resp.Job), time.Minute)
	var rows []string
	for _, o := range tc.outs {
		for _, l := range strings.Split(o.take(), "\n") {
			if l != "" {
				rows = append(rows, l)
			}
		}
	}
	slices.Sort(rows)
	return rows, d, nil
}

// TestLogicOnCluster runs every logic-test query on two Workers at
// parallelism 1, 2 and 4 (the shuffle crosses Workers over Flight) and
// compares with the embedded run: the same rows, late and skipped counts.
func TestLogicOnCluster(t *testing.T) {
	tc := startCluster(t, 2, 2, CoordinatorConfig{MaxRestarts: -1})
	files, err := filepath.Glob("../../substrait/logictest/testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatalf("no logic files: %v", err)
	}
	queries, parallel := 0, 0
	for _, f := range files {
		blocks, err := logictest.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := logictest.NewRunner(t.TempDir(), 1)
		for _, b := range blocks {
			where := fmt.Sprintf("%s:%d", filepath.Base(f), b.Line)
			switch b.Kind {
			case "input":
				if err := r.AddInput(b); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
			case "statement":
				r.Statement(b.SQL)
			case "query":
				if _, wantErr := b.Params["error"]; wantErr {
					continue
				}
				plan, _, err := r.Compile(b.SQL)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				ref := r.Run(plan, 7, 1)
				if ref.Err != nil {
					t.Fatalf("%s: embedded: %v", where, ref.Err)
				}
				_, mat := b.Params["materialize"]
				if mat {
					ref.Rows, _ = logictest.Materialize(ref.Rows)
				}
				queries++
				for _, par := range []int{1, 2, 4} {
					rows, d, err := tc.runPlan(t, plan, par, 7)
					if err != nil {
						t.Fatalf("%s: parallelism %d: %v", where, par, err)
					}
					if par > 1 {
						parallel++
					}
					if d.State != StateFinished {
						t.Fatalf("%s: parallelism %d: job %s %s: %s", where, par, d.ID, d.State, d.Failure)
					}
					if mat {
						rows, _ = logictest.Materialize(rows)
					}
					want := ref.Rows
					if il, err := r.Interleaves(plan, par); err == nil && il && !mat {
						// Only the table the changelog describes is the
						// same at every parallelism.
						rows, _ = logictest.Materialize(rows)
						want, _ = logictest.Materialize(want)
					}
					if !slices.Equal(rows, want) {
						t.Errorf("%s: parallelism %d on the cluster:\n%s\nembedded:\n%s", where, par, strings.Join(rows, "\n"), strings.Join(want, "\n"))
					}
					if d.LateDropped != ref.Late || d.RecordsSkipped != ref.Skipped {
						t.Errorf("%s: parallelism %d: late %d skipped %d, embedded late %d skipped %d", where, par, d.LateDropped, d.RecordsSkipped, ref.Late, ref.Skipped)
					}
				}
			}
		}
	}
	t.Logf("%d queries on the cluster, %d of them also at parallelism 2 and 4", queries, parallel/2)
}

func compile(t testing.TB, text string) *pb.Plan {
	t.Helper()
	plan, err := sql.Compile(text, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func httpJSON(t testing.TB, method, url, token string, body io.Reader, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil && resp.StatusCode < 300 {
			t.Fatalf("%s %s: %v: %s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

// TestAPI: the HTTP API answers with the bearer token only; a job's detail
// has its state, guarantee, tasks and latest checkpoint; operators carry
// counters; cancel works.
func TestAPI(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%7, i*100))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	tc := startCluster(t, 1, 2, CoordinatorConfig{Token: "s3cret", CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 20 * time.Millisecond})
	base := "http://" + tc.c.HTTPAddr()
	if code := httpJSON(t, "GET", base+"/api/v1/jobs", "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if code := httpJSON(t, "GET", base+"/metrics", "wrong", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("wrong token on /metrics: %d", code)
	}
	text := `CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector'='file', 'path'='` + in + `', 'event_time_column'='ts');
CREATE TABLE o (k STRING, window_start BIGINT, n BIGINT) WITH ('connector'='file', 'path'='` + filepath.Join(dir, "out") + `');
INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`
	body, _ := json.Marshal(map[string]any{"sql": text, "name": "api", "parallelism": 2})
	var sub SubmitResponse
	if code := httpJSON(t, "POST", base+"/api/v1/jobs", "s3cret", bytes.NewReader(body), &sub); code != http.StatusAccepted {
		t.Fatalf("submit: %d", code)
	}
	d := tc.wait(t, string(sub.Job), time.Minute)
	var got JobDetail
	httpJSON(t, "GET", base+"/api/v1/jobs/"+string(sub.Job), "s3cret", nil, &got)
	if got.State != StateFinished || got.Guarantee != "EXACTLY_ONCE" || len(got.Tasks) != 2 || got.Latest == nil || got.Latest.Kind != "final" {
		t.Fatalf("detail %+v (wait saw %+v)", got, d)
	}
	var ck struct {
		Counts  map[string]int `json:"counts"`
		History []ckRecord     `json:"history"`
	}
	httpJSON(t, "GET", base+"/api/v1/jobs/"+string(sub.Job)+"/checkpoints", "s3cret", nil, &ck)
	if ck.Counts["completed"] < 1 || len(ck.History) == 0 {
		t.Fatalf("checkpoints %+v", ck)
	}
	var list struct{ Jobs []JobSummary }
	httpJSON(t, "GET", base+"/api/v1/jobs", "s3cret", nil, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != sub.Job {
		t.Fatalf("jobs %+v", list)
	}
	if code := httpJSON(t, "GET", base+"/api/v1/jobs/99", "s3cret", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown job: %d", code)
	}
	// Bad SQL is refused with its line and column.
	body, _ = json.Marshal(map[string]any{"sql": "SELEC 1"})
	var errs struct{ Errors []string }
	if code := httpJSON(t, "POST", base+"/api/v1/jobs", "s3cret", bytes.NewReader(body), &errs); code != http.StatusBadRequest || len(errs.Errors) == 0 || !strings.Contains(errs.Errors[0], "1:1") {
		t.Fatalf("bad SQL: %d %+v", code, errs)
	}
}
