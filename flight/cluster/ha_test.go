package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/builtin"
	cflight "github.com/clink-dev/clink/flight"
)

// TestLeaseExclusive: candidates racing for a free or lapsed lease: one
// wins each epoch; a holder renews; a replaced holder cannot.
func TestLeaseExclusive(t *testing.T) {
	dir := t.TempDir()
	ttl := 300 * time.Millisecond
	var mu sync.Mutex
	wins := map[uint64][]string{}
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 8 {
			l := &lease{dir: dir, id: string(rune('a' + i)), ttl: ttl}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec, ok, err := l.tryAcquire(0)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					wins[rec.Epoch] = append(wins[rec.Epoch], l.id)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(wins[uint64(round+1)]) != 1 {
			t.Fatalf("round %d: epoch %d won by %v", round, round+1, wins[uint64(round+1)])
		}
		time.Sleep(ttl + 50*time.Millisecond)
	}
	if len(wins) != 3 {
		t.Fatalf("epochs won: %v", wins)
	}
	holder := &lease{dir: dir, id: "h", ttl: ttl}
	rec, ok, err := holder.tryAcquire(0)
	if err != nil || !ok || rec.Epoch != 4 {
		t.Fatalf("after expiry: %+v %v %v", rec, ok, err)
	}
	if _, ok, _ := holder.tryAcquire(4); !ok {
		t.Fatal("the holder cannot renew")
	}
	other := &lease{dir: dir, id: "o", ttl: ttl}
	if _, ok, _ := other.tryAcquire(0); ok {
		t.Fatal("a live lease was taken")
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if rec, ok, _ := other.tryAcquire(0); !ok || rec.Epoch != 5 {
		t.Fatalf("lapsed lease not taken over: %+v", rec)
	}
	if rec, ok, _ := holder.tryAcquire(4); ok || rec.Holder != "o" {
		t.Fatalf("the replaced holder renewed: %+v", rec)
	}
}

// TestCheckpointFence: a store fenced with epoch 2 refuses the manifest of
// epoch 1; Fence never lowers the epoch.
func TestCheckpointFence(t *testing.T) {
	s, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(2); err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(1); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("Fence(1) after 2: %v", err)
	}
	w, _ := s.Begin(1)
	if err := w.Commit(checkpoint.Meta{Job: "j", Epoch: 1}); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("commit of epoch 1: %v", err)
	}
	if _, ok, _ := s.Latest(); ok {
		t.Fatal("a fenced commit completed a checkpoint")
	}
	w, _ = s.Begin(2)
	if err := w.Commit(checkpoint.Meta{Job: "j", Epoch: 2}); err != nil {
		t.Fatal(err)
	}
}

// haCluster is two HA Coordinators on one directory and Workers that know
// both.
type haCluster struct {
	dir     string
	coords  []*Coordinator
	stops   []func()
	workers []*Worker
	log     *syncBuf
}

func startHA(t *testing.T, dir string, workers int, fence time.Duration, cfg CoordinatorConfig) *haCluster {
	return startHAWith(t, dir, workers, fence, "", cfg)
}

func startHAWith(t *testing.T, dir string, workers int, fence time.Duration, httpAddr string, cfg CoordinatorConfig) *haCluster {
	t.Helper()
	hc := &haCluster{dir: dir, log: &syncBuf{}}
	cfg.HADir = filepath.Join(dir, "ha")
	cfg.FlightAddr = "127.0.0.1:0"
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "off"
	}
	cfg.LeaseTTL, cfg.LeaseRenew = time.Second, 100*time.Millisecond
	cfg.Connectors, cfg.Log = builtin.Registry(), hc.log
	var addrs []string
	for i := range 2 {
		cfg.HAID = []string{"c1", "c2"}[i]
		c, err := NewCoordinator(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		hc.coords = append(hc.coords, c)
		hc.stops = append(hc.stops, func() { cancel(); <-done })
		addrs = append(addrs, c.FlightAddr())
		if i == 0 {
			hc.waitLeader(t)
		}
	}
	var wstops []func()
	for i := range workers {
		w, err := NewWorker(WorkerConfig{ID: []string{"w1", "w2", "w3"}[i], Coordinators: addrs, HADir: cfg.HADir, Slots: 1,
			Connectors: builtin.Registry(), Stdout: &syncBuf{}, Log: hc.log, FenceTimeout: fence, HTTPAddr: httpAddr})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		hc.workers = append(hc.workers, w)
		wstops = append(wstops, func() { cancel(); <-done })
	}
	t.Cleanup(func() {
		for _, s := range wstops {
			s()
		}
		for _, s := range hc.stops {
			s()
		}
		if t.Failed() {
			t.Logf("cluster log:\n%s", hc.log.String())
		}
	})
	return hc
}

// waitLeader waits for a Coordinator to lead and returns its index.
func (hc *haCluster) waitLeader(t *testing.T) int {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, c := range hc.coords {
			if c.IsLeader() {
				return i
			}
		}
	}
	t.Fatal("no leader")
	return -1
}

func (hc *haCluster) waitLog(t *testing.T, want string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(hc.log.String(), want) {
			return
		}
	}
	t.Fatalf("no %q in the log within %s", want, timeout)
}

func waitCheckpoint(t *testing.T, c *Coordinator, id string, atLeast uint64) uint64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d, ok := c.Job(id); ok && d.Latest != nil && d.Latest.ID >= atLeast && d.State == StateRunning {
			return d.Latest.ID
		}
	}
	t.Fatalf("job %s: no checkpoint %d", id, atLeast)
	return 0
}

// TestHAFailover: the leader vanishes (as SIGKILL) under a running
// exactly-once job; the standby takes the lease with the next epoch,
// recovers the job under the same id from its newest checkpoint, the
// Workers follow it, and a new job gets the next id, never an old one.
// Every window is written once.
func TestHAFailover(t *testing.T) {
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 1000)
	hc := startHA(t, dir, 2, 4*time.Second, CoordinatorConfig{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 50 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	l := hc.waitLeader(t)
	c := hc.coords[l]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		n := len(c.workers)
		c.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Workers did not register with the leader")
		}
	}
	resp, err := c.Submit(&SubmitRequest{Name: "stream", Plan: plan, SQL: "-- the script\n", Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.coords[1-l].Submit(&SubmitRequest{Name: "other", Plan: plan}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a standby took a job: %v", err)
	}
	before := waitCheckpoint(t, c, string(resp.Job), 3)
	epoch := c.Epoch()
	c.ha.vanish = true
	killed := time.Now()
	hc.stops[l]()
	n := hc.coords[1-l]
	hc.waitLog(t, fmt.Sprintf("leadership acquired epoch=%d", epoch+1), 10*time.Second)
	if n.Epoch() != epoch+1 {
		t.Fatalf("new epoch %d, old %d", n.Epoch(), epoch)
	}
	hc.waitLog(t, "recovering job_id="+string(resp.Job)+" from checkpoint", 10*time.Second)
	after := waitCheckpoint(t, n, string(resp.Job), before+1)
	if d, _ := n.Job(string(resp.Job)); d.SQL != "-- the script\n" {
		t.Errorf("the recovered job's SQL: %q", d.SQL)
	}
	t.Logf("killed the leader at checkpoint %d; checkpoint %d on the new leader %s after the kill", before, after, time.Since(killed).Round(time.Millisecond))
	// Fenced: the old epoch can no longer complete a checkpoint in the
	// job's directory.
	store, _ := checkpoint.NewStore(filepath.Join(dir, "ck", "stream"), checkpoint.Options{})
	if err := store.CheckEpoch(epoch); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("old epoch not fenced: %v", err)
	}
	r2, err := n.Submit(&SubmitRequest{Name: "second", Plan: plan, Parallelism: 1, Fresh: true})
	if err == nil {
		if r2.Job == resp.Job {
			t.Fatalf("job id %s given out again", r2.Job)
		}
		n.Cancel(string(r2.Job))
	} else if !strings.Contains(err.Error(), "capacity") {
		t.Logf("second submit: %v", err)
	}
	if _, err := n.Stop(string(resp.Job), ""); err != nil {
		t.Fatal(err)
	}
	// Every window once, with its two rows per key, in the published
	// output.
	seen := map[string]int{}
	parts, _ := filepath.Glob(filepath.Join(dir, "out", "part-*.jsonl"))
	for _, p := range parts {
		b, _ := os.ReadFile(p)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var row struct {
				K  string `json:"k"`
				WS int64  `json:"window_start"`
				N  int64  `json:"n"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatalf("%s: %q: %v", p, line, err)
			}
			seen[row.K+"/"+time.Duration(row.WS*int64(time.Millisecond)).String()]++
			if row.N != 2 {
				t.Errorf("window %+v: n=%d, want 2", row, row.N)
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no output")
	}
	for k, v := range seen {
		if v != 1 {
			t.Errorf("window %s written %d times", k, v)
		}
	}
	t.Logf("%d windows, each once", len(seen))
}

// TestHAFencedLeader: the leader stops renewing (as SIGSTOP) until the
// standby took over, then resumes (SIGCONT): it steps down, and its epoch
// can neither deploy nor complete a checkpoint nor have a sink commit.
func TestHAFencedLeader(t *testing.T) {
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 1000)
	hc := startHA(t, dir, 2, 4*time.Second, CoordinatorConfig{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 50 * time.Millisecond, Heartbeat: 100 * time.Millisecond})
	l := hc.waitLeader(t)
	c, n := hc.coords[l], hc.coords[1-l]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		k := len(c.workers)
		c.mu.Unlock()
		if k == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Workers did not register with the leader")
		}
	}
	resp, err := c.Submit(&SubmitRequest{Name: "stream", Plan: plan, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitCheckpoint(t, c, string(resp.Job), 2)
	old := c.Epoch()
	c.mu.Lock()
	oldJob := c.jobs[string(resp.Job)]
	c.mu.Unlock()
	c.ha.mu.Lock()
	c.ha.paused = true
	c.ha.mu.Unlock()
	hc.waitLog(t, fmt.Sprintf("leadership acquired epoch=%d", old+1), 10*time.Second)
	waitCheckpoint(t, n, string(resp.Job), 1)
	// Before it notices: no longer leading, by its own clock.
	if c.IsLeader() {
		t.Fatal("the paused leader still leads by its own clock")
	}
	if err := c.fencedCheck(oldJob); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("the old leader may complete checkpoints: %v", err)
	}
	c.ha.mu.Lock()
	c.ha.paused = false
	c.ha.mu.Unlock()
	hc.waitLog(t, "leadership lost: c"+string(rune('1'+1-l))+" took the lease over", 10*time.Second)
	if _, err := c.Submit(&SubmitRequest{Name: "x", Plan: plan}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the fenced leader took a job: %v", err)
	}
	// Its epoch's calls are refused by the Workers (deploy, trigger, the
	// completion that lets a sink commit)...
	ref := attemptRef{Job: string(resp.Job), Attempt: 99, Epoch: old}
	for _, w := range hc.workers {
		cl, err := cflightDial(w.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, act := range []struct {
			name string
			req  any
		}{{actDeploy, &deployReq{attemptRef: ref, Plan: plan, Parallelism: 1, Subtasks: []int{0}}}, {actTrigger, &triggerReq{attemptRef: ref, ID: 1000}}, {actComplete, &triggerReq{attemptRef: ref, ID: 1000}}, {actCancel, &ref}} {
			if err := call(ctx, cl, act.name, act.req, nil); err == nil || !strings.Contains(err.Error(), "is older than epoch") {
				t.Errorf("%s: %s of epoch %d: %v", w.ID(), act.name, old, err)
			}
		}
	}
	// ... and its manifest write: the job's directory is fenced.
	store, _ := checkpoint.NewStore(filepath.Join(dir, "ck", "stream"), checkpoint.Options{})
	next, _ := store.NextID()
	wr, err := store.Begin(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Commit(checkpoint.Meta{Job: "stream", Epoch: old}); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("manifest of epoch %d: %v", old, err)
	}
	wr.Abort()
	if d, ok := n.Job(string(resp.Job)); !ok || terminal(d.State) {
		t.Fatalf("on the new leader: %+v", d)
	}
}

// TestWorkerSelfFence: with every Coordinator gone, a Worker cancels its
// tasks within its fence timeout.
func TestWorkerSelfFence(t *testing.T) {
	dir := t.TempDir()
	_, plan := streamingJob(t, dir, 1000)
	fence := 700 * time.Millisecond
	// No checkpoint after the first one: an acknowledgement to a gone
	// Coordinator would end the attempt before the Worker fences itself.
	hc := startHAWith(t, dir, 1, fence, "127.0.0.1:0", CoordinatorConfig{CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: time.Hour, Heartbeat: 100 * time.Millisecond})
	l := hc.waitLeader(t)
	c := hc.coords[l]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		k := len(c.workers)
		c.mu.Unlock()
		if k == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Worker did not register")
		}
	}
	resp, err := c.Submit(&SubmitRequest{Name: "stream", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	w := hc.workers[0]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if d, _ := c.Job(string(resp.Job)); d.State == StateRunning && w.running() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job does not run")
		}
	}
	if code, _ := httpGet(t, "http://"+w.HTTPAddr()+"/readyz"); code != 200 {
		t.Fatalf("/readyz of a registered Worker: %d", code)
	}
	for _, co := range hc.coords {
		co.ha.vanish = true
	}
	gone := time.Now()
	hc.stops[1-l]()
	hc.stops[l]()
	hc.waitLog(t, "self-fencing: no leader answered", 5*time.Second)
	el := time.Since(gone)
	for deadline := time.Now().Add(5 * time.Second); w.running() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("tasks still running after self-fencing")
		}
	}
	if code, _ := httpGet(t, "http://"+w.HTTPAddr()+"/readyz"); code != 503 {
		t.Errorf("/readyz without a leader: %d", code)
	}
	if code, _ := httpGet(t, "http://"+w.HTTPAddr()+"/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if _, body := httpGet(t, "http://"+w.HTTPAddr()+"/metrics"); !strings.Contains(body, "clink_worker_self_fences_total 1") || !strings.Contains(body, "clink_worker_leader_epoch 1") {
		t.Errorf("/metrics:\n%s", body)
	}
	// The last answer was at most a beat before the Coordinators went.
	if el > fence+time.Second {
		t.Errorf("self-fenced %s after the Coordinators went, timeout %s", el, fence)
	}
	t.Logf("self-fenced %s after the Coordinators went (timeout %s)", el.Round(time.Millisecond), fence)
}

func cflightDial(addr string) (flight.Client, error) { return cflight.Dial(addr, "") }

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHAJobStore: a Coordinator restarted on its HA directory lists the
// ended jobs with their final state, and gives out ids after the highest
// ever given, never an old one.
func TestHAJobStore(t *testing.T) {
	dir := t.TempDir()
	plan := filePlan(t)
	run := func() (*Coordinator, func()) {
		c, err := NewCoordinator(CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", HADir: dir, HAID: "c1",
			LeaseTTL: time.Second, LeaseRenew: 100 * time.Millisecond, Connectors: builtin.Registry(), Log: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		for deadline := time.Now().Add(5 * time.Second); !c.IsLeader(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no leadership")
			}
		}
		return c, func() { cancel(); <-done }
	}
	c, stop := run()
	var ids []JobID
	for range 2 {
		r, err := c.Submit(&SubmitRequest{Name: fmt.Sprintf("j%d", len(ids)), Plan: plan})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Job)
	}
	c.Cancel(string(ids[0])) // waiting for slots: cancelled, with a remark
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if d, _ := c.Job(string(ids[0])); d.State == StateCanceled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not cancelled")
		}
	}
	stop()
	c, stop = run()
	defer stop()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, ok := c.Job(string(ids[1])); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not recovered", ids[1])
		}
	}
	if d, ok := c.Job(string(ids[0])); !ok || d.State != StateCanceled {
		t.Fatalf("job %s after the restart: %+v", ids[0], d)
	}
	if d, ok := c.Job(string(ids[1])); !ok || terminal(d.State) {
		t.Fatalf("job %s after the restart: %+v", ids[1], d)
	}
	r, err := c.Submit(&SubmitRequest{Name: "j3", Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if r.Job != "3" {
		t.Fatalf("new job id %s after ids %v", r.Job, ids)
	}
}

// TestHAStandbyAnswers: a standby's /readyz is 503 "standby"; its job
// routes answer 503 naming the leader (X-Clink-Leader: its HTTP address);
// a client given the standby, or both Coordinators, submits to the leader.
func TestHAStandbyAnswers(t *testing.T) {
	dir := t.TempDir()
	hc := startHA(t, dir, 1, 0, CoordinatorConfig{HTTPAddr: "127.0.0.1:0", Heartbeat: 100 * time.Millisecond})
	l := hc.waitLeader(t)
	leader, standby := hc.coords[l], hc.coords[1-l]
	hc.waitLog(t, "standby: leader is", 10*time.Second)
	if code, body := httpGet(t, "http://"+leader.HTTPAddr()+"/readyz"); code != 200 || body != "leader\n" {
		t.Fatalf("leader /readyz: %d %q", code, body)
	}
	if code, body := httpGet(t, "http://"+standby.HTTPAddr()+"/readyz"); code != 503 || body != "standby\n" {
		t.Fatalf("standby /readyz: %d %q", code, body)
	}
	resp, err := http.Get("http://" + standby.HTTPAddr() + "/api/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "not the leader") || resp.Header.Get("X-Clink-Leader") != leader.HTTPAddr() {
		t.Fatalf("standby GET /api/v1/jobs: %d %q X-Clink-Leader=%q (leader %s)", resp.StatusCode, b, resp.Header.Get("X-Clink-Leader"), leader.HTTPAddr())
	}
	if code, _ := httpGet(t, "http://"+standby.HTTPAddr()+"/healthz"); code != 200 {
		t.Fatalf("standby /healthz: %d", code)
	}
	plan := filePlan(t)
	ctx := context.Background()
	for i, addr := range []string{standby.FlightAddr(), standby.FlightAddr() + "," + leader.FlightAddr(), standby.HTTPAddr()} {
		r, err := Submit(ctx, addr, "", &SubmitRequest{Name: fmt.Sprintf("j%d", i), Plan: plan})
		if err != nil {
			t.Fatalf("submit via %s: %v", addr, err)
		}
		if _, ok := leader.Job(string(r.Job)); !ok {
			t.Fatalf("submit via %s: job %s not on the leader", addr, r.Job)
		}
		if r.Via != leader.FlightAddr() {
			t.Errorf("submit via %s: via %q, want the leader %s", addr, r.Via, leader.FlightAddr())
		}
	}
}

// TestHADirObjectStoreRefused: an object-store --ha-dir is refused, not
// taken for a local directory named "s3:".
func TestHADirObjectStoreRefused(t *testing.T) {
	_, err := NewCoordinator(CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", HADir: "s3://bucket/ha", Connectors: builtin.Registry(), Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "object store cannot hold the leader lease") {
		t.Fatalf("s3 --ha-dir: %v", err)
	}
	_, err = NewWorker(WorkerConfig{HADir: "gs://bucket/ha", Slots: 1, Connectors: builtin.Registry(), Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "object store cannot hold the leader lease") {
		t.Fatalf("gs --ha-dir on a Worker: %v", err)
	}
	if _, err := os.Stat("s3:"); err == nil {
		t.Fatal("a directory s3: was created")
	}
}
