package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/telemetry"
)

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// ID names the Worker (default: a random one).
	ID string
	// Coordinator is the Coordinator's Flight address. With highly
	// available Coordinators, Coordinators lists all of them and HADir
	// (when the Worker sees it) names the leader: the Worker registers
	// with whichever leads and follows leadership changes.
	Coordinator  string
	Coordinators []string
	HADir        string
	// FenceTimeout: when no leader has answered for this long, the Worker
	// cancels its tasks (their sinks abort their open transactions), as
	// a new leader will run them elsewhere. Default: three heartbeats
	// plus 5 s (the default lease).
	FenceTimeout time.Duration
	// HTTPAddr serves /healthz, /readyz and /metrics ("" or "off": none;
	// "127.0.0.1:0" picks a port, logged).
	HTTPAddr string
	// Addr is where this Worker listens for control calls and shuffle
	// streams ("127.0.0.1:0" picks a port).
	Addr string
	// Slots is how many subtasks of each job's pipelines it runs at once.
	Slots int
	// Token is the bearer token (CLINK_AUTH_TOKEN), or empty.
	Token string
	// TLS, when set, is mutual TLS on every connection: to the
	// Coordinator, from it, and the shuffle between Workers.
	TLS *tlsconf.Config
	// Connectors opens the jobs' tables.
	Connectors *connectors.Registry
	// Stdout receives what print sinks write; Log receives log lines.
	Stdout, Log io.Writer
	// OTel turns OpenTelemetry on as the OTEL_* environment configures it
	// (package telemetry): the Worker's /metrics over OTLP.
	OTel bool
	// LogFormat is text (default) or json (telemetry.NewLogger).
	LogFormat string
}

// Worker runs subtasks the Coordinator deploys.
type Worker struct {
	cfg   WorkerConfig
	srv   *cflight.Server
	funcs *kernels.Registry

	mu sync.Mutex
	// coord is the Coordinator registered with (or being tried), at
	// coordAddr; epoch the newest leader epoch seen: calls of older ones
	// are refused.
	coord     flight.Client
	coordAddr string
	epoch     uint64
	// lastOK is when a Coordinator last answered a heartbeat or
	// registration; registered: the Worker is registered (for /readyz);
	reg *prometheus.Registry // /metrics, and OTLP metrics
	tel *telemetry.Telemetry
	log *slog.Logger
	// selfFences counts self-fencings.
	lastOK     time.Time
	registered bool
	selfFences int
	hl         net.Listener
	attempts   map[attemptRef]*attempt
	peers      map[string]flight.Client
	beat       time.Duration
	// vanish (tests) makes Run end without leaving, as a killed process.
	vanish bool
}

// attempt is one deployment of a job on this Worker.
type attempt struct {
	ref    attemptRef
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	trig   chan engine.ClusterTrigger
	compl  chan uint64
	live   *engine.LiveStats

	mu        sync.Mutex
	committed uint64 // the newest checkpoint the sinks published
	cancelled bool   // by the Coordinator
	changed   chan struct{}
}

// NewWorker starts a Worker's Flight endpoint; Run registers it and runs.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Slots < 1 {
		return nil, fmt.Errorf("--slots must be at least 1")
	}
	if cfg.ID == "" {
		var b [4]byte
		rand.Read(b[:])
		cfg.ID = "worker-" + hex.EncodeToString(b[:])
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	srv, err := cflight.NewServer(cfg.Addr, cfg.Token, cflight.WithTLS(cfg.TLS))
	if err != nil {
		return nil, err
	}
	if err := checkHADir(cfg.HADir); err != nil {
		srv.Shutdown()
		return nil, err
	}
	cfg.HADir = strings.TrimPrefix(cfg.HADir, "file://")
	if cfg.Coordinator == "" && len(cfg.Coordinators) == 0 && cfg.HADir == "" {
		srv.Shutdown()
		return nil, fmt.Errorf("a Worker needs a Coordinator's address, or --ha-dir")
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	w := &Worker{cfg: cfg, srv: srv, funcs: funcs, attempts: map[attemptRef]*attempt{}, peers: map[string]flight.Client{}, lastOK: time.Now(),
		reg: prometheus.NewRegistry(), tel: telemetry.Off()}
	w.reg.MustRegister(&workerCollector{w: w})
	if w.log, err = telemetry.NewLogger(cfg.Log, cfg.LogFormat, "worker "+cfg.ID); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if cfg.OTel {
		if w.tel, err = telemetry.Start(context.Background(), telemetry.Config{Service: "clink-worker", Gatherer: w.reg}); err != nil {
			srv.Shutdown()
			return nil, err
		}
	}
	if err := w.dialCoordinator(w.candidates()[0]); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if cfg.HTTPAddr != "" && cfg.HTTPAddr != "off" {
		if w.hl, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			srv.Shutdown()
			return nil, fmt.Errorf("--http-addr: %v", err)
		}
	}
	handle(srv, actDeploy, w.deploy)
	handle(srv, actTrigger, w.trigger)
	handle(srv, actComplete, w.complete)
	handle(srv, actCancel, w.cancelAttempt)
	return w, nil
}

// ID is the Worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Addr is the Worker's Flight address.
func (w *Worker) Addr() string { return w.srv.Addr() }

func (w *Worker) logf(format string, args ...any) {
	telemetry.Line(w.log, fmt.Sprintf(format, args...))
}

// Run registers with the Coordinator (the leader, among HA ones) and
// heartbeats until ctx ends, then cancels every attempt. It follows a
// change of leader: a heartbeat that fails, or that a standby refuses,
// sends it to register with the next candidate; registering with a new
// leader cancels what the previous one deployed (the new leader
// redeploys its jobs). With no leader answering for FenceTimeout it
// cancels its tasks on its own.
func (w *Worker) Run(ctx context.Context) error {
	go w.srv.Serve()
	defer w.srv.Shutdown()
	if w.hl != nil {
		go w.serveHTTP(w.hl)
		defer w.hl.Close()
		w.logf("http on %s (/metrics, /healthz, /readyz)", w.hl.Addr())
	}
	defer w.stopAll()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := w.tel.Shutdown(sctx); err != nil {
			w.logf("flushing telemetry: %v", err)
		}
		cancel()
	}()
	if d := w.tel.Describe(); d != "off" {
		w.logf("OpenTelemetry: exporting %s over OTLP", d)
	}
	registered := false
	tried := 0 // candidates tried since the last registration
	// lostSince: the first failed heartbeat since the last answer;
	// lostWarned: the warning about it was given.
	var lostSince time.Time
	lostWarned := false
	for {
		if !registered {
			cands := w.candidates()
			addr := cands[tried%len(cands)]
			tried++
			if addr != w.coordAddrNow() {
				if err := w.dialCoordinator(addr); err != nil {
					w.logf("cannot dial %s: %v", addr, err)
				}
			}
			var resp registerResp
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := call(rctx, w.leader(), actRegister, &registerReq{ID: w.cfg.ID, Addr: w.Addr(), Slots: w.cfg.Slots}, &resp)
			cancel()
			if err == nil {
				registered, tried = true, 0
				w.mu.Lock()
				w.lastOK = time.Now()
				newer := resp.Epoch > w.epoch
				w.epoch = max(w.epoch, resp.Epoch)
				w.mu.Unlock()
				if newer && w.running() > 0 {
					w.logf("the leader is now %s (epoch %d): cancelling the tasks of the previous leader", addr, resp.Epoch)
					w.stopAll()
				}
				w.mu.Lock()
				w.beat = time.Duration(resp.HeartbeatMS) * time.Millisecond
				w.mu.Unlock()
				if resp.Epoch != 0 {
					w.logf("registered with %s (leader epoch %d): %d slots, serving %s", addr, resp.Epoch, w.cfg.Slots, w.Addr())
				} else {
					w.logf("registered with %s: %d slots, serving %s", addr, w.cfg.Slots, w.Addr())
				}
			} else if ctx.Err() == nil && (len(cands) == 1 || tried <= len(cands)) {
				w.logf("cannot register with %s: %v (retrying)", addr, err)
			}
		} else {
			var resp heartbeatResp
			hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			err := call(hctx, w.leader(), actHeartbeat, &heartbeatReq{ID: w.cfg.ID, Tasks: w.stats()}, &resp)
			cancel()
			if err == nil && !lostSince.IsZero() {
				if lostWarned {
					w.logf("the Coordinator at %s answers again after %s", w.coordAddrNow(), time.Since(lostSince).Round(100*time.Millisecond))
				}
				lostSince, lostWarned = time.Time{}, false
			}
			switch {
			case err == nil && !resp.Known:
				// The Coordinator does not know us (it restarted, or
				// declared us lost): what we run is orphaned.
				w.logf("the Coordinator does not know this Worker: cancelling its tasks, registering again")
				w.stopAll()
				registered = false
				continue
			case err == nil:
				w.mu.Lock()
				w.lastOK = time.Now()
				w.mu.Unlock()
			case ctx.Err() == nil && (errors.Is(err, ErrNotLeader) || strings.Contains(err.Error(), ErrNotLeader.Error()) || cflight.Unreachable(err) || cflight.TimedOut(err)) && w.multi():
				// A leader that does not answer in time (a stopped process, a
				// partition) is looked past too: if it still leads, the next
				// candidates name it and the Worker comes back.
				w.logf("the Coordinator at %s no longer leads (%v): looking for the leader", w.coordAddrNow(), err)
				registered = false
			case ctx.Err() == nil:
				// One Coordinator: it is retried; say so once it has not
				// answered for three heartbeats.
				if lostSince.IsZero() {
					lostSince = time.Now()
				}
				if d := time.Since(lostSince); !lostWarned && d >= 3*w.heartbeat() {
					w.logf("warning: the Coordinator at %s has not answered for %s: %v (retrying; its tasks run on)", w.coordAddrNow(), d.Round(100*time.Millisecond), err)
					lostWarned = true
				}
			}
		}
		w.mu.Lock()
		w.registered = registered
		w.mu.Unlock()
		w.selfFence()
		w.mu.Lock()
		beat := w.beat
		w.mu.Unlock()
		if beat <= 0 {
			beat = 500 * time.Millisecond
		}
		if !registered && tried > 0 && tried%len(w.candidates()) != 0 {
			beat = 50 * time.Millisecond // the next candidate soon
		}
		select {
		case <-ctx.Done():
			w.stopAll()
			if registered && !w.vanish {
				// Leave, so that the Coordinator reschedules at once.
				lctx, cancel := context.WithTimeout(context.Background(), time.Second)
				call(lctx, w.leader(), actLeave, &registerReq{ID: w.cfg.ID}, nil)
				cancel()
			}
			return nil
		case <-time.After(beat):
		}
	}
}

// candidates are the Coordinators to register with, the leader named in
// the HA directory first.
func (w *Worker) candidates() []string {
	var out []string
	if w.cfg.HADir != "" {
		if r, err := readLease(w.cfg.HADir); err == nil && r != nil && !r.expired(time.Now()) {
			out = append(out, r.Flight)
		}
	}
	if w.cfg.Coordinator != "" {
		out = append(out, w.cfg.Coordinator)
	}
	for _, a := range w.cfg.Coordinators {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = append(out, "127.0.0.1:6123")
	}
	return out
}

// multi: there may be another Coordinator to turn to.
func (w *Worker) multi() bool { return w.cfg.HADir != "" || len(w.candidates()) > 1 }

func (w *Worker) dialCoordinator(addr string) error {
	cl, err := cflight.Dial(addr, w.cfg.Token, cflight.WithTLS(w.cfg.TLS))
	if err != nil {
		return err
	}
	w.mu.Lock()
	old := w.coord
	w.coord, w.coordAddr = cl, addr
	w.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// leader is the client of the Coordinator registered with.
func (w *Worker) leader() flight.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.coord
}

func (w *Worker) coordAddrNow() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.coordAddr
}

func (w *Worker) running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.attempts)
}

// fenceTimeout is FenceTimeout or its default.
func (w *Worker) fenceTimeout() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fenceTimeoutLocked()
}

func (w *Worker) fenceTimeoutLocked() time.Duration {
	if w.cfg.FenceTimeout > 0 {
		return w.cfg.FenceTimeout
	}
	beat := w.beat
	if beat <= 0 {
		beat = 500 * time.Millisecond
	}
	return 3*beat + 5*time.Second
}

// selfFence cancels the Worker's tasks when no Coordinator has answered
// for the fence timeout: a new leader deploys them again elsewhere, and
// sinks must not go on writing into transactions nobody will commit.
func (w *Worker) selfFence() {
	w.mu.Lock()
	quiet := time.Since(w.lastOK)
	n := len(w.attempts)
	limit := w.fenceTimeoutLocked()
	if n > 0 && quiet > limit {
		w.selfFences++
	}
	w.mu.Unlock()
	if n == 0 || quiet <= limit {
		return
	}
	w.logf("self-fencing: no leader answered for %s (timeout %s): cancelling %d attempt(s)", quiet.Round(time.Millisecond), w.fenceTimeout(), n)
	w.stopAll()
}

// checkEpoch refuses a call of an older leader epoch than the newest seen
// (a fenced Coordinator's); a newer one becomes the newest, and the
// attempts of older epochs are cancelled: their leader is gone.
func (w *Worker) checkEpoch(ref attemptRef) error {
	w.mu.Lock()
	if ref.Epoch < w.epoch {
		cur := w.epoch
		w.mu.Unlock()
		return fmt.Errorf("job %s attempt %d: refused: leader epoch %d is older than epoch %d, the newest this Worker has seen (the caller is no longer the leader)", ref.Job, ref.Attempt, ref.Epoch, cur)
	}
	var old []*attempt
	if ref.Epoch > w.epoch {
		w.epoch = ref.Epoch
		for r, a := range w.attempts {
			if r.Epoch < ref.Epoch {
				old = append(old, a)
			}
		}
	}
	w.mu.Unlock()
	for _, a := range old {
		w.logf("job_id=%s attempt %d: cancelled: its leader epoch %d is over", a.ref.Job, a.ref.Attempt, a.ref.Epoch)
		a.mu.Lock()
		a.cancelled = true
		a.mu.Unlock()
		a.cancel()
		<-a.done
	}
	return nil
}

func (w *Worker) stopAll() {
	w.mu.Lock()
	var as []*attempt
	for _, a := range w.attempts {
		as = append(as, a)
	}
	w.mu.Unlock()
	for _, a := range as {
		a.cancel()
		<-a.done
	}
}

// stats gathers the running attempts' counters (refreshed for the next
// beat).
func (w *Worker) stats() []taskStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []taskStats
	for ref, a := range w.attempts {
		ts := taskStats{Job: ref.Job, Attempt: ref.Attempt}
		for _, o := range a.live.Snapshot() {
			ts.Ops = append(ts.Ops, opStats{Name: o.Name, Subtask: o.Subtask, RowsIn: o.RowsIn, RowsOut: o.RowsOut,
				Watermark: o.Watermark, Late: o.Extra["late_rows_dropped"], Skipped: o.Extra["records_skipped"] + o.Extra["records_dead_lettered"]})
		}
		sort.Slice(ts.Ops, func(i, j int) bool {
			if ts.Ops[i].Name != ts.Ops[j].Name {
				return ts.Ops[i].Name < ts.Ops[j].Name
			}
			return ts.Ops[i].Subtask < ts.Ops[j].Subtask
		})
		a.live.Refresh()
		out = append(out, ts)
	}
	return out
}

func (w *Worker) peer(addr string) (flight.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cl, ok := w.peers[addr]; ok {
		return cl, nil
	}
	cl, err := cflight.Dial(addr, w.cfg.Token, cflight.WithTLS(w.cfg.TLS))
	if err != nil {
		return nil, err
	}
	w.peers[addr] = cl
	return cl, nil
}

// deploy plans the subtasks it was given and starts them.
func (w *Worker) deploy(_ context.Context, req *deployReq) (any, error) {
	if err := w.checkEpoch(req.attemptRef); err != nil {
		return nil, err
	}
	var plan pb.Plan
	if err := substrait.UnmarshalPlan(req.Plan, &plan); err != nil {
		return nil, fmt.Errorf("job %s: bad plan: %v", req.Job, err)
	}
	batch, linger := req.BatchSize, time.Duration(req.LingerMS)*time.Millisecond
	if batch <= 0 {
		batch = 8192
	}
	if linger <= 0 {
		linger = 20 * time.Millisecond
	}
	rt := connectors.Runtime{BatchSize: batch, Linger: linger, Mem: memory.NewGoAllocator(), Stdout: w.cfg.Stdout,
		Stderr: telemetry.Writer(w.log.With("job_id", req.Job, "attempt", req.Attempt)), Parallelism: req.Parallelism}
	job, err := planner.BuildParallel(&plan, planner.Env{Connectors: w.cfg.Connectors, Funcs: w.funcs, Runtime: rt, Subtasks: req.Subtasks}, req.Parallelism)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", req.Job, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &attempt{ref: req.attemptRef, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		trig: make(chan engine.ClusterTrigger, 16), compl: make(chan uint64, 16), live: engine.NewLiveStats(), changed: make(chan struct{})}
	for _, p := range job.Pipelines {
		p.Live = a.live
	}
	var cfg *engine.CheckpointConfig
	if cs := req.Checkpoints; cs != nil {
		store, err := checkpoint.NewStore(cs.Dir, checkpoint.Options{})
		if err != nil {
			cancel()
			return nil, err
		}
		cfg = &engine.CheckpointConfig{Store: store, Job: req.Name, Fingerprint: cs.Fingerprint, AllowNonRestoredState: cs.AllowNonRestoredState, Incremental: !cs.Full, Mem: rt.Mem,
			Cluster: &engine.ClusterCheckpoints{
				Trigger:  a.trig,
				Complete: a.compl,
				Ack: func(id uint64, parts []checkpoint.PartInfo, ops []checkpoint.OperatorInfo, sync time.Duration) error {
					return call(ctx, w.leader(), actAck, &ackReq{attemptRef: a.ref, Worker: w.cfg.ID, ID: id, Parts: parts, Operators: ops,
						SyncMS: float64(sync.Microseconds()) / 1000}, nil)
				},
				Finished: func() {
					if err := call(ctx, w.leader(), actFinished, &workerReport{attemptRef: a.ref, Worker: w.cfg.ID}, nil); err != nil && ctx.Err() == nil {
						w.logf("job_id=%s: reporting finished subtasks: %v", a.ref.Job, err)
					}
				},
			},
			OnComplete: a.committedUpTo,
			Logf: func(format string, args ...any) {
				w.logf("job_id=%s attempt %d: "+format, append([]any{a.ref.Job, a.ref.Attempt}, args...)...)
			},
		}
		if cs.Restore != 0 {
			open := func() (*checkpoint.Checkpoint, error) { return store.Open(cs.Restore) }
			if cs.RestoreDir != "" {
				open = func() (*checkpoint.Checkpoint, error) { return checkpoint.OpenDir(cs.RestoreDir) }
			}
			cp, err := open()
			if err != nil {
				cancel()
				return nil, err
			}
			cfg.Restore = cp
		}
	}
	local := map[int]bool{}
	for _, s := range req.Subtasks {
		local[s] = true
	}
	w.mu.Lock()
	if _, dup := w.attempts[a.ref]; dup {
		w.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("job %s attempt %d is already deployed here", req.Job, req.Attempt)
	}
	w.attempts[a.ref] = a
	w.mu.Unlock()

	// Edges between this Worker and another travel over Flight.
	var senders sync.WaitGroup
	var sendErr error
	var sendMu sync.Mutex
	for _, e := range engine.Edges(job.Pipelines) {
		key := cflight.EdgeKey{Job: req.Job, Attempt: req.Attempt, Exchange: e.Exchange, From: e.From, To: e.To}
		switch {
		case local[e.From] && !local[e.To]:
			cl, err := w.peer(req.Peers[e.To])
			if err != nil {
				cancel()
				return nil, err
			}
			senders.Add(1)
			go func() {
				defer senders.Done()
				if err := cflight.Send(ctx, cl, key, e.C, rt.Mem); err != nil && ctx.Err() == nil {
					sendMu.Lock()
					sendErr = err
					sendMu.Unlock()
					cancel()
				}
			}()
		case !local[e.From] && local[e.To]:
			w.srv.Accept(ctx, key, e.C)
		}
	}
	restore := "fresh"
	if cfg != nil && cfg.Restore != nil {
		restore = fmt.Sprintf("restore point: checkpoint %d", cfg.Restore.ID)
	}
	w.logf("job_id=%s attempt %d: running subtasks %v of %d (%s)", req.Job, req.Attempt, req.Subtasks, req.Parallelism, restore)
	go func() {
		defer close(a.done)
		stats, err := engine.RunJob(ctx, job.Pipelines, cfg)
		// Cancelled before it ended: by the Coordinator, a broken shuffle
		// stream, or this Worker shutting down; never a finished attempt.
		interrupted := ctx.Err() != nil
		if err == nil && ctx.Err() == nil {
			senders.Wait() // the last messages, end of input, reach the peers
		}
		cancel()
		senders.Wait()
		sendMu.Lock()
		if sendErr != nil && (err == nil || errors.Is(err, context.Canceled)) {
			err = sendErr
		}
		sendMu.Unlock()
		if err == nil && interrupted {
			err = fmt.Errorf("worker %s stopped before its subtasks finished", w.cfg.ID)
		}
		stopped := a.stopped()
		w.mu.Lock()
		delete(w.attempts, a.ref)
		w.mu.Unlock()
		if stopped {
			w.logf("job_id=%s attempt %d: cancelled", req.Job, req.Attempt)
			return
		}
		rep := &workerReport{attemptRef: a.ref, Worker: w.cfg.ID}
		for _, st := range stats {
			if st != nil {
				rep.Late += st.Total("late_rows_dropped")
				rep.Skipped += st.Total("records_skipped") + st.Total("records_dead_lettered")
			}
		}
		if err != nil {
			rep.Error = err.Error()
			w.logf("job_id=%s attempt %d: failed: %v", req.Job, req.Attempt, err)
		} else {
			w.logf("job_id=%s attempt %d: subtasks finished", req.Job, req.Attempt)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		if err := call(rctx, w.leader(), actDone, rep, nil); err != nil {
			w.logf("job_id=%s: reporting the end of attempt %d: %v", req.Job, req.Attempt, err)
		}
	}()
	return nil, nil
}

// stopped reports whether the attempt was cancelled by the Coordinator.
func (a *attempt) stopped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cancelled
}

func (a *attempt) committedUpTo(id uint64) {
	a.mu.Lock()
	if id > a.committed {
		a.committed = id
	}
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

func (w *Worker) lookup(ref attemptRef) (*attempt, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.attempts[ref]
	if !ok {
		return nil, fmt.Errorf("job %s attempt %d is not running here", ref.Job, ref.Attempt)
	}
	return a, nil
}

func (w *Worker) trigger(ctx context.Context, req *triggerReq) (any, error) {
	if err := w.checkEpoch(req.attemptRef); err != nil {
		return nil, err
	}
	a, err := w.lookup(req.attemptRef)
	if err != nil {
		return nil, err
	}
	select {
	case a.trig <- engine.ClusterTrigger{ID: req.ID, Final: req.Final, Completed: req.Completed}:
		return nil, nil
	case <-a.ctx.Done():
		return nil, fmt.Errorf("job %s attempt %d stopped", req.Job, req.Attempt)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// complete hands a completed checkpoint to the two-phase sinks and
// answers once they published it (or the attempt ended).
func (w *Worker) complete(ctx context.Context, req *triggerReq) (any, error) {
	if err := w.checkEpoch(req.attemptRef); err != nil {
		return nil, err
	}
	a, err := w.lookup(req.attemptRef)
	if err != nil {
		return nil, err
	}
	select {
	case a.compl <- req.ID:
	case <-a.done:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		a.mu.Lock()
		ok, ch := a.committed >= req.ID, a.changed
		a.mu.Unlock()
		if ok {
			return nil, nil
		}
		select {
		case <-ch:
		case <-a.done:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// cancelAttempt stops an attempt and answers once it stopped.
func (w *Worker) cancelAttempt(ctx context.Context, req *attemptRef) (any, error) {
	if err := w.checkEpoch(*req); err != nil {
		return nil, err
	}
	w.mu.Lock()
	a, ok := w.attempts[*req]
	w.mu.Unlock()
	if !ok {
		return nil, nil
	}
	a.mu.Lock()
	a.cancelled = true
	a.mu.Unlock()
	a.cancel()
	select {
	case <-a.done:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// heartbeat is the interval the Coordinator asked for (500 ms before it
// answered).
func (w *Worker) heartbeat() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.beat <= 0 {
		return 500 * time.Millisecond
	}
	return w.beat
}
