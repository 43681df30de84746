package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
	cflight "github.com/clink-dev/clink/flight"
)

// The controller tests run a Coordinator against fake Workers: endpoints
// that record the Coordinator's calls and run nothing. The test plays the
// Workers' side (acks, finished, done) and so picks the order of events.

// fakeWorker is one fake Worker.
type fakeWorker struct {
	id    string
	calls map[string]chan fakeCall // by action
}

// fakeCall is one call the Coordinator made.
type fakeCall struct {
	ref     attemptRef
	id      uint64 // trigger, complete
	final   bool   // trigger
	restore uint64 // deploy: the checkpoint to restore
}

type fakeCluster struct {
	c   *Coordinator
	log *syncBuf
	dir string
}

func startFake(t *testing.T, cfg CoordinatorConfig) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{log: &syncBuf{}, dir: t.TempDir()}
	cfg.FlightAddr, cfg.HTTPAddr, cfg.Log, cfg.Connectors = "127.0.0.1:0", "off", fc.log, builtin.Registry()
	if cfg.CheckpointDir == "ck" {
		cfg.CheckpointDir = filepath.Join(fc.dir, "ck")
	}
	c, err := NewCoordinator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fc.c = c
	t.Cleanup(func() {
		c.mu.Lock()
		ids := slices.Clone(c.order)
		c.mu.Unlock()
		for _, id := range ids {
			c.Cancel(id) // let no job's controller outlive the test
		}
		c.srv.Shutdown()
		if t.Failed() {
			t.Logf("coordinator log:\n%s", fc.log.String())
		}
	})
	return fc
}

// add registers a fake Worker with slots.
func (fc *fakeCluster) add(t *testing.T, id string, slots int) *fakeWorker {
	t.Helper()
	srv, err := cflight.NewServer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeWorker{id: id, calls: map[string]chan fakeCall{}}
	for _, a := range []string{actDeploy, actTrigger, actComplete, actCancel} {
		f.calls[a] = make(chan fakeCall, 256)
	}
	handle(srv, actDeploy, func(_ context.Context, r *deployReq) (any, error) {
		fc := fakeCall{ref: r.attemptRef}
		if r.Checkpoints != nil {
			fc.restore = r.Checkpoints.Restore
		}
		f.calls[actDeploy] <- fc
		return nil, nil
	})
	handle(srv, actTrigger, func(_ context.Context, r *triggerReq) (any, error) {
		f.calls[actTrigger] <- fakeCall{ref: r.attemptRef, id: r.ID, final: r.Final}
		return nil, nil
	})
	handle(srv, actComplete, func(_ context.Context, r *triggerReq) (any, error) {
		f.calls[actComplete] <- fakeCall{ref: r.attemptRef, id: r.ID}
		return nil, nil
	})
	handle(srv, actCancel, func(_ context.Context, r *attemptRef) (any, error) {
		f.calls[actCancel] <- fakeCall{ref: *r}
		return nil, nil
	})
	go srv.Serve()
	t.Cleanup(srv.Shutdown)
	cl, err := cflight.Dial(srv.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	fc.c.mu.Lock()
	fc.c.workers[id] = &workerInfo{id: id, addr: srv.Addr(), slots: slots, lastBeat: time.Now(), cl: cl}
	fc.c.capacityChangedLocked()
	fc.c.mu.Unlock()
	return f
}

// expect waits for the Coordinator's next call of action.
func (f *fakeWorker) expect(t *testing.T, action string) fakeCall {
	t.Helper()
	select {
	case fc := <-f.calls[action]:
		return fc
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no %s call", f.id, action)
		return fakeCall{}
	}
}

// submit submits a file-to-file job at parallelism par.
func (fc *fakeCluster) submit(t *testing.T, par int) string {
	t.Helper()
	return string(fc.submitReq(t, &SubmitRequest{Parallelism: par}).Job)
}

// submitReq submits the file-to-file job with r's options.
func (fc *fakeCluster) submitReq(t *testing.T, r *SubmitRequest) *SubmitResponse {
	t.Helper()
	in := filepath.Join(fc.dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\",\"v\":1}\n"), 0o644)
	plan := compile(t, `CREATE TABLE t (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+in+`');
CREATE TABLE o (k STRING, v BIGINT) WITH ('connector'='file', 'path'='`+filepath.Join(fc.dir, "out")+`');
INSERT INTO o SELECT k, v FROM t`)
	data, err := proto.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	r.Name, r.Plan = "fake", data
	resp, err := fc.c.Submit(r)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// event hands the job an event of attempt ref, as a Worker's call would.
func (fc *fakeCluster) event(t *testing.T, ref attemptRef, ev event) {
	t.Helper()
	if err := fc.c.send(ref, ev); err != nil {
		t.Fatal(err)
	}
}

// stop asks for stop with savepoint; the answer arrives on the channel.
// (Sent from the test's goroutine, it is ordered with the test's events.)
func (fc *fakeCluster) stop(id string) chan stopResult {
	fc.c.mu.Lock()
	j := fc.c.jobs[id]
	fc.c.mu.Unlock()
	reply := make(chan stopResult, 1)
	j.events <- event{kind: evStop, reply: reply}
	return reply
}

func (fc *fakeCluster) waitState(t *testing.T, id, state string) JobDetail {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		d, _ := fc.c.Job(id)
		if d.State == state {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s, not %s", id, d.State, state)
		}
	}
}

// waitCompleted waits until job id's newest completed checkpoint is ck (or
// newer), as the API says.
func (fc *fakeCluster) waitCompleted(t *testing.T, id string, ck uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if d, _ := fc.c.Job(id); d.Latest != nil && d.Latest.ID >= ck {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: checkpoint %d did not complete", id, ck)
		}
	}
}

func (fc *fakeCluster) waitLog(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if strings.Contains(fc.log.String(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log", want)
		}
	}
}

func answer(t *testing.T, reply chan stopResult) stopResult {
	t.Helper()
	select {
	case r := <-reply:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		return stopResult{}
	}
}

func (fc *fakeCluster) history(id string) []ckRecord {
	fc.c.mu.Lock()
	defer fc.c.mu.Unlock()
	return slices.Clone(fc.c.jobs[id].history)
}

func (fc *fakeCluster) slotsUsed() int {
	fc.c.mu.Lock()
	defer fc.c.mu.Unlock()
	n := 0
	for _, w := range fc.c.workers {
		n += w.used
	}
	return n
}

// TestControllerStopDuringCheckpoint: running -> checkpointing -> stopping
// -> finished. A stop while a checkpoint is in flight takes its savepoint
// after that checkpoint; a second stop is refused; the job is FINISHED once
// the Workers published the savepoint, and the savepoint is the newest
// checkpoint.
func TestControllerStopDuringCheckpoint(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 10 * time.Millisecond})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	ref := w.expect(t, actDeploy).ref
	fc.waitState(t, id, StateRunning)
	ck := w.expect(t, actTrigger)
	reply := fc.stop(id)
	fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
	if c := w.expect(t, actComplete); c.id != ck.id {
		t.Fatalf("complete %d, checkpoint %d", c.id, ck.id)
	}
	sp := w.expect(t, actTrigger)
	if sp.id != ck.id+1 || sp.final {
		t.Fatalf("savepoint trigger %+v after checkpoint %d", sp, ck.id)
	}
	if r := answer(t, fc.stop(id)); r.err == nil || !strings.Contains(r.err.Error(), "already stopping") {
		t.Fatalf("second stop: %v", r.err)
	}
	fc.event(t, ref, event{kind: evAck, worker: "f1", id: sp.id})
	r := answer(t, reply)
	fc.c.mu.Lock()
	want := filepath.Join(fc.c.jobs[id].spDir, "savepoint-fake-"+strconv.FormatUint(sp.id, 10))
	fc.c.mu.Unlock()
	if r.err != nil || r.path != want {
		t.Fatalf("stop: %+v, savepoint %d", r, sp.id)
	}
	w.expect(t, actCancel)
	d := fc.waitState(t, id, StateFinished)
	if d.Savepoint != r.path || d.Latest == nil || d.Latest.ID != sp.id || d.Latest.Kind != "savepoint" {
		t.Fatalf("detail %+v", d)
	}
	h := fc.history(id)
	if len(h) != 2 || h[0].Kind != "checkpoint" || h[0].Status != "COMPLETED" || h[1].Kind != "savepoint" {
		t.Fatalf("history %+v", h)
	}
	if n := fc.slotsUsed(); n != 0 {
		t.Errorf("%d slots used", n)
	}
}

// TestControllerCancelDuringCheckpoint: checkpointing -> canceled; the
// checkpoint in flight is recorded FAILED.
func TestControllerCancelDuringCheckpoint(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 10 * time.Millisecond})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	w.expect(t, actDeploy)
	ck := w.expect(t, actTrigger)
	if err := fc.c.Cancel(id); err != nil {
		t.Fatal(err)
	}
	w.expect(t, actCancel)
	fc.waitState(t, id, StateCanceled)
	h := fc.history(id)
	if len(h) != 1 || h[0].ID != ck.id || h[0].Status != "FAILED" || h[0].Reason != "job cancelled" {
		t.Fatalf("history %+v", h)
	}
	if n := fc.slotsUsed(); n != 0 {
		t.Errorf("%d slots used", n)
	}
}

// TestControllerCancelWhileStopping: a cancel while a stop with savepoint
// waits for its savepoint ends the job CANCELED and answers the stop (it
// used to wait forever).
func TestControllerCancelWhileStopping(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: time.Hour})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	w.expect(t, actDeploy)
	fc.waitState(t, id, StateRunning)
	reply := fc.stop(id)
	if sp := w.expect(t, actTrigger); sp.final {
		t.Fatalf("savepoint trigger %+v", sp)
	}
	if err := fc.c.Cancel(id); err != nil {
		t.Fatal(err)
	}
	if r := answer(t, reply); r.err == nil || !strings.Contains(r.err.Error(), "cancelled before its savepoint") {
		t.Fatalf("stop: %+v", r)
	}
	fc.waitState(t, id, StateCanceled)
	if h := fc.history(id); len(h) != 1 || h[0].Kind != "savepoint" || h[0].Status != "FAILED" {
		t.Fatalf("history %+v", h)
	}
}

// TestControllerFinalCheckpoint: every subtask finishes while a checkpoint
// is in flight; the final checkpoint follows it (checkpointing stays
// checkpointing), then running waits for the Workers' ends: FINISHED with
// their counts. A stop after the subtasks finished is refused.
func TestControllerFinalCheckpoint(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 10 * time.Millisecond})
	w1, w2 := fc.add(t, "f1", 1), fc.add(t, "f2", 1)
	id := fc.submit(t, 2)
	ref := w1.expect(t, actDeploy).ref
	w2.expect(t, actDeploy)
	ck := w1.expect(t, actTrigger)
	w2.expect(t, actTrigger)
	fc.event(t, ref, event{kind: evFinished, worker: "f1"})
	fc.event(t, ref, event{kind: evFinished, worker: "f2"})
	if r := answer(t, fc.stop(id)); r.err == nil || !strings.Contains(r.err.Error(), "already stopping or finishing") {
		t.Fatalf("stop of a finishing job: %v", r.err)
	}
	fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
	fc.event(t, ref, event{kind: evAck, worker: "f2", id: ck.id})
	fin := w1.expect(t, actTrigger)
	if !fin.final || fin.id != ck.id+1 {
		t.Fatalf("final trigger %+v after %d", fin, ck.id)
	}
	fc.event(t, ref, event{kind: evAck, worker: "f1", id: fin.id})
	fc.event(t, ref, event{kind: evAck, worker: "f2", id: fin.id})
	fc.waitCompleted(t, id, fin.id)
	fc.event(t, ref, event{kind: evDone, worker: "f1", late: 3})
	fc.event(t, ref, event{kind: evDone, worker: "f2", skipped: 2})
	d := fc.waitState(t, id, StateFinished)
	if d.Latest == nil || d.Latest.Kind != "final" || d.LateDropped != 3 || d.RecordsSkipped != 2 {
		t.Fatalf("detail %+v", d)
	}
	select {
	case c := <-w1.calls[actTrigger]:
		t.Errorf("a checkpoint after the final one: %+v", c)
	default:
	}
}

// TestControllerRestartAfterLoss: a lost Worker fails the attempt
// (restarting), the restart waits for capacity (scheduling), and the next
// attempt restores the newest completed checkpoint; events of the old
// attempt are dropped.
func TestControllerRestartAfterLoss(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 100 * time.Millisecond, RestartDelay: time.Millisecond})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	ref := w.expect(t, actDeploy).ref
	ck := w.expect(t, actTrigger)
	fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
	fc.waitCompleted(t, id, ck.id)
	fc.c.mu.Lock()
	fc.c.loseLocked(fc.c.workers["f1"], "test")
	fc.c.mu.Unlock()
	fc.waitLog(t, "worker lost: f1 (test)")
	fc.waitLog(t, "job_id="+id+" awaiting_restart (attempt 1/10): ")
	fc.waitLog(t, "job_id="+id+" restart waiting for capacity: 1 slots needed, 0 free")
	// The reason is the loss, or a call to f1 that was in flight (its
	// client is closed with it).
	if d := fc.waitState(t, id, StateRestarting); (d.Failure != "worker lost: f1" && !strings.Contains(d.Failure, " on f1: ")) || d.Restarts != 1 || d.ErrorCount != 1 {
		t.Fatalf("detail %+v", d)
	}
	w2 := fc.add(t, "f2", 1)
	dep := w2.expect(t, actDeploy)
	if dep.ref.Attempt != 2 || dep.restore != ck.id {
		t.Fatalf("second deploy %+v, checkpoint %d", dep, ck.id)
	}
	fc.waitLog(t, "job_id="+id+" restore point: checkpoint "+itoa(ck.id))
	fc.waitState(t, id, StateRunning)
	// The first attempt's late failure changes nothing.
	fc.event(t, ref, event{kind: evDone, worker: "f1", err: "late"})
	fc.event(t, ref, event{kind: evLost, worker: "f1", err: "late"})
	ck2 := w2.expect(t, actTrigger)
	if ck2.ref.Attempt != 2 || ck2.id <= ck.id {
		t.Fatalf("trigger %+v", ck2)
	}
	d := fc.waitState(t, id, StateRunning)
	if d.Attempt != 2 || d.Restarts != 1 || !slices.Equal(d.RestoredFrom, []uint64{ck.id}) {
		t.Fatalf("detail %+v", d)
	}
}

// TestControllerCheckpointExpires: a checkpoint older than the timeout
// fails the attempt; with MaxRestarts 1 the second expiry fails the job.
func TestControllerCheckpointExpires(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 10 * time.Millisecond, CheckpointTimeout: time.Millisecond,
		MaxRestarts: 1, RestartDelay: time.Millisecond})
	w := fc.add(t, "f1", 1)
	id := fc.submit(t, 1)
	w.expect(t, actDeploy)
	ck := w.expect(t, actTrigger)
	fc.waitLog(t, "job_id="+id+" checkpoint "+itoa(ck.id)+" expired after 1ms")
	fc.waitLog(t, "job_id="+id+" awaiting_restart (attempt 1/1): checkpoint "+itoa(ck.id)+" expired")
	if c := w.expect(t, actCancel); c.ref.Attempt != 1 {
		t.Fatalf("cancel %+v", c)
	}
	if dep := w.expect(t, actDeploy); dep.ref.Attempt != 2 || dep.restore != 0 {
		t.Fatalf("second deploy %+v", dep)
	}
	fc.waitLog(t, "job_id="+id+" starting fresh (no checkpoint to restore)")
	ck2 := w.expect(t, actTrigger)
	d := fc.waitState(t, id, StateFailed)
	if want := "checkpoint " + itoa(ck2.id) + " expired"; d.Failure != want || d.Restarts != 1 || d.ErrorCount != 2 {
		t.Fatalf("detail %+v, want failure %q", d, want)
	}
	fc.waitLog(t, "job_id="+id+" failed after 1 restarts: checkpoint "+itoa(ck2.id)+" expired")
	h := fc.history(id)
	if len(h) != 2 || h[0].Status != "FAILED" || h[0].Reason != "attempt failed: checkpoint "+itoa(ck.id)+" expired" {
		t.Fatalf("history %+v", h)
	}
	if n := fc.slotsUsed(); n != 0 {
		t.Errorf("%d slots used", n)
	}
}

// TestControllerWithoutCheckpoints: a job without a checkpoint directory
// refuses stop with savepoint and is FINISHED once every Worker is done;
// a failed subtask restarts it.
func TestControllerWithoutCheckpoints(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{RestartDelay: time.Millisecond})
	w := fc.add(t, "f1", 2)
	id := fc.submit(t, 2)
	ref := w.expect(t, actDeploy).ref
	fc.waitState(t, id, StateRunning)
	if r := answer(t, fc.stop(id)); r.err == nil || !strings.Contains(r.err.Error(), "takes no checkpoints") {
		t.Fatalf("stop: %v", r.err)
	}
	fc.event(t, ref, event{kind: evDone, worker: "f1", err: "boom"})
	fc.waitLog(t, "job_id="+id+" awaiting_restart (attempt 1/10): f1: boom")
	ref = w.expect(t, actDeploy).ref
	if ref.Attempt != 2 {
		t.Fatalf("deploy %+v", ref)
	}
	fc.waitState(t, id, StateRunning)
	fc.event(t, ref, event{kind: evFinished, worker: "f1"})
	fc.event(t, ref, event{kind: evDone, worker: "f1"})
	if d := fc.waitState(t, id, StateFinished); d.Restarts != 1 || d.Latest != nil {
		t.Fatalf("detail %+v", d)
	}
}

// TestControllerCancelWaitingForCapacity: scheduling -> canceled.
func TestControllerCancelWaitingForCapacity(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{})
	fc.add(t, "f1", 1)
	id := fc.submit(t, 2)
	fc.waitLog(t, "job_id="+id+" waiting for capacity: 2 slots needed, 1 free")
	if err := fc.c.Cancel(id); err == nil || !strings.Contains(err.Error(), "was not running") {
		t.Fatalf("cancel: %v", err)
	}
	fc.waitState(t, id, StateCanceled)
}

// TestTransitions: every phase but the ends has a step, and every end is
// reachable.
func TestTransitions(t *testing.T) {
	reached := map[phase]bool{}
	for from, tos := range transitions {
		if !from.live() && from != phaseRestarting {
			t.Errorf("transitions from the end %s", from)
		}
		for _, to := range tos {
			reached[to] = true
		}
	}
	for p := phaseScheduling; p <= phaseFailed; p++ {
		if !reached[p] {
			t.Errorf("%s is never reached", p)
		}
	}
}

func itoa(id uint64) string { return strconv.FormatUint(id, 10) }

// TestControllerFreshAndFrom: the first attempt restores what the
// submission asked for (fresh: nothing; from_checkpoint: that one), as its
// answer said; a restart restores the newest checkpoint the job completed,
// else the first attempt's restore point again (never a newer checkpoint
// that fresh or from_checkpoint passed over).
func TestControllerFreshAndFrom(t *testing.T) {
	fc := startFake(t, CoordinatorConfig{CheckpointDir: "ck", CheckpointInterval: 10 * time.Millisecond, RestartDelay: time.Millisecond})
	w := fc.add(t, "f1", 1)
	// checkpoint completes the attempt's next checkpoint.
	checkpoint := func(ref attemptRef) uint64 {
		t.Helper()
		for {
			ck := w.expect(t, actTrigger)
			if ck.ref != ref {
				continue // a failed attempt's
			}
			fc.event(t, ref, event{kind: evAck, worker: "f1", id: ck.id})
			fc.waitCompleted(t, ref.Job, ck.id)
			return ck.id
		}
	}
	// restart fails the attempt and returns the next one's deployment.
	restart := func(ref attemptRef) fakeCall {
		t.Helper()
		fc.event(t, ref, event{kind: evDone, worker: "f1", err: "boom"})
		dep := w.expect(t, actDeploy)
		if dep.ref.Attempt != ref.Attempt+1 {
			t.Fatalf("deploy %+v after attempt %d", dep, ref.Attempt)
		}
		return dep
	}
	id := fc.submit(t, 1)
	ref := w.expect(t, actDeploy).ref
	a := checkpoint(ref)
	b := checkpoint(ref)
	fc.c.Cancel(id)
	fc.waitState(t, id, StateCanceled)

	resp := fc.submitReq(t, &SubmitRequest{Parallelism: 1, Fresh: true})
	dep := w.expect(t, actDeploy)
	if resp.RestorePoint != 0 || dep.restore != 0 {
		t.Fatalf("fresh: answer %d, deploy restores %d (newest %d)", resp.RestorePoint, dep.restore, b)
	}
	if dep = restart(dep.ref); dep.restore != 0 {
		t.Fatalf("fresh, restart before a checkpoint: restores %d", dep.restore)
	}
	c := checkpoint(dep.ref)
	if dep = restart(dep.ref); dep.restore != c {
		t.Fatalf("fresh, restart after checkpoint %d: restores %d", c, dep.restore)
	}
	fc.c.Cancel(string(resp.Job))
	fc.waitState(t, string(resp.Job), StateCanceled)

	resp = fc.submitReq(t, &SubmitRequest{Parallelism: 1, FromCheckpoint: a})
	dep = w.expect(t, actDeploy)
	if resp.RestorePoint != a || dep.restore != a {
		t.Fatalf("from %d: answer %d, deploy restores %d", a, resp.RestorePoint, dep.restore)
	}
	if dep = restart(dep.ref); dep.restore != a {
		t.Fatalf("from %d, restart before a checkpoint: restores %d", a, dep.restore)
	}
	fc.waitLog(t, "job_id="+string(resp.Job)+" restore point: checkpoint "+itoa(a))
}
