package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
)

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// FlightAddr is where Workers and clients call (default
	// 127.0.0.1:6123); HTTPAddr serves the HTTP API and /metrics (default
	// 127.0.0.1:8081; "" or "off" turns it off).
	FlightAddr, HTTPAddr string
	// CheckpointDir is where jobs keep checkpoints (<dir>/<job name>)
	// unless their SQL sets 'execution.checkpointing.dir'. It must be
	// shared with the Workers. Empty: jobs without that setting run
	// without checkpoints.
	CheckpointDir string
	// Token, when set, is required as a bearer token on every call and
	// HTTP request (CLINK_AUTH_TOKEN).
	Token string
	// Heartbeat is the Workers' beat (default 500 ms); MissedBeats of
	// them missed is a lost Worker (default 3).
	Heartbeat   time.Duration
	MissedBeats int
	// MaxRestarts bounds a job's restarts after failures (default 10; < 0:
	// none); RestartDelay waits before each (default 200 ms).
	MaxRestarts  int
	RestartDelay time.Duration
	// CheckpointInterval is the default between checkpoints (1 s);
	// CheckpointTimeout abandons a checkpoint (default 10 min).
	CheckpointInterval, CheckpointTimeout time.Duration
	Connectors                            *connectors.Registry
	Log                                   io.Writer
}

// Job states, Flink's names.
const (
	StateCreated    = "CREATED"
	StateRunning    = "RUNNING"
	StateRestarting = "RESTARTING"
	StateFinished   = "FINISHED"
	StateCanceled   = "CANCELED"
	StateFailed     = "FAILED"
)

// Coordinator schedules jobs on Workers, drives their checkpoints and
// restarts them after failures.
type Coordinator struct {
	cfg   CoordinatorConfig
	srv   *cflight.Server
	http  *http.Server
	hl    net.Listener
	funcs *kernels.Registry

	mu       sync.Mutex
	workers  map[string]*workerInfo
	jobs     map[string]*job
	order    []string
	nextJob  int
	capacity chan struct{} // closed and replaced when slots change
	started  time.Time
}

type workerInfo struct {
	id, addr string
	slots    int
	used     int
	lastBeat time.Time
	cl       flight.Client
	tasks    []taskStats
}

// job is a submitted job; its fields are guarded by Coordinator.mu.
type job struct {
	id, name    string
	plan        []byte
	parallelism int
	guarantee   string
	state       string
	failure     string
	errorCount  int
	restarts    int
	attempt     int
	assign      map[int]string // subtask -> worker id
	created     time.Time
	ended       time.Time
	savepoint   string
	batchSize   int
	lingerMS    int
	late        int64 // rows dropped as late by the attempt that ended last
	skipped     int64 // bad records it skipped

	store       *checkpoint.Store
	ckDir       string
	fingerprint string
	interval    time.Duration
	retain      int
	fresh       bool
	from        uint64
	nextCk      uint64
	history     []ckRecord
	latest      *ckRecord
	ckCount     int
	ckFailed    int
	restoredIDs []uint64

	events chan event
}

type ckRecord struct {
	ID        uint64    `json:"id"`
	Status    string    `json:"status"`
	Triggered time.Time `json:"trigger_time"`
	Duration  int64     `json:"duration_ms"`
	Parts     int       `json:"parts"`
	Bytes     int64     `json:"state_bytes"`
	Path      string    `json:"path,omitempty"`
	Kind      string    `json:"kind"` // checkpoint, final, savepoint
	Reason    string    `json:"failure,omitempty"`
}

type evKind int

const (
	evAck evKind = iota
	evFinished
	evDone
	evLost
	evCancel
	evStop
	evCallFailed
	evCompleted
)

type event struct {
	kind    evKind
	attempt int
	worker  string
	id      uint64
	parts   []checkpoint.PartInfo
	err     string
	late    int64
	skipped int64
	reply   chan stopResult
}

type stopResult struct {
	path string
	err  error
}

// NewCoordinator starts listening; Run serves.
func NewCoordinator(cfg CoordinatorConfig) (*Coordinator, error) {
	if cfg.FlightAddr == "" {
		cfg.FlightAddr = "127.0.0.1:6123"
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 500 * time.Millisecond
	}
	if cfg.MissedBeats <= 0 {
		cfg.MissedBeats = 3
	}
	switch {
	case cfg.MaxRestarts == 0:
		cfg.MaxRestarts = 10
	case cfg.MaxRestarts < 0:
		cfg.MaxRestarts = 0 // fail at the first failure
	}
	if cfg.RestartDelay <= 0 {
		cfg.RestartDelay = 200 * time.Millisecond
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.CheckpointTimeout <= 0 {
		cfg.CheckpointTimeout = 10 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	srv, err := cflight.NewServer(cfg.FlightAddr, cfg.Token)
	if err != nil {
		return nil, err
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	c := &Coordinator{cfg: cfg, srv: srv, funcs: funcs, workers: map[string]*workerInfo{}, jobs: map[string]*job{},
		capacity: make(chan struct{}), started: time.Now()}
	if cfg.HTTPAddr != "" && cfg.HTTPAddr != "off" {
		c.hl, err = net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			srv.Shutdown()
			return nil, err
		}
		c.http = &http.Server{Handler: c.api(), ReadHeaderTimeout: 10 * time.Second}
	}
	handle(srv, actRegister, c.register)
	handle(srv, actHeartbeat, c.heartbeat)
	handle(srv, actAck, func(_ context.Context, r *ackReq) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evAck, worker: r.Worker, id: r.ID, parts: r.Parts})
	})
	handle(srv, actFinished, func(_ context.Context, r *workerReport) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evFinished, worker: r.Worker})
	})
	handle(srv, actDone, func(_ context.Context, r *workerReport) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evDone, worker: r.Worker, err: r.Error, late: r.Late, skipped: r.Skipped})
	})
	handle(srv, actSubmit, func(_ context.Context, r *SubmitRequest) (any, error) { return c.Submit(r) })
	handle(srv, actLeave, func(_ context.Context, r *registerReq) (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if w, ok := c.workers[r.ID]; ok {
			c.loseLocked(w, "shut down")
		}
		return nil, nil
	})
	return c, nil
}

// FlightAddr is the address Workers and clients call.
func (c *Coordinator) FlightAddr() string { return c.srv.Addr() }

// HTTPAddr is the HTTP API's address ("" when off).
func (c *Coordinator) HTTPAddr() string {
	if c.hl == nil {
		return ""
	}
	return c.hl.Addr().String()
}

func (c *Coordinator) logf(format string, args ...any) {
	fmt.Fprintf(c.cfg.Log, time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+" coordinator: "+format+"\n", args...)
}

// Run serves until ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	go c.srv.Serve()
	if c.http != nil {
		go c.http.Serve(c.hl)
	}
	c.logf("listening: flight %s, http %s", c.FlightAddr(), c.HTTPAddr())
	tick := time.NewTicker(c.cfg.Heartbeat / 5)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.srv.Shutdown()
			if c.http != nil {
				c.http.Close()
			}
			return nil
		case <-tick.C:
			c.detectLost()
		}
	}
}

// capacityChangedLocked wakes jobs waiting for slots.
func (c *Coordinator) capacityChangedLocked() {
	close(c.capacity)
	c.capacity = make(chan struct{})
}

func (c *Coordinator) register(_ context.Context, r *registerReq) (any, error) {
	if r.Slots < 1 {
		return nil, fmt.Errorf("a Worker needs at least one slot")
	}
	cl, err := cflight.Dial(r.Addr, c.cfg.Token)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if old, ok := c.workers[r.ID]; ok {
		// The same Worker registers again: its earlier process is gone.
		c.loseLocked(old, "registered again")
	}
	c.workers[r.ID] = &workerInfo{id: r.ID, addr: r.Addr, slots: r.Slots, lastBeat: time.Now(), cl: cl}
	c.capacityChangedLocked()
	c.mu.Unlock()
	c.logf("worker registered: %s at %s, %d slots", r.ID, r.Addr, r.Slots)
	return &registerResp{HeartbeatMS: int(c.cfg.Heartbeat / time.Millisecond)}, nil
}

func (c *Coordinator) heartbeat(_ context.Context, r *heartbeatReq) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.workers[r.ID]
	if !ok {
		return &heartbeatResp{Known: false}, nil
	}
	w.lastBeat = time.Now()
	w.tasks = r.Tasks
	return &heartbeatResp{Known: true}, nil
}

// detectLost declares Workers lost after MissedBeats missed beats.
func (c *Coordinator) detectLost() {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := time.Duration(c.cfg.MissedBeats) * c.cfg.Heartbeat
	for _, w := range c.workers {
		if time.Since(w.lastBeat) > limit {
			c.loseLocked(w, fmt.Sprintf("no heartbeat for %s", time.Since(w.lastBeat).Round(time.Millisecond)))
		}
	}
}

// loseLocked removes a Worker and fails the attempts it ran.
func (c *Coordinator) loseLocked(w *workerInfo, why string) {
	delete(c.workers, w.id)
	w.cl.Close()
	c.logf("worker lost: %s (%s)", w.id, why)
	for _, j := range c.jobs {
		if terminal(j.state) {
			continue
		}
		for _, wid := range j.assign {
			if wid == w.id {
				c.post(j, event{kind: evLost, attempt: j.attempt, worker: w.id, err: "worker lost: " + w.id})
				break
			}
		}
	}
	c.capacityChangedLocked()
}

// unreachable declares a Worker lost when a call to it found nobody
// listening: its process is gone, whatever its last heartbeat says.
func (c *Coordinator) unreachable(wid string, err error) {
	if !cflight.Unreachable(err) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.workers[wid]; ok {
		c.loseLocked(w, "unreachable")
	}
}

// send hands an event of an attempt to its job (events of replaced
// attempts are dropped by the job).
func (c *Coordinator) send(ref attemptRef, ev event) error {
	c.mu.Lock()
	j, ok := c.jobs[ref.Job]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no job %s", ref.Job)
	}
	ev.attempt = ref.Attempt
	// In order: a Worker's calls arrive one after the other.
	j.events <- ev
	return nil
}

// post delivers ev to the job's loop without blocking the caller (which
// may hold c.mu, or be the loop itself).
func (c *Coordinator) post(j *job, ev event) {
	go func() { j.events <- ev }()
}

// Submit plans a job (to check it and state its guarantee) and starts it.
func (c *Coordinator) Submit(r *SubmitRequest) (*SubmitResponse, error) {
	var plan pb.Plan
	if err := proto.Unmarshal(r.Plan, &plan); err != nil {
		return nil, fmt.Errorf("bad plan: %v", err)
	}
	settings, err := substrait.JobSettings(&plan)
	if err != nil {
		return nil, err
	}
	par := r.Parallelism
	if par == 0 {
		par = 1
		if v, ok := settings["parallelism"]; ok {
			if par, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("plan setting parallelism %q", v)
			}
		}
	}
	if par < 1 {
		return nil, fmt.Errorf("parallelism must be at least 1")
	}
	name := r.Name
	if name == "" {
		name = "job"
	}
	if r.Fresh && r.FromCheckpoint != 0 {
		return nil, fmt.Errorf("give from_checkpoint or fresh, not both")
	}
	// Plan subtask 0 as a Worker would, to refuse a bad job now.
	rt := connectors.Runtime{BatchSize: 1024, Linger: time.Millisecond, Mem: memory.NewGoAllocator(), Stdout: io.Discard, Stderr: io.Discard, Parallelism: par}
	built, err := planner.BuildParallel(&plan, planner.Env{Connectors: c.cfg.Connectors, Funcs: c.funcs, Runtime: rt, Subtasks: []int{0}}, par)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range built.Pipelines {
			p.Sink.Close()
		}
	}()
	j := &job{name: name, plan: r.Plan, parallelism: par, state: StateCreated, created: time.Now(),
		fresh: r.Fresh, from: r.FromCheckpoint, batchSize: r.BatchSize, lingerMS: r.LingerMS, events: make(chan event, 64), interval: c.cfg.CheckpointInterval, retain: 3}
	if v, ok := settings["checkpoint_dir"]; ok {
		j.ckDir = v
	} else if c.cfg.CheckpointDir != "" {
		j.ckDir = filepath.Join(c.cfg.CheckpointDir, name)
	}
	if v, ok := settings["checkpoint_interval_ms"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("plan setting checkpoint_interval_ms %q", v)
		}
		j.interval = time.Duration(ms) * time.Millisecond
	}
	if v, ok := settings["checkpoints_retained"]; ok {
		if j.retain, err = strconv.Atoi(v); err != nil || j.retain < 1 {
			return nil, fmt.Errorf("plan setting checkpoints_retained %q", v)
		}
	}
	resp := &SubmitResponse{}
	if j.ckDir != "" {
		if err := engine.CheckCheckpoints(built.Pipelines); err != nil {
			return nil, err
		}
		if j.ckDir, err = filepath.Abs(j.ckDir); err != nil {
			return nil, err
		}
		if j.store, err = checkpoint.NewStore(j.ckDir, checkpoint.Options{}); err != nil {
			return nil, err
		}
		if j.fingerprint, err = substrait.Fingerprint(&plan); err != nil {
			return nil, err
		}
		id, err := c.restorePoint(j)
		if err != nil {
			return nil, err
		}
		resp.CheckpointDir, resp.RestorePoint = j.ckDir, id
	} else if r.Fresh || r.FromCheckpoint != 0 {
		return nil, fmt.Errorf("from_checkpoint and fresh need a checkpoint directory")
	}
	j.guarantee = engine.Guarantee(built.Pipelines, j.store != nil)
	c.mu.Lock()
	for _, o := range c.jobs {
		if o.ckDir != "" && o.ckDir == j.ckDir && !terminal(o.state) {
			c.mu.Unlock()
			return nil, fmt.Errorf("job %s (%s) is running with checkpoint directory %s; cancel it first, or name this job differently", o.id, o.name, o.ckDir)
		}
	}
	c.nextJob++
	j.id = strconv.Itoa(c.nextJob)
	c.jobs[j.id] = j
	c.order = append(c.order, j.id)
	c.mu.Unlock()
	c.logf("job_id=%s submitted: %s, parallelism %d, guarantee %s", j.id, name, par, j.guarantee)
	go c.runJob(j)
	resp.Job, resp.Guarantee = j.id, j.guarantee
	return resp, nil
}

func terminal(state string) bool {
	return state == StateFinished || state == StateCanceled || state == StateFailed
}

// restorePoint is the checkpoint the job's next attempt restores: the
// newest completed one (the first attempt honours fresh and from).
func (c *Coordinator) restorePoint(j *job) (uint64, error) {
	if j.store == nil {
		return 0, nil
	}
	if j.attempt == 0 {
		if j.fresh {
			return 0, nil
		}
		if j.from != 0 {
			cp, err := j.store.Open(j.from)
			if err != nil {
				return 0, err
			}
			if err := checkFingerprint(cp, j.fingerprint); err != nil {
				return 0, err
			}
			return j.from, nil
		}
	}
	id, ok, err := j.store.Latest()
	if err != nil || !ok {
		return 0, err
	}
	if j.attempt == 0 {
		cp, err := j.store.Open(id)
		if err != nil {
			return 0, err
		}
		if err := checkFingerprint(cp, j.fingerprint); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func checkFingerprint(cp *checkpoint.Checkpoint, fp string) error {
	if cp.Manifest.Fingerprint != fp {
		return fmt.Errorf("checkpoint %d in %s was taken by a different job (plan fingerprint %s, this job's is %s); submit with fresh, or give the SQL that wrote it", cp.ID, filepath.Dir(cp.Path), cp.Manifest.Fingerprint, fp)
	}
	return nil
}

type outcome int

const (
	outFinished outcome = iota
	outCanceled
	outFailed
	outStopped
)

// runJob runs a job's attempts until it finishes, is cancelled, or fails
// more often than MaxRestarts.
func (c *Coordinator) runJob(j *job) {
	for {
		assign, ok := c.schedule(j)
		if !ok {
			c.end(j, StateCanceled, "")
			return
		}
		out, reason := c.runAttempt(j, assign)
		switch out {
		case outFinished, outStopped:
			c.end(j, StateFinished, "")
			return
		case outCanceled:
			c.end(j, StateCanceled, "")
			return
		}
		c.mu.Lock()
		j.errorCount++
		j.failure = reason
		k := j.restarts + 1
		if k > c.cfg.MaxRestarts {
			c.mu.Unlock()
			c.logf("job_id=%s failed after %d restarts: %s", j.id, c.cfg.MaxRestarts, reason)
			c.end(j, StateFailed, reason)
			return
		}
		j.restarts = k
		j.state = StateRestarting
		c.mu.Unlock()
		c.logf("job_id=%s awaiting_restart (attempt %d/%d): %s", j.id, k, c.cfg.MaxRestarts, reason)
		if !c.restartDelay(j) {
			c.end(j, StateCanceled, "")
			return
		}
	}
}

// restartDelay waits RestartDelay before a restart, dropping the failed
// attempt's late events; false: the job was cancelled meanwhile.
func (c *Coordinator) restartDelay(j *job) bool {
	timer := time.NewTimer(c.cfg.RestartDelay)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return true
		case ev := <-j.events:
			if ev.kind == evCancel || ev.kind == evStop {
				if ev.reply != nil {
					ev.reply <- stopResult{err: fmt.Errorf("job %s is restarting; cancelled without a savepoint", j.id)}
				}
				return false
			}
		}
	}
}

func (c *Coordinator) end(j *job, state, reason string) {
	c.mu.Lock()
	j.state = state
	j.ended = time.Now()
	if reason != "" {
		j.failure = reason
	}
	c.mu.Unlock()
	c.logf("job_id=%s %s", j.id, state)
	// Answer whatever still arrives.
	go func() {
		for ev := range j.events {
			if ev.reply != nil {
				ev.reply <- stopResult{err: fmt.Errorf("job %s is %s", j.id, state)}
			}
		}
	}()
}

// schedule waits until the Workers have a free slot per subtask, then
// assigns subtasks to Workers round-robin (by Worker id). false: the job
// was cancelled meanwhile.
func (c *Coordinator) schedule(j *job) (map[int]string, bool) {
	said := false
	for {
		c.mu.Lock()
		var ids []string
		free := 0
		for id, w := range c.workers {
			if w.slots > w.used {
				ids = append(ids, id)
				free += w.slots - w.used
			}
		}
		if free >= j.parallelism {
			sort.Strings(ids)
			assign := map[int]string{}
			for s, k := 0, 0; s < j.parallelism; k++ {
				w := c.workers[ids[k%len(ids)]]
				if w.used < w.slots {
					assign[s] = w.id
					w.used++
					s++
				}
			}
			j.assign = assign
			c.mu.Unlock()
			return assign, true
		}
		wait := c.capacity
		restart := j.restarts > 0
		c.mu.Unlock()
		if !said {
			said = true
			if restart {
				c.logf("job_id=%s restart waiting for capacity: %d slots needed, %d free", j.id, j.parallelism, free)
			} else {
				c.logf("job_id=%s waiting for capacity: %d slots needed, %d free", j.id, j.parallelism, free)
			}
		}
		select {
		case <-wait:
		case ev := <-j.events:
			if ev.kind == evCancel || ev.kind == evStop {
				if ev.reply != nil {
					ev.reply <- stopResult{err: fmt.Errorf("job %s was not running; cancelled without a savepoint", j.id)}
				}
				return nil, false
			}
		}
	}
}

// release frees the slots of an attempt.
func (c *Coordinator) release(assign map[int]string) {
	c.mu.Lock()
	for _, wid := range assign {
		if w, ok := c.workers[wid]; ok && w.used > 0 {
			w.used--
		}
	}
	c.capacityChangedLocked()
	c.mu.Unlock()
}

// attemptWorkers maps each Worker of an attempt to its subtasks.
func attemptWorkers(assign map[int]string) map[string][]int {
	out := map[string][]int{}
	for s, w := range assign {
		out[w] = append(out[w], s)
	}
	for _, ss := range out {
		sort.Ints(ss)
	}
	return out
}

func (c *Coordinator) client(wid string) (flight.Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.workers[wid]
	if !ok {
		return nil, false
	}
	return w.cl, true
}

// pendingCk is a checkpoint the Coordinator waits for.
type pendingCk struct {
	id    uint64
	w     *checkpoint.Writer
	acks  map[string][]checkpoint.PartInfo
	start time.Time
	kind  string
	stop  chan stopResult // stop-with-savepoint waits for it
}

// runAttempt deploys the job and drives it until it ends. It returns the
// outcome and, for a failure, the reason.
func (c *Coordinator) runAttempt(j *job, assign map[int]string) (outcome, string) {
	defer c.release(assign)
	c.mu.Lock()
	j.attempt++
	ref := attemptRef{Job: j.id, Attempt: j.attempt}
	c.mu.Unlock()
	workers := attemptWorkers(assign)
	restore, err := c.restorePoint(j)
	if err != nil {
		return outFailed, err.Error()
	}
	if restore != 0 {
		c.logf("job_id=%s restore point: checkpoint %d", j.id, restore)
		c.mu.Lock()
		j.restoredIDs = append(j.restoredIDs, restore)
		c.mu.Unlock()
	} else if j.store != nil {
		c.logf("job_id=%s starting fresh (no checkpoint to restore)", j.id)
	}
	peers := map[int]string{}
	c.mu.Lock()
	for s, wid := range assign {
		if w, ok := c.workers[wid]; ok {
			peers[s] = w.addr
		}
	}
	c.mu.Unlock()
	// cancelAll stops the attempt on its Workers and waits for them.
	cancelAll := func() {
		var wg sync.WaitGroup
		for wid := range workers {
			cl, ok := c.client(wid)
			if !ok {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := call(ctx, cl, actCancel, &ref, nil); err != nil {
					c.unreachable(wid, err)
					c.logf("job_id=%s: cancelling attempt %d on %s: %v", j.id, ref.Attempt, wid, err)
				}
			}()
		}
		wg.Wait()
	}
	var deployErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for wid, subtasks := range workers {
		cl, ok := c.client(wid)
		if !ok {
			deployErr = fmt.Errorf("worker lost: %s", wid)
			break
		}
		req := &deployReq{attemptRef: ref, Name: j.name, Plan: j.plan, Parallelism: j.parallelism, Subtasks: subtasks, Peers: peers,
			BatchSize: j.batchSize, LingerMS: j.lingerMS}
		if j.store != nil {
			req.Checkpoints = &ckSpec{Dir: j.ckDir, Restore: restore, Fingerprint: j.fingerprint}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := call(ctx, cl, actDeploy, req, nil); err != nil {
				c.unreachable(wid, err)
				mu.Lock()
				deployErr = fmt.Errorf("deploying on %s: %w", wid, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if deployErr != nil {
		cancelAll()
		return outFailed, deployErr.Error()
	}
	c.mu.Lock()
	j.state = StateRunning
	c.mu.Unlock()
	c.logf("job_id=%s attempt %d running: %d subtasks on %d workers", j.id, ref.Attempt, j.parallelism, len(workers))

	var tick <-chan time.Time
	if j.store != nil {
		t := time.NewTicker(j.interval)
		defer t.Stop()
		tick = t.C
	}
	timeout := time.NewTicker(time.Second)
	defer timeout.Stop()
	var pending *pendingCk
	finished := map[string]bool{}
	done := map[string]bool{}
	var late, skipped int64
	finalWanted, finalDone := false, false
	var stopReply chan stopResult // stop-with-savepoint's caller
	var stopped chan stopResult   // the savepoint's completion
	savepointTriggered := false

	fail := func(reason string) (outcome, string) {
		if pending != nil {
			pending.w.Abort()
			c.recordCk(j, pending, "FAILED", "attempt failed: "+reason, nil)
			if pending.stop != nil {
				pending.stop <- stopResult{err: errors.New(reason)}
			}
		}
		if stopReply != nil {
			stopReply <- stopResult{err: errors.New(reason)}
		}
		cancelAll()
		return outFailed, reason
	}
	trigger := func(kind string) error {
		if j.nextCk == 0 {
			id, err := j.store.NextID()
			if err != nil {
				return err
			}
			j.nextCk = max(id, restore+1)
		}
		id := j.nextCk
		j.nextCk++
		w, err := j.store.Begin(id)
		if err != nil {
			return err
		}
		pending = &pendingCk{id: id, w: w, acks: map[string][]checkpoint.PartInfo{}, start: time.Now(), kind: kind}
		for wid := range workers {
			cl, ok := c.client(wid)
			if !ok {
				return fmt.Errorf("worker lost: %s", wid)
			}
			req := &triggerReq{attemptRef: ref, ID: id, Final: kind == "final"}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := call(ctx, cl, actTrigger, req, nil); err != nil {
					c.unreachable(wid, err)
					c.post(j, event{kind: evCallFailed, attempt: ref.Attempt, worker: wid, err: fmt.Sprintf("checkpoint %d: trigger on %s: %v", id, wid, err)})
				}
			}()
		}
		return nil
	}
	// complete writes the manifest of the pending checkpoint and tells the
	// Workers; their answers arrive as evCompleted.
	complete := func() error {
		p := pending
		pending = nil
		var parts []checkpoint.PartInfo
		for _, ps := range p.acks {
			parts = append(parts, ps...)
		}
		meta := checkpoint.Meta{Job: j.name, Fingerprint: j.fingerprint, Parts: parts,
			Properties: map[string]string{"job_id": j.id, "attempt": strconv.Itoa(ref.Attempt), "kind": p.kind}}
		if err := p.w.Commit(meta); err != nil {
			c.recordCk(j, p, "FAILED", err.Error(), nil)
			return err
		}
		if err := j.store.Retain(max(j.retain, 1)); err != nil {
			c.logf("job_id=%s: pruning checkpoints: %v", j.id, err)
		}
		c.recordCk(j, p, "COMPLETED", "", parts)
		c.logf("job_id=%s checkpoint %d complete (%d parts, %s)", j.id, p.id, len(parts), time.Since(p.start).Round(time.Millisecond))
		var wg sync.WaitGroup
		for wid := range workers {
			cl, ok := c.client(wid)
			if !ok {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				if err := call(ctx, cl, actComplete, &triggerReq{attemptRef: ref, ID: p.id}, nil); err != nil {
					c.unreachable(wid, err)
					c.post(j, event{kind: evCallFailed, attempt: ref.Attempt, worker: wid, err: fmt.Sprintf("checkpoint %d: complete on %s: %v", p.id, wid, err)})
				}
			}()
		}
		if p.stop != nil {
			// Stop with savepoint: once every Worker published it, stop.
			go func() {
				wg.Wait()
				p.stop <- stopResult{path: j.store.Path(p.id)}
			}()
		}
		return nil
	}
	for {
		select {
		case <-tick:
			if pending == nil && !finalWanted && stopReply == nil {
				if err := trigger("checkpoint"); err != nil {
					return fail(err.Error())
				}
			}
		case <-timeout.C:
			if pending != nil && time.Since(pending.start) > c.cfg.CheckpointTimeout {
				c.logf("job_id=%s checkpoint %d expired after %s", j.id, pending.id, c.cfg.CheckpointTimeout)
				return fail(fmt.Sprintf("checkpoint %d expired", pending.id))
			}
		case r := <-stopped:
			stopped = nil
			cancelAll()
			c.mu.Lock()
			j.savepoint = r.path
			c.mu.Unlock()
			stopReply <- r
			return outStopped, ""
		case ev := <-j.events:
			if ev.kind == evCancel {
				if pending != nil {
					pending.w.Abort()
					c.recordCk(j, pending, "FAILED", "job cancelled", nil)
				}
				cancelAll()
				if ev.reply != nil {
					ev.reply <- stopResult{}
				}
				return outCanceled, ""
			}
			if ev.kind == evStop {
				if j.store == nil {
					ev.reply <- stopResult{err: fmt.Errorf("job %s takes no checkpoints (no checkpoint directory): cannot stop with a savepoint", j.id)}
					continue
				}
				if stopReply != nil || finalWanted {
					ev.reply <- stopResult{err: fmt.Errorf("job %s is already stopping or finishing", j.id)}
					continue
				}
				stopReply = ev.reply
				stopped = make(chan stopResult, 1)
				if pending == nil {
					if err := trigger("savepoint"); err != nil {
						return fail(err.Error())
					}
					pending.stop = stopped
					savepointTriggered = true
				}
				continue
			}
			if ev.attempt != ref.Attempt {
				continue // a replaced attempt's
			}
			switch ev.kind {
			case evLost, evCallFailed:
				return fail(ev.err)
			case evAck:
				if pending == nil || pending.id != ev.id {
					continue
				}
				pending.acks[ev.worker] = ev.parts
				if len(pending.acks) < len(workers) {
					continue
				}
				final := pending.kind == "final"
				if err := complete(); err != nil {
					return fail(err.Error())
				}
				if final {
					finalDone = true
				}
				switch {
				case stopReply != nil && !savepointTriggered && !finalDone:
					// The savepoint was asked while a checkpoint ran.
					if err := trigger("savepoint"); err != nil {
						return fail(err.Error())
					}
					pending.stop = stopped
					savepointTriggered = true
				case finalWanted && !finalDone:
					if err := trigger("final"); err != nil {
						return fail(err.Error())
					}
				}
			case evFinished:
				finished[ev.worker] = true
				if len(finished) == len(workers) && j.store != nil && !finalWanted {
					finalWanted = true
					if pending == nil {
						if err := trigger("final"); err != nil {
							return fail(err.Error())
						}
					}
				}
			case evDone:
				if ev.err != "" {
					return fail(fmt.Sprintf("%s: %s", ev.worker, ev.err))
				}
				done[ev.worker] = true
				late += ev.late
				skipped += ev.skipped
				if len(done) == len(workers) && (j.store == nil || finalDone) {
					c.mu.Lock()
					j.late, j.skipped = late, skipped
					c.mu.Unlock()
					if stopReply != nil {
						stopReply <- stopResult{err: fmt.Errorf("job %s finished before the savepoint", j.id)}
					}
					return outFinished, ""
				}
			}
		}
	}
}

// recordCk keeps a checkpoint's outcome for the API.
func (c *Coordinator) recordCk(j *job, p *pendingCk, status, reason string, parts []checkpoint.PartInfo) {
	r := ckRecord{ID: p.id, Status: status, Triggered: p.start.UTC(), Duration: time.Since(p.start).Milliseconds(), Parts: len(parts), Kind: p.kind, Reason: reason}
	for _, pi := range parts {
		r.Bytes += pi.Bytes
	}
	if status == "COMPLETED" {
		r.Path = j.store.Path(p.id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	j.history = append(j.history, r)
	if len(j.history) > 20 {
		j.history = j.history[len(j.history)-20:]
	}
	if status == "COMPLETED" {
		j.latest = &r
		j.ckCount++
	} else {
		j.ckFailed++
	}
}

// Cancel cancels a job.
func (c *Coordinator) Cancel(id string) error {
	c.mu.Lock()
	j, ok := c.jobs[id]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no job %s", id)
	}
	if terminal(j.state) {
		return fmt.Errorf("job %s is %s", id, j.state)
	}
	reply := make(chan stopResult, 1)
	j.events <- event{kind: evCancel, reply: reply}
	r := <-reply
	return r.err
}

// StopWithSavepoint takes a savepoint (a checkpoint the sinks publish),
// then stops the job; it returns the savepoint's path.
func (c *Coordinator) StopWithSavepoint(id string) (string, error) {
	c.mu.Lock()
	j, ok := c.jobs[id]
	c.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("no job %s", id)
	}
	if terminal(j.state) {
		return "", fmt.Errorf("job %s is %s", id, j.state)
	}
	reply := make(chan stopResult, 1)
	j.events <- event{kind: evStop, reply: reply}
	r := <-reply
	return r.path, r.err
}
