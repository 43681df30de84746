package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/lineage/lineagetest"
)

// TestLineageWorkerLost: on the cluster every attempt is a run. The
// first attempt's START and RUNNING (checkpoints), then its Worker is
// lost: FAIL with the reason, and the restarted attempt is a new run
// (START, another run id, the same parent); a cancel ends it with ABORT.
// Every event validates against the OpenLineage schema.
func TestLineageWorkerLost(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	lc := lineage.New(lineage.Config{URL: r.URL, Namespace: "cluster", RunningInterval: time.Nanosecond})
	dir := t.TempDir()
	b, plan := streamingJob(t, dir, 100)
	tc := startCluster(t, 2, 1, CoordinatorConfig{Heartbeat: 50 * time.Millisecond, RestartDelay: 10 * time.Millisecond,
		CheckpointDir: t.TempDir(), CheckpointInterval: 100 * time.Millisecond, Lineage: lc})
	resp, err := tc.c.Submit(&SubmitRequest{Name: "stream", Plan: plan, SQL: "INSERT INTO o SELECT ..."})
	if err != nil {
		t.Fatal(err)
	}
	count := func(evs []lineage.Event, typ string) int {
		n := 0
		for _, e := range evs {
			if e.EventType == typ {
				n++
			}
		}
		return n
	}
	r.Wait(t, 30*time.Second, "START and RUNNING", func(evs []lineage.Event) bool { return count(evs, lineage.Running) >= 1 })
	d, _ := tc.c.Job(string(resp.Job))
	lost := d.Tasks[0].Worker
	for i, w := range tc.workers {
		if w.ID() == lost {
			w.vanish = true
			tc.stop[i]()
		}
	}
	evs := r.Wait(t, 30*time.Second, "FAIL and a second START", func(evs []lineage.Event) bool {
		return count(evs, lineage.Fail) >= 1 && count(evs, lineage.Start) >= 2
	})
	if err := tc.c.Cancel(string(resp.Job)); err != nil {
		t.Fatal(err)
	}
	tc.wait(t, string(resp.Job), 30*time.Second)
	lc.Close(10 * time.Second)
	r.Check(t, true)
	evs = r.Events()
	t.Logf("events: %s", lineagetest.Summary(evs))
	ids, runs := lineagetest.Runs(evs)
	if len(ids) < 2 {
		t.Fatalf("runs %v: %s", ids, lineagetest.Summary(evs))
	}
	first, last := runs[ids[0]], runs[ids[len(ids)-1]]
	if end := first[len(first)-1]; end.EventType != lineage.Fail {
		t.Errorf("first attempt ends %s", end.EventType)
	} else if msg, _ := end.Run.Facets["errorMessage"].(map[string]any)["message"].(string); msg == "" {
		t.Errorf("FAIL without an error message: %v", end.Run.Facets)
	}
	if last[0].EventType != lineage.Start || last[len(last)-1].EventType != lineage.Abort {
		t.Errorf("last attempt: %s", lineagetest.Summary(last))
	}
	parent := func(e lineage.Event) any {
		return e.Run.Facets["parent"].(map[string]any)["run"].(map[string]any)["runId"]
	}
	if parent(first[0]) != parent(last[0]) {
		t.Errorf("attempts with different parents: %v %v", parent(first[0]), parent(last[0]))
	}
	e := first[0]
	if e.Job.Namespace != "cluster" || e.Job.Name != "stream" || len(e.Inputs) != 1 || e.Inputs[0].Namespace != "kafka://"+b.Addr() || e.Inputs[0].Name != "in" {
		t.Errorf("job %s/%s inputs %+v", e.Job.Namespace, e.Job.Name, e.Inputs)
	}
	if len(e.Outputs) != 1 || e.Outputs[0].Namespace != "file" {
		t.Errorf("outputs %+v", e.Outputs)
	}
}

// TestLineageStopAndFinish: a stop with savepoint ends the run with
// ABORT (the input did not end), and a bounded job's run with COMPLETE.
func TestLineageStopAndFinish(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	lc := lineage.New(lineage.Config{URL: r.URL})
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 100)
	tc := startCluster(t, 1, 2, CoordinatorConfig{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 50 * time.Millisecond, Lineage: lc})
	resp, err := tc.c.Submit(&SubmitRequest{Name: "stream", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, _ := tc.c.Job(string(resp.Job)); d.Latest != nil && d.Latest.ID >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint")
		}
	}
	if _, err := tc.c.StopWithSavepoint(string(resp.Job)); err != nil {
		t.Fatal(err)
	}
	tc.wait(t, string(resp.Job), 30*time.Second)

	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\",\"v\":1}\n"), 0o644)
	bounded := compile(t, `CREATE TABLE t (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+in+`');
CREATE TABLE o2 (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+filepath.Join(dir, "out2")+`');
INSERT INTO o2 SELECT k, v FROM t`)
	data, err := proto.Marshal(bounded)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = tc.c.Submit(&SubmitRequest{Name: "bounded", Plan: data})
	if err != nil {
		t.Fatal(err)
	}
	if d := tc.wait(t, string(resp.Job), 30*time.Second); d.State != StateFinished {
		t.Fatalf("bounded job %s", d.State)
	}
	lc.Close(10 * time.Second)
	r.Check(t, true)
	var got []string
	for _, e := range r.Events() {
		got = append(got, e.Job.Name+":"+e.EventType)
	}
	if s := strings.Join(got, " "); s != "stream:START stream:ABORT bounded:START bounded:COMPLETE" {
		t.Errorf("events %s", s)
	}
}
