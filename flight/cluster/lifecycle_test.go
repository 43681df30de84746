package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/kafka"
)

// waitLog polls the cluster log for a line.
func (tc *testCluster) waitLog(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(tc.log.String(), want) {
			return
		}
	}
	t.Fatalf("no %q in the log within %s", want, timeout)
}

// TestWorkerLostByHeartbeat: a Worker that stops beating is lost after
// three missed beats, though nothing called it.
func TestWorkerLostByHeartbeat(t *testing.T) {
	tc := startCluster(t, 2, 1, CoordinatorConfig{Heartbeat: 50 * time.Millisecond})
	start := time.Now()
	tc.workers[1].vanish = true
	tc.stop[1]()
	tc.waitLog(t, "worker lost: w2 (no heartbeat for", 5*time.Second)
	// Three beats (150 ms) after the last one, which was at most one beat
	// before the stop.
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("lost after %s, before three missed beats", el)
	}
	tc.c.mu.Lock()
	_, ok := tc.c.workers["w2"]
	tc.c.mu.Unlock()
	if ok {
		t.Error("w2 still registered")
	}
}

// TestPermanentFailure: a job that fails at every attempt (a malformed
// record, on_error fail) is FAILED after MaxRestarts, with the reason
// (file, line) in its detail.
func TestPermanentFailure(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\",\"v\":1}\n{\"k\":\"b\",\"v\":\n"), 0o644)
	tc := startCluster(t, 1, 1, CoordinatorConfig{MaxRestarts: 2, RestartDelay: 10 * time.Millisecond})
	plan := compile(t, `CREATE TABLE t (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+in+`');
CREATE TABLE o (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+filepath.Join(dir, "out")+`', 'delivery_guarantee'='at_least_once');
INSERT INTO o SELECT k, v FROM t`)
	data, _ := proto.Marshal(plan)
	resp, err := tc.c.Submit(&SubmitRequest{Name: "bad", Plan: data})
	if err != nil {
		t.Fatal(err)
	}
	d := tc.wait(t, string(resp.Job), 30*time.Second)
	if d.State != StateFailed || d.Restarts != 2 || d.ErrorCount != 3 || !strings.Contains(d.Failure, "in.jsonl:2: invalid JSON") {
		t.Fatalf("detail %+v", d)
	}
	for _, want := range []string{"job_id=1 awaiting_restart (attempt 1/2)", "job_id=1 awaiting_restart (attempt 2/2)", "job_id=1 failed after 2 restarts"} {
		if !strings.Contains(tc.log.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// streamingJob is a Kafka-to-file job that runs until stopped.
func streamingJob(t *testing.T, dir string, rows int) (*kafka.Broker, []byte) {
	t.Helper()
	b, err := kafka.StartBroker(kafka.BrokerConfig{Topics: []kafka.TopicSpec{{Name: "in", Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range rows {
		cl.Produce(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint(i % 5)), Value: fmt.Appendf(nil, `{"k":"k%d","ts":%d}`, i%5, i*100)}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	plan := compile(t, `CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector'='kafka', 'brokers'='`+b.Addr()+`', 'topic'='in', 'event_time_column'='ts');
CREATE TABLE o (k STRING, window_start BIGINT, n BIGINT) WITH ('connector'='file', 'path'='`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`)
	data, err := proto.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return b, data
}

// TestStopWithSavepoint: stop takes a savepoint the sinks publish, the job
// ends FINISHED, and the same job submitted again resumes from it; cancel
// ends a job CANCELED.
func TestStopWithSavepoint(t *testing.T) {
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 1000)
	tc := startCluster(t, 2, 1, CoordinatorConfig{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 50 * time.Millisecond})
	resp, err := tc.c.Submit(&SubmitRequest{Name: "stream", Plan: plan, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, _ := tc.c.Job(string(resp.Job)); d.Latest != nil && d.Latest.ID >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint 2:\n%s", tc.log.String())
		}
	}
	// The operators' counters arrive with the heartbeats.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var ops struct{ Operators []Operator }
		httpJSON(t, "GET", "http://"+tc.c.HTTPAddr()+"/api/v1/jobs/"+string(resp.Job)+"/operators", "", nil, &ops)
		var in, wms int64
		names := map[string]bool{}
		for _, o := range ops.Operators {
			names[o.Name] = true
			if o.Name == "window_aggregate" {
				in += o.RecordsIn
				if o.Watermark != nil {
					wms++
				}
			}
		}
		if in == 1000 && wms == 2 && names["source_t"] && names["sink_o"] && names["sink_exchange"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operators: %+v", ops.Operators)
		}
	}
	path, err := tc.c.StopWithSavepoint(string(resp.Job))
	if err != nil {
		t.Fatal(err)
	}
	d := tc.wait(t, string(resp.Job), 10*time.Second)
	if d.State != StateFinished || d.Savepoint != path {
		t.Fatalf("after stop: %+v", d)
	}
	// The savepoint is a copy, in its own directory, of the job's newest
	// checkpoint.
	if want := filepath.Join(dir, "ck", "savepoints", "savepoint-stream-"); !strings.HasPrefix(path, want) {
		t.Fatalf("savepoint %s, want %s<id>", path, want)
	}
	store, err := checkpoint.NewStore(filepath.Join(dir, "ck", "stream"), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok, err := store.Latest()
	if err != nil || !ok || path != filepath.Join(dir, "ck", "savepoints", fmt.Sprintf("savepoint-stream-%d", id)) {
		t.Fatalf("newest checkpoint %d %v %v, savepoint %s", id, ok, err, path)
	}
	cp, err := checkpoint.OpenDir(path)
	if err != nil || cp.ID != id {
		t.Fatalf("savepoint %s: %v %v", path, cp, err)
	}
	if cp.Manifest.Properties["kind"] != "savepoint" {
		t.Errorf("manifest properties %v", cp.Manifest.Properties)
	}
	// Resubmitted, the job resumes from the savepoint.
	resp2, err := tc.c.Submit(&SubmitRequest{Name: "stream", Plan: plan, Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if resp2.RestorePoint != id {
		t.Fatalf("restore point %d, savepoint %d", resp2.RestorePoint, id)
	}
	tc.waitLog(t, fmt.Sprintf("job_id=2 restore point: checkpoint %d", id), 10*time.Second)
	for {
		if d, _ := tc.c.Job(string(resp2.Job)); d.State == StateRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tc.c.Cancel(string(resp2.Job)); err != nil {
		t.Fatal(err)
	}
	if d := tc.wait(t, string(resp2.Job), 10*time.Second); d.State != StateCanceled {
		t.Fatalf("after cancel: %+v", d)
	}
	if err := tc.c.Cancel(string(resp2.Job)); err == nil || !strings.Contains(err.Error(), "CANCELED") {
		t.Fatalf("cancel of a cancelled job: %v", err)
	}
	// Both jobs released their slots.
	tc.c.mu.Lock()
	for _, w := range tc.c.workers {
		if w.used != 0 {
			t.Errorf("%s: %d slots used", w.id, w.used)
		}
	}
	tc.c.mu.Unlock()
}

// TestWaitForCapacity: a job needing more slots than the Workers have
// waits, and runs once a Worker joins.
func TestWaitForCapacity(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\"}\n{\"k\":\"b\"}\n"), 0o644)
	tc := startCluster(t, 1, 1, CoordinatorConfig{})
	plan := compile(t, `CREATE TABLE t (k STRING) WITH ('connector'='file', 'path'='`+in+`');
SELECT k, COUNT(*) FROM t GROUP BY k`)
	data, _ := proto.Marshal(plan)
	resp, err := tc.c.Submit(&SubmitRequest{Name: "wide", Plan: data, Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	tc.waitLog(t, "job_id=1 waiting for capacity: 3 slots needed, 1 free", 5*time.Second)
	if d, _ := tc.c.Job(string(resp.Job)); d.State != StateCreated {
		t.Fatalf("state %s", d.State)
	}
	tc.addWorker(t, "w2", 2)
	if d := tc.wait(t, string(resp.Job), 20*time.Second); d.State != StateFinished {
		t.Fatalf("%+v", d)
	}
}

// TestWorkerShutdownIsAFailure: a Worker that shuts down (SIGTERM) under a
// running job reports a failure, not a finished attempt: the job restarts
// (here without checkpoints, from the beginning) instead of ending
// FINISHED.
func TestWorkerShutdownIsAFailure(t *testing.T) {
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 100)
	tc := startCluster(t, 2, 1, CoordinatorConfig{RestartDelay: 10 * time.Millisecond})
	resp, err := tc.c.Submit(&SubmitRequest{Name: "stream", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if d, _ := tc.c.Job(string(resp.Job)); d.State == StateRunning {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	d, _ := tc.c.Job(string(resp.Job))
	lost := d.Tasks[0].Worker
	for i, w := range tc.workers {
		if w.ID() == lost {
			tc.stop[i]()
		}
	}
	tc.waitLog(t, "stopped before its subtasks finished", 10*time.Second)
	tc.waitLog(t, "worker lost: "+lost+" (shut down)", 10*time.Second)
	// The Worker reports its attempt failed before it leaves, so a restart
	// may still land on it (and fail) before it is gone: the job runs again
	// on the other Worker after one restart or more.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		d, _ := tc.c.Job(string(resp.Job))
		if d.State == StateRunning && d.Restarts >= 1 && d.Tasks[0].Worker != lost {
			break
		}
		if terminal(d.State) || time.Now().After(deadline) {
			t.Fatalf("after the Worker's shutdown: %+v", d)
		}
	}
}
