package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"go.opentelemetry.io/otel/trace"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/flightsql"
	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/telemetry"
)

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// FlightAddr is where Workers and clients call (default
	// 127.0.0.1:6123); HTTPAddr serves the HTTP API and /metrics (default
	// 127.0.0.1:8081; "" or "off" turns it off).
	FlightAddr, HTTPAddr string
	// FlightSQLAddr serves Flight SQL over the jobs, their operators,
	// checkpoints and state, and the Workers (docs/flightsql.md), with
	// the same token and TLS as Flight; "" or "off": none. Version is
	// what it reports as the server's version.
	FlightSQLAddr string
	Version       string
	// CheckpointDir is where jobs keep checkpoints (<dir>/<job name>)
	// unless their SQL sets 'execution.checkpointing.dir'. It must be
	// shared with the Workers. Empty: jobs without that setting run
	// without checkpoints.
	CheckpointDir string
	// SavepointDir is where savepoints go unless the request or the job's
	// SQL ('execution.checkpointing.savepoint-dir') names another
	// (default <CheckpointDir>/savepoints, else <job's checkpoint
	// directory>/savepoints). Checkpoint retention never removes them.
	SavepointDir string
	// HADir, when set, makes this one of several highly available
	// Coordinators sharing the directory (docs/cluster.md, High
	// availability): the leader lease, the jobs and the job-id counter
	// live there. HAID names this Coordinator in the lease (default its
	// Flight address and a random suffix); LeaseTTL is how long a lease
	// lasts unrenewed (default 5 s), LeaseRenew how often the leader
	// renews it and standbys look at it (default 1 s).
	HADir                string
	HAID                 string
	LeaseTTL, LeaseRenew time.Duration
	// Token, when set, is required as a bearer token on every call and
	// HTTP request but /healthz and /readyz (CLINK_AUTH_TOKEN).
	Token string
	// OTel turns OpenTelemetry on as the OTEL_* environment configures
	// it (package telemetry: off unless an exporter is configured): the
	// Coordinator's spans, and its /metrics over OTLP.
	OTel bool
	// TLS, when set, is mutual TLS on Flight (Workers and clients must
	// present a certificate of its CA) and, as HTTPTLS says, on the HTTP
	// API: "mtls" (the default) HTTPS requiring client certificates,
	// "tls" HTTPS without them, "off" plain HTTP.
	TLS     *tlsconf.Config
	HTTPTLS string
	// Insecure lets the Coordinator listen on a non-loopback address
	// without a Token (CheckBind); it warns on Log instead.
	Insecure bool
	// MaxBodyBytes caps an HTTP request's body (default 4 MiB); a larger
	// one is answered 413.
	MaxBodyBytes int64
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
	// CheckpointLogInterval is how often a job's completed checkpoints are
	// summed up in one log line (default 1 min; < 0: a line per
	// checkpoint). The first of each attempt, savepoints, final
	// checkpoints, failures and the first completion after a failure are
	// logged at once.
	CheckpointLogInterval time.Duration
	Connectors            *connectors.Registry
	Log                   io.Writer
	// LogFormat is text (default) or json (telemetry.NewLogger).
	LogFormat string

	// Lineage, when set, receives every job attempt's OpenLineage run
	// events (lineage.go); the caller closes it after Run.
	Lineage *lineage.Client
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
	fsql  *flightsql.Server
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
	// ha is the lease and job store with HADir (nil: a lone Coordinator,
	// always the leader).
	ha   *haState
	reg  *prometheus.Registry // /metrics, and OTLP metrics
	tel  *telemetry.Telemetry
	log  *slog.Logger
	pins pinTable // checkpoints pinned for readers in other processes (pins.go)
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
	id, name string
	// trace is the job's trace root (tracing.go; invalid without traces).
	trace trace.SpanContext
	// req is the submission, kept in the HA job store; epoch is the
	// leader epoch the job belongs to (0 without HA): a Coordinator that
	// lost it acts no more for the job.
	req         SubmitRequest
	epoch       uint64
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
	// stateOps are the job's operators with state (as a restore compares
	// them with a checkpoint's); allowNonRestored lets a restore drop
	// the state of operators the job no longer has.
	stateOps         []checkpoint.OperatorInfo
	allowNonRestored bool
	incremental      bool
	interval         time.Duration
	retain           int
	fresh            bool
	from             uint64
	nextCk           uint64
	history          []ckRecord
	latest           *ckRecord
	ckCount          int
	ckFailed         int
	restoredIDs      []uint64
	// based: an attempt started, restoring base (0: none); later attempts
	// fall back to it.
	based bool
	base  uint64
	// spDir is where the job's savepoints go; fromSP the savepoint (or
	// checkpoint directory) the job was submitted to restore from.
	spDir  string
	fromSP *checkpoint.Checkpoint

	events chan event
}

type ckRecord struct {
	ID        uint64    `json:"id"`
	Status    string    `json:"status"`
	Triggered time.Time `json:"trigger_time"`
	Duration  int64     `json:"duration_ms"`
	Parts     int       `json:"parts"`
	// Bytes are the files this checkpoint wrote (Flink's
	// checkpointed_size); StateSize adds the earlier files its delta
	// parts build on (state_size). Deltas counts its delta parts.
	Bytes     int64 `json:"state_bytes"`
	StateSize int64 `json:"state_size"`
	Deltas    int   `json:"delta_parts"`
	// SyncMS is the longest synchronous part of a subtask's snapshot:
	// how long an operator stopped at the barrier.
	SyncMS float64 `json:"sync_duration_ms"`
	Path   string  `json:"path,omitempty"`
	Kind   string  `json:"kind"` // checkpoint, final, savepoint
	Reason string  `json:"failure,omitempty"`
	// Savepoint is where a savepoint's copy went (docs/checkpoints.md).
	Savepoint string `json:"savepoint_path,omitempty"`
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
	evSavepoint
	// evFenced: this Coordinator lost the leadership; the job is the
	// next leader's.
	evFenced
)

type event struct {
	kind    evKind
	attempt int
	worker  string
	id      uint64
	parts   []checkpoint.PartInfo
	ops     []checkpoint.OperatorInfo
	syncMS  float64
	err     string
	late    int64
	skipped int64
	reply   chan stopResult
	dir     string // evStop, evSavepoint: where the savepoint goes ("": the job's savepoint directory)
}

type stopResult struct {
	path string // the savepoint's directory
	id   uint64 // the checkpoint it copies
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
	if cfg.CheckpointLogInterval == 0 {
		cfg.CheckpointLogInterval = time.Minute
	}
	if cfg.CheckpointTimeout <= 0 {
		cfg.CheckpointTimeout = 10 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	if err := CheckBinds(cfg.Log, cfg.Token, cfg.Insecure, cfg.unauthenticatedAddrs()...); err != nil {
		return nil, err
	}
	srv, err := cflight.NewServer(cfg.FlightAddr, cfg.Token, cflight.WithTLS(cfg.TLS))
	if err != nil {
		return nil, err
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	c := &Coordinator{cfg: cfg, srv: srv, funcs: funcs, workers: map[string]*workerInfo{}, jobs: map[string]*job{},
		capacity: make(chan struct{}), started: time.Now(), reg: prometheus.NewRegistry()}
	c.reg.MustRegister(&collector{c: c})
	if c.log, err = telemetry.NewLogger(cfg.Log, cfg.LogFormat, "coordinator"); err != nil {
		srv.Shutdown()
		return nil, err
	}
	c.tel = telemetry.Off()
	if cfg.OTel {
		if c.tel, err = telemetry.Start(context.Background(), telemetry.Config{Service: "clink-coordinator", Gatherer: c.reg}); err != nil {
			srv.Shutdown()
			return nil, err
		}
	}
	if cfg.FlightSQLAddr != "" && cfg.FlightSQLAddr != "off" {
		c.fsql, err = flightsql.NewServer(cfg.FlightSQLAddr, sqlCatalog{c}, cfg.Version, cflight.ServerOptions(cfg.Token, cflight.WithTLS(cfg.TLS))...)
		if err != nil {
			srv.Shutdown()
			c.tel.Shutdown(context.Background())
			return nil, fmt.Errorf("flight sql: %w", err)
		}
	}
	if cfg.HTTPAddr != "" && cfg.HTTPAddr != "off" {
		c.hl, err = net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			srv.Shutdown()
			c.shutdownSQL()
			return nil, err
		}
		if cfg.TLS != nil && cfg.HTTPTLS != "off" {
			c.hl = tls.NewListener(c.hl, cfg.TLS.HTTPServer(cfg.HTTPTLS != "tls"))
		}
		c.http = &http.Server{Handler: c.api(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: httpReadTimeout, IdleTimeout: 2 * time.Minute,
			ErrorLog: log.New(cfg.Log, "coordinator: ", 0)}
	}
	if cfg.HADir != "" {
		if c.ha, err = newHA(c); err != nil {
			srv.Shutdown()
			c.shutdownSQL()
			if c.hl != nil {
				c.hl.Close()
			}
			return nil, err
		}
	}
	handle(srv, actRegister, c.register)
	handle(srv, actHeartbeat, c.heartbeat)
	handle(srv, actAck, func(_ context.Context, r *ackReq) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evAck, worker: r.Worker, id: r.ID, parts: r.Parts, ops: r.Operators, syncMS: r.SyncMS})
	})
	handle(srv, actFinished, func(_ context.Context, r *workerReport) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evFinished, worker: r.Worker})
	})
	handle(srv, actDone, func(_ context.Context, r *workerReport) (any, error) {
		return nil, c.send(r.attemptRef, event{kind: evDone, worker: r.Worker, err: r.Error, late: r.Late, skipped: r.Skipped})
	})
	handle(srv, actSubmit, func(_ context.Context, r *SubmitRequest) (any, error) { return c.Submit(r) })
	handle(srv, actPin, c.pinAction)
	handle(srv, actConfig, func(_ context.Context, _ *struct{}) (any, error) {
		return &configResp{FlightSQLAddr: c.FlightSQLAddr(), HTTPAddr: c.HTTPAddr()}, nil
	})
	handle(srv, actSavepoint, func(_ context.Context, r *SavepointRequest) (any, error) { return c.savepoint(r) })
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

// FlightSQLAddr is the Flight SQL endpoint's address ("" when off).
func (c *Coordinator) FlightSQLAddr() string {
	if c.fsql == nil {
		return ""
	}
	return c.fsql.Addr()
}

func (c *Coordinator) shutdownSQL() {
	if c.fsql != nil {
		c.fsql.Shutdown()
	}
}

// HTTPAddr is the HTTP API's address ("" when off).
func (c *Coordinator) HTTPAddr() string {
	if c.hl == nil {
		return ""
	}
	return c.hl.Addr().String()
}

func (c *Coordinator) logf(format string, args ...any) {
	telemetry.Line(c.log, fmt.Sprintf(format, args...))
}

// logf logs a line of the job's controller: with the job's attempt and
// leader epoch as attributes (job_id from the line's "job_id=N" prefix).
func (ctl *controller) logf(format string, args ...any) {
	attrs := []slog.Attr{}
	if ctl.a != nil {
		attrs = append(attrs, slog.Int("attempt", ctl.a.ref.Attempt))
	}
	if ctl.j.epoch != 0 {
		attrs = append(attrs, slog.Uint64("epoch", ctl.j.epoch))
	}
	telemetry.Line(ctl.c.log, fmt.Sprintf(format, args...), attrs...)
}

// Run serves until ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	go c.srv.Serve()
	if c.http != nil {
		go c.http.Serve(c.hl)
	}
	c.logf("listening: flight %s, http %s", c.FlightAddr(), c.HTTPAddr())
	if d := c.tel.Describe(); d != "off" {
		c.logf("OpenTelemetry: exporting %s over OTLP", d)
	}
	if c.fsql != nil {
		go c.fsql.Serve()
		c.logf("flight sql listening on %s", c.FlightSQLAddr())
	}
	tick := time.NewTicker(c.cfg.Heartbeat / 5)
	defer tick.Stop()
	var renew <-chan time.Time
	if c.ha != nil {
		c.haTick()
		t := time.NewTicker(c.ha.renew)
		defer t.Stop()
		renew = t.C
	}
	for {
		select {
		case <-renew:
			c.haTick()
		case <-ctx.Done():
			if c.ha != nil {
				c.stepDown("shutting down", !c.ha.vanish)
			}
			c.srv.Shutdown()
			c.shutdownSQL()
			if c.http != nil {
				c.http.Close()
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := c.tel.Shutdown(sctx); err != nil {
				c.logf("flushing telemetry: %v", err)
			}
			cancel()
			return nil
		case <-tick.C:
			c.detectLost()
			c.expirePins()
		}
	}
}

// capacityChangedLocked wakes jobs waiting for slots.
func (c *Coordinator) capacityChangedLocked() {
	close(c.capacity)
	c.capacity = make(chan struct{})
}

func (c *Coordinator) register(_ context.Context, r *registerReq) (any, error) {
	if err := c.notLeader(); err != nil {
		return nil, err
	}
	if r.Slots < 1 {
		return nil, fmt.Errorf("a Worker needs at least one slot")
	}
	cl, err := cflight.Dial(r.Addr, c.cfg.Token, cflight.WithTLS(c.cfg.TLS))
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
	return &registerResp{HeartbeatMS: int(c.cfg.Heartbeat / time.Millisecond), Epoch: c.epoch()}, nil
}

func (c *Coordinator) heartbeat(_ context.Context, r *heartbeatReq) (any, error) {
	if err := c.notLeader(); err != nil {
		return nil, err
	}
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
	if err := c.notLeader(); err != nil {
		return err
	}
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
	start := time.Now()
	if err := c.notLeader(); err != nil {
		return nil, err
	}
	j, resp, err := c.newJob(r, false)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	for _, o := range c.jobs {
		if o.ckDir != "" && o.ckDir == j.ckDir && !terminal(o.state) {
			c.mu.Unlock()
			return nil, fmt.Errorf("job %s (%s) is running with checkpoint directory %s; cancel it first, or name this job differently", o.id, o.name, o.ckDir)
		}
	}
	if err := c.assignIDLocked(j); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.jobs[j.id] = j
	c.order = append(c.order, j.id)
	c.mu.Unlock()
	c.spanSubmit(j, start)
	c.persist(j)
	c.logf("job_id=%s submitted: %s, parallelism %d, guarantee %s", j.id, j.name, j.parallelism, j.guarantee)
	go c.runJob(j)
	resp.Job, resp.Guarantee = JobID(j.id), j.guarantee
	return resp, nil
}

// newJob plans a submitted job (to check it and state its guarantee) and
// finds its restore point; recovering (a new leader takes it over) skips
// the latter: the job's record says where it stands.
func (c *Coordinator) newJob(r *SubmitRequest, recovering bool) (*job, *SubmitResponse, error) {
	var plan pb.Plan
	if err := substrait.UnmarshalPlan(r.Plan, &plan); err != nil {
		return nil, nil, fmt.Errorf("bad plan: %v", err)
	}
	settings, err := substrait.JobSettings(&plan)
	if err != nil {
		return nil, nil, err
	}
	par := r.Parallelism
	if par == 0 {
		par = 1
		if v, ok := settings["parallelism"]; ok {
			if par, err = strconv.Atoi(v); err != nil {
				return nil, nil, fmt.Errorf("plan setting parallelism %q", v)
			}
		}
	}
	if par < 1 {
		return nil, nil, fmt.Errorf("parallelism must be at least 1")
	}
	name := r.Name
	if name == "" {
		name = substrait.JobName(&plan)
	}
	if n := btoi(r.Fresh) + btoi(r.FromCheckpoint != 0) + btoi(r.FromSavepoint != ""); n > 1 {
		return nil, nil, fmt.Errorf("give one of from_checkpoint, from_savepoint and fresh")
	}
	// Plan subtask 0 as a Worker would, to refuse a bad job now.
	rt := connectors.Runtime{BatchSize: 1024, Linger: time.Millisecond, Mem: memory.NewGoAllocator(), Stdout: io.Discard, Stderr: io.Discard, Parallelism: par}
	built, err := planner.BuildParallel(&plan, planner.Env{Connectors: c.cfg.Connectors, Funcs: c.funcs, Runtime: rt, Subtasks: []int{0}}, par)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		for _, p := range built.Pipelines {
			p.Sink.Close()
		}
	}()
	j := &job{req: *r, epoch: c.epoch(), name: name, plan: r.Plan, parallelism: par, state: StateCreated, created: time.Now(),
		fresh: r.Fresh, from: r.FromCheckpoint, batchSize: r.BatchSize, lingerMS: r.LingerMS, events: make(chan event, 64), interval: c.cfg.CheckpointInterval, retain: 3}
	if v, ok := settings["checkpoint_dir"]; ok {
		j.ckDir = v
	} else if c.cfg.CheckpointDir != "" {
		j.ckDir = checkpoint.JoinLoc(c.cfg.CheckpointDir, name)
	}
	if v, ok := settings["checkpoint_interval_ms"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return nil, nil, fmt.Errorf("plan setting checkpoint_interval_ms %q", v)
		}
		j.interval = time.Duration(ms) * time.Millisecond
	}
	j.incremental = settings["incremental_checkpoints"] != "false"
	if v, ok := settings["checkpoints_retained"]; ok {
		if j.retain, err = strconv.Atoi(v); err != nil || j.retain < 1 {
			return nil, nil, fmt.Errorf("plan setting checkpoints_retained %q", v)
		}
	}
	resp := &SubmitResponse{}
	if j.ckDir != "" {
		if err := engine.CheckCheckpoints(built.Pipelines); err != nil {
			return nil, nil, err
		}
		if j.ckDir, err = checkpoint.AbsLoc(j.ckDir); err != nil {
			return nil, nil, err
		}
		if j.store, err = checkpoint.NewStore(j.ckDir, checkpoint.Options{}); err != nil {
			return nil, nil, err
		}
		if j.fingerprint, err = substrait.Fingerprint(&plan); err != nil {
			return nil, nil, err
		}
		if j.stateOps, err = planner.StateOperators(&plan, planner.Env{Connectors: c.cfg.Connectors, Funcs: c.funcs, Runtime: rt}); err != nil {
			return nil, nil, err
		}
		j.allowNonRestored = r.AllowNonRestoredState
		if j.spDir, err = c.savepointDir(j, settings); err != nil {
			return nil, nil, err
		}
		if r.FromSavepoint != "" {
			if j.fromSP, err = checkpoint.OpenDir(r.FromSavepoint); err != nil {
				return nil, nil, err
			}
			resp.FromSavepoint = j.fromSP.Path
		}
		resp.CheckpointDir = j.ckDir
		if !recovering {
			id, err := c.restorePoint(j)
			if err != nil {
				return nil, nil, err
			}
			resp.RestorePoint = id
		}
	} else if r.Fresh || r.FromCheckpoint != 0 || r.FromSavepoint != "" || r.AllowNonRestoredState {
		return nil, nil, fmt.Errorf("from_checkpoint, from_savepoint, fresh and allow_non_restored_state need a checkpoint directory")
	}
	j.guarantee = engine.Guarantee(built.Pipelines, j.store != nil)
	return j, resp, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func terminal(state string) bool {
	return state == StateFinished || state == StateCanceled || state == StateFailed
}

// restorePoint is the checkpoint the job's next attempt restores. The
// first attempt restores the newest completed one in the directory, or
// from's, or none when fresh; a later attempt the newest this job
// completed, else the first attempt's again.
func (c *Coordinator) restorePoint(j *job) (uint64, error) {
	if j.store == nil {
		return 0, nil
	}
	if j.based {
		c.mu.Lock()
		defer c.mu.Unlock()
		if j.latest != nil {
			return j.latest.ID, nil
		}
		return j.base, nil
	}
	if j.fresh {
		return 0, nil
	}
	if j.fromSP != nil {
		if err := j.checkRestore(j.fromSP); err != nil {
			return 0, err
		}
		return j.fromSP.ID, nil
	}
	if j.from != 0 {
		cp, err := j.store.Open(j.from)
		if err != nil {
			return 0, err
		}
		if err := j.checkRestore(cp); err != nil {
			return 0, err
		}
		return j.from, nil
	}
	id, ok, err := j.store.Latest()
	if err != nil || !ok {
		return 0, err
	}
	cp, err := j.store.Open(id)
	if err != nil {
		return 0, err
	}
	if err := j.checkRestore(cp); err != nil {
		return 0, err
	}
	return id, nil
}

// checkRestore refuses a checkpoint the job cannot restore, as a Worker
// would (checkpoint.Compare, operator by operator), before any Worker
// starts: an incompatible operator, or dropped state without
// allowNonRestored. A checkpoint of an earlier build lists no operators:
// then the plan must be the same.
func (j *job) checkRestore(cp *checkpoint.Checkpoint) error {
	m := cp.Manifest
	if m.Operators == nil {
		if m.Fingerprint != j.fingerprint {
			return fmt.Errorf("checkpoint %d in %s was taken by a different job (plan fingerprint %s, this job's is %s); submit with fresh, or give the SQL that wrote it", cp.ID, filepath.Dir(cp.Path), m.Fingerprint, j.fingerprint)
		}
		return nil
	}
	return checkpoint.Refusal(cp.ID, checkpoint.Compare(m.Operators, j.stateOps, j.allowNonRestored))
}

// end sets a job's final state.
func (c *Coordinator) end(j *job, state, reason string) {
	c.mu.Lock()
	j.state = state
	j.ended = time.Now()
	if reason != "" {
		j.failure = reason
	}
	c.mu.Unlock()
	c.logf("job_id=%s %s", j.id, state)
	c.persist(j)
	// Answer whatever still arrives.
	go func() {
		for ev := range j.events {
			if ev.reply != nil {
				ev.reply <- stopResult{err: fmt.Errorf("job %s is %s", j.id, state)}
			}
		}
	}()
}

// client is a Worker's Flight client; false: the Worker is lost.
func (c *Coordinator) client(wid string) (flight.Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.workers[wid]
	if !ok {
		return nil, false
	}
	return w.cl, true
}

// liveJob is a job that has not ended yet.
func (c *Coordinator) liveJob(id string) (*job, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[id]
	if !ok {
		return nil, fmt.Errorf("no job %s", id)
	}
	if terminal(j.state) {
		return nil, fmt.Errorf("job %s is %s", id, j.state)
	}
	return j, nil
}

// Cancel cancels a job.
func (c *Coordinator) Cancel(id string) error {
	j, err := c.liveJob(id)
	if err != nil {
		return err
	}
	reply := make(chan stopResult, 1)
	j.events <- event{kind: evCancel, reply: reply}
	r := <-reply
	return r.err
}

// StopWithSavepoint takes a savepoint (a checkpoint the sinks publish)
// into the job's savepoint directory, then stops the job; it returns the
// savepoint's path.
func (c *Coordinator) StopWithSavepoint(id string) (string, error) {
	r, err := c.Stop(id, "")
	if err != nil {
		return "", err
	}
	return r.Savepoint, nil
}

// Stop is StopWithSavepoint into dir ("": the job's savepoint directory).
func (c *Coordinator) Stop(id, dir string) (*SavepointResponse, error) {
	return c.savepoint(&SavepointRequest{Job: JobID(id), Dir: dir, Stop: true})
}
