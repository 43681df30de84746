package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
)

// The checkpoint contract lives with the operators (engine/op); the
// engine names it here for its callers.
type (
	Stateful  = op.Stateful
	Stateless = op.Stateless
	Snapshot  = op.Snapshot
	Restore   = op.Restore
)

// CheckpointedSource is a source that takes part in checkpoints. Before Run
// the runtime hands it a Barriers; for every request the source emits a
// barrier message (Kind KindBarrier, Checkpoint = the id) at a point where
// its state covers exactly the rows it emitted before the barrier. The
// runtime snapshots the source (SnapshotState) in the source's goroutine as
// it emits the barrier.
type CheckpointedSource interface {
	Source
	Stateful
	SetBarriers(b *Barriers)
}

// TwoPhaseSink is a sink that commits its output with checkpoints, which
// makes it exactly-once: rows are staged in transactions, a transaction is
// pre-committed (durable, invisible) at a barrier, recorded in the sink's
// state by SnapshotState, and published by Commit once its checkpoint is
// complete. RestoreState re-commits the transactions a restored checkpoint
// lists and discards every other staged one.
type TwoPhaseSink interface {
	Sink
	Stateful
	// StartTransactions switches the sink to two-phase commit. It is called
	// once, before RestoreState and before any row.
	StartTransactions() error
	// PreCommit closes the open transaction: everything written since the
	// previous PreCommit is staged and durable, not yet visible. It runs in
	// the sink's goroutine, at a barrier and at end of input. SnapshotState
	// then assigns the staged transactions that have no checkpoint yet to
	// the snapshot's checkpoint.
	PreCommit() error
	// Commit publishes the staged transactions of checkpoints <= id. It may
	// run in another goroutine than Write and must be idempotent.
	Commit(id uint64) error
	// Abort discards the open transaction when the job stops without
	// finishing; staged transactions stay for recovery to decide.
	Abort() error
}

// Barriers carries checkpoint barrier requests from the runtime to one
// source. Safe for concurrent use.
type Barriers struct {
	mu     sync.Mutex
	ids    []uint64
	wake   func()
	notify chan struct{}
}

// NewBarriers returns an empty request queue (tests drive sources with it).
func NewBarriers() *Barriers { return &Barriers{notify: make(chan struct{}, 1)} }

// Request asks the source for barrier id.
func (b *Barriers) Request(id uint64) {
	b.mu.Lock()
	b.ids = append(b.ids, id)
	w := b.wake
	b.mu.Unlock()
	select {
	case b.notify <- struct{}{}:
	default:
	}
	if w != nil {
		w()
	}
}

// Next takes the oldest requested barrier.
func (b *Barriers) Next() (uint64, bool) {
	if b == nil {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 {
		return 0, false
	}
	id := b.ids[0]
	b.ids = b.ids[1:]
	return id, true
}

// Pending reports whether a request waits.
func (b *Barriers) Pending() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.ids) > 0
}

// C is signalled after requests, for sources that wait in a select. It is
// nil (never ready) on a nil Barriers.
func (b *Barriers) C() <-chan struct{} {
	if b == nil {
		return nil
	}
	return b.notify
}

// SetWake registers f to be called when a request arrives (nil clears it),
// for sources blocked in a call they can cancel. If a request is already
// pending, f is called at once.
func (b *Barriers) SetWake(f func()) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.wake = f
	pending := len(b.ids) > 0
	b.mu.Unlock()
	if pending && f != nil {
		f()
	}
}

// drain drops the requests (the source finished).
func (b *Barriers) drain() []uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := b.ids
	b.ids = nil
	return ids
}

// CheckpointConfig turns checkpoints on for a job.
type CheckpointConfig struct {
	Store *checkpoint.Store
	// Interval between checkpoints (default 10 s).
	Interval time.Duration
	// Retain is how many completed checkpoints to keep (default 3).
	Retain int
	// Job and Fingerprint go into each manifest, for people. A restore
	// matches the manifest's operators with the job's by name and state
	// signature (checkpoint.Compare); only a checkpoint of an earlier
	// build, which lists no operators, must have this fingerprint.
	Job, Fingerprint string
	// AllowNonRestoredState lets a restore drop the state of operators
	// the job no longer has (Flink's --allowNonRestoredState).
	AllowNonRestoredState bool
	// Restore, when set, is the checkpoint the job resumes from.
	Restore *checkpoint.Checkpoint
	// Incremental lets operators that support it write delta parts:
	// what changed since the newest complete checkpoint
	// (docs/checkpoints.md#incremental-checkpoints).
	Incremental bool
	// MaxDeltas bounds the deltas of a chain before a full part (default
	// DefaultMaxDeltas).
	MaxDeltas int
	// MaxParallelism is the number of key groups (the store's).
	MaxParallelism int
	Mem            memory.Allocator
	// Logf receives a line per completed checkpoint and one after a
	// restore (nil: silent).
	Logf func(format string, args ...any)
	// OnComplete is called after each completed checkpoint (tests).
	OnComplete func(id uint64)
	// Cluster, when set, makes this process one of several running the
	// job (a Worker): the Coordinator begins, triggers and completes the
	// checkpoints; this process writes its subtasks' parts.
	Cluster *ClusterCheckpoints
}

// ClusterCheckpoints connects a Worker's part of a job to the
// Coordinator's checkpoints.
type ClusterCheckpoints struct {
	// Trigger delivers the checkpoints to take; the Coordinator began each
	// in the shared store (checkpoint.Store.Join).
	Trigger <-chan ClusterTrigger
	// Complete delivers the ids the Coordinator completed (manifest
	// written): the two-phase sinks publish them.
	Complete <-chan uint64
	// Ack reports this process's parts of checkpoint id and its operators
	// with state (the manifest's operators: the Coordinator unions every
	// process's).
	Ack func(id uint64, parts []checkpoint.PartInfo, ops []checkpoint.OperatorInfo, sync time.Duration) error
	// Finished is called once every local subtask has finished; the job
	// then waits for the final checkpoint (triggered once every Worker's
	// subtasks finished) to complete, so that its two-phase sinks publish
	// everything.
	Finished func()
}

// ClusterTrigger asks for checkpoint ID; Final marks the one that records
// the finished job.
type ClusterTrigger struct {
	ID    uint64
	Final bool
	// Completed is the newest checkpoint the Coordinator completed: the
	// deltas of checkpoint ID build on it even when its completion has
	// not arrived yet.
	Completed uint64
}

// component is one stateful part of the job: a source, an operator or a
// sink, named uniquely in the job.
type component struct {
	name     string
	subtask  int
	st       Stateful
	src      CheckpointedSource
	barriers *Barriers
	sink     TwoPhaseSink
	finished bool
	// sig is the state signature the manifest records for the operator.
	sig checkpoint.Signature
}

// nodeComps are the components of one node.
type nodeComps struct {
	source *component
	head   *component // binary operator
	ops    []*component
}

// pendingCP is the checkpoint being taken.
type pendingCP struct {
	id     uint64
	w      *checkpoint.Writer
	done   map[*component]bool
	start  time.Time
	failed error
	// sync is the longest synchronous part of a snapshot: how long an
	// operator stopped processing at the barrier.
	sync time.Duration
}

// DefaultMaxDeltas is how many delta parts a chain holds before the next
// snapshot of the operator is full again.
const DefaultMaxDeltas = 10

// newSnapshot is component c's snapshot into p.
func (ck *checkpointer) newSnapshot(c *component, p *pendingCP) *Snapshot {
	s := &Snapshot{ID: p.id, MaxParallelism: ck.cfg.MaxParallelism, Mem: ck.cfg.Mem,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) {
			return p.w.Part(c.name, c.subtask, slots)
		},
		Go: p.w.Go, Completed: max(ck.last, ck.known), MaxDeltas: ck.cfg.MaxDeltas}
	if s.MaxDeltas == 0 {
		s.MaxDeltas = DefaultMaxDeltas
	}
	if ck.cfg.Incremental {
		s.OpenDelta = func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error) {
			return p.w.DeltaPart(c.name, c.subtask, slots, chain)
		}
	}
	return s
}

// checkpointer coordinates the checkpoints of one job: it triggers
// barriers, collects the snapshots of every component and completes the
// checkpoint when all have written theirs.
type checkpointer struct {
	cfg   CheckpointConfig
	comps []*component
	nodes map[*Node]*nodeComps
	sinks []*component // per pipeline

	mu       sync.Mutex
	nextID   uint64
	pending  *pendingCP
	complete chan uint64 // ids whose components are all done
	last     uint64      // newest completed checkpoint
	// known is the newest checkpoint a Coordinator says it completed,
	// which this process may not have committed yet.
	known uint64
	count int
	par   int // the job's parallelism
}

var operatorNameOK = func(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
}

// stateName turns a display name into a part's operator name.
func stateName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if operatorNameOK(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := strings.TrimLeft(b.String(), ".")
	if out == "" {
		out = "op"
	}
	if len(out) > 100 {
		out = out[:100]
	}
	return out
}

// CheckCheckpoints reports why a job of these pipelines cannot take
// checkpoints (a source or an operator whose state is not snapshotted yet),
// or nil.
func CheckCheckpoints(pipes []*Pipeline) error {
	_, err := newCheckpointer(CheckpointConfig{Store: &checkpoint.Store{}}, pipes)
	return err
}

func newCheckpointer(cfg CheckpointConfig, pipes []*Pipeline) (*checkpointer, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("checkpoints: no store")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Retain <= 0 {
		cfg.Retain = 3
	}
	if cfg.MaxParallelism <= 0 {
		cfg.MaxParallelism = checkpoint.DefaultMaxParallelism
	}
	if cfg.Mem == nil {
		cfg.Mem = memory.DefaultAllocator
	}
	ck := &checkpointer{cfg: cfg, nodes: map[*Node]*nodeComps{}, complete: make(chan uint64, 4)}
	used := map[[2]any]int{} // (name, subtask): subtasks of one operator share its name
	subtask := 0
	newComp := func(display string, st Stateful, sig checkpoint.Signature) *component {
		name := stateName(display)
		used[[2]any{name, subtask}]++
		if n := used[[2]any{name, subtask}]; n > 1 {
			name = fmt.Sprintf("%s_%d", name, n)
		}
		c := &component{name: name, subtask: subtask, st: st, sig: sig}
		ck.comps = append(ck.comps, c)
		return c
	}
	sources := map[CheckpointedSource]*component{}
	var visit func(n *Node) error
	visit = func(n *Node) error {
		nc := &nodeComps{}
		ck.nodes[n] = nc
		if n.Source != nil {
			src, ok := n.Source.(CheckpointedSource)
			if !ok {
				return fmt.Errorf("checkpoints are not supported for source %s yet", sourceName(n))
			}
			if c := sources[src]; c != nil {
				nc.source = c // one table read by several nodes: one source
			} else {
				nc.source = newComp(sourceName(n), src, n.SourceSig)
				nc.source.src = src
				nc.source.barriers = NewBarriers()
				sources[src] = nc.source
			}
		}
		if n.Binary != nil {
			name := binaryName(n)
			switch b := n.Binary.(type) {
			case Stateful:
				nc.head = newComp(name, b, n.BinarySig)
			case Stateless:
			default:
				return fmt.Errorf("checkpoints are not supported for operator %s yet", name)
			}
		}
		for i, o := range n.Ops {
			name := fmt.Sprintf("op%d", i+1)
			if i < len(n.Names) {
				name = n.Names[i]
			}
			var c *component
			switch s := o.(type) {
			case Stateful:
				c = newComp(name, s, n.sigOf(i))
			case Stateless:
			default:
				return fmt.Errorf("checkpoints are not supported for operator %s yet", name)
			}
			nc.ops = append(nc.ops, c)
		}
		for _, in := range n.Inputs {
			if err := visit(in); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range pipes {
		subtask = p.Subtask
		if err := visit(p.root()); err != nil {
			return nil, err
		}
		var c *component
		switch s := p.Sink.(type) {
		case TwoPhaseSink:
			c = newComp("sink_"+p.SinkName, s, p.SinkSig)
			c.sink = s
		case Stateful:
			c = newComp("sink_"+p.SinkName, s, p.SinkSig)
		default:
			c = &component{name: "sink_" + p.SinkName, subtask: subtask} // no state: acknowledges only
		}
		ck.sinks = append(ck.sinks, c)
		ck.par = max(ck.par, p.Parallelism, 1)
	}
	return ck, nil
}

// binaryName is the name of n's binary operator: its entry after the
// chain's in Names, else its type's.
func binaryName(n *Node) string {
	if len(n.Names) > len(n.Ops) {
		return n.Names[len(n.Ops)]
	}
	return strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", n.Binary), "*op."))
}

func sourceName(n *Node) string {
	if n.SourceName != "" {
		return "source_" + n.SourceName
	}
	return "source"
}

// restore loads every component's state from cfg.Restore.
func (ck *checkpointer) restore() error {
	cp := ck.cfg.Restore
	for _, c := range ck.sinks {
		if c.sink != nil {
			if err := c.sink.StartTransactions(); err != nil {
				return err
			}
		}
	}
	if cp == nil {
		return nil
	}
	m := cp.Manifest
	if m.MaxParallelism != ck.cfg.MaxParallelism {
		return fmt.Errorf("checkpoint %d has max_parallelism %d, this job %d", m.CheckpointID, m.MaxParallelism, ck.cfg.MaxParallelism)
	}
	all := append(append([]*component{}, ck.comps...), ck.sinks...)
	restored, err := ck.match(m)
	if err != nil {
		return err
	}
	for _, c := range all {
		if c.st == nil || restored != nil && !restored[c.name] {
			continue
		}
		r := &Restore{ID: m.CheckpointID, MaxParallelism: m.MaxParallelism, Parallelism: ck.par, Subtask: c.subtask}
		for _, pi := range cp.PartsOf(c.name) {
			part, err := cp.ReadPart(pi.Operator, pi.Subtask)
			if err != nil {
				return err
			}
			r.Parts = append(r.Parts, part)
		}
		err := c.st.RestoreState(r)
		for _, p := range r.Parts {
			p.Release()
		}
		if err != nil {
			return fmt.Errorf("restoring %s from checkpoint %d: %w", c.name, m.CheckpointID, err)
		}
	}
	ck.last = m.CheckpointID
	return nil
}

// match decides which operators restore their state from checkpoint m:
// those the manifest lists with the same state signature
// (checkpoint.Compare; new ones start fresh, incompatible ones and, unless
// AllowNonRestoredState, dropped ones refuse the restore). A manifest of
// an earlier build lists no operators: then the plan's fingerprint must
// match and every operator restores (nil).
func (ck *checkpointer) match(m *checkpoint.Manifest) (map[string]bool, error) {
	if m.Operators == nil {
		if m.Fingerprint != ck.cfg.Fingerprint {
			return nil, fmt.Errorf("checkpoint %d was taken by a different job (plan fingerprint %s, this job's is %s); start with --fresh, or give the SQL that wrote it", m.CheckpointID, m.Fingerprint, ck.cfg.Fingerprint)
		}
		known := map[string]bool{}
		for _, o := range ck.operators() {
			known[o.Operator] = true
		}
		for _, p := range m.Parts {
			if !known[p.Operator] {
				return nil, fmt.Errorf("checkpoint %d holds state of operator %s, which this job does not have", m.CheckpointID, p.Operator)
			}
		}
		return nil, nil
	}
	ms := checkpoint.Compare(m.Operators, ck.operators(), ck.cfg.AllowNonRestoredState)
	if err := checkpoint.Refusal(m.CheckpointID, ms); err != nil {
		return nil, err
	}
	restored := map[string]bool{}
	var others []string
	for _, x := range ms {
		if x.Match == checkpoint.Restored {
			restored[x.Operator] = true
		} else {
			others = append(others, x.Operator+" "+x.Match.String())
		}
	}
	if len(others) > 0 && ck.cfg.Logf != nil {
		ck.cfg.Logf("checkpoint %d: %d operators restored; %s", m.CheckpointID, len(restored), strings.Join(others, ", "))
	}
	return restored, nil
}

// operators lists the job's operators with state, once per name (every
// subtask of one has its name), with their signatures: the manifest's
// operators.
func (ck *checkpointer) operators() []checkpoint.OperatorInfo {
	var out []checkpoint.OperatorInfo
	seen := map[string]bool{}
	for _, c := range append(append([]*component{}, ck.comps...), ck.sinks...) {
		if c.st == nil || seen[c.name] {
			continue
		}
		seen[c.name] = true
		out = append(out, checkpoint.OperatorInfo{Operator: c.name, Signature: c.sig})
	}
	return out
}

// trigger starts checkpoint id: it snapshots the finished components at
// once and asks the running sources for barriers. It does nothing while
// another checkpoint is pending.
func (ck *checkpointer) trigger() error {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if ck.pending != nil {
		return nil
	}
	if ck.nextID == 0 {
		id, err := ck.cfg.Store.NextID()
		if err != nil {
			return err
		}
		ck.nextID = max(id, ck.last+1)
	}
	id := ck.nextID
	ck.nextID++
	w, err := ck.cfg.Store.Begin(id)
	if err != nil {
		return err
	}
	return ck.startLocked(id, w)
}

// triggerJoined starts checkpoint id of the Coordinator's (a cluster
// job): this process writes its parts into the directory the Coordinator
// began. A checkpoint still pending here was abandoned by the Coordinator.
func (ck *checkpointer) triggerJoined(t ClusterTrigger) error {
	id := t.ID
	ck.mu.Lock()
	defer ck.mu.Unlock()
	ck.known = max(ck.known, t.Completed)
	if p := ck.pending; p != nil {
		if p.id == id {
			return nil
		}
		p.w.Abort()
		ck.pending = nil
	}
	w, err := ck.cfg.Store.Join(id)
	if err != nil {
		return err
	}
	return ck.startLocked(id, w)
}

func (ck *checkpointer) startLocked(id uint64, w *checkpoint.Writer) error {
	p := &pendingCP{id: id, w: w, done: map[*component]bool{}, start: time.Now()}
	ck.pending = p
	for _, c := range ck.all() {
		if c.finished {
			if err := ck.snapshotLocked(c, p); err != nil {
				return err
			}
		}
	}
	for _, c := range ck.comps {
		if c.src != nil && !c.finished {
			c.barriers.Request(id)
		}
	}
	ck.checkDoneLocked()
	return nil
}

func (ck *checkpointer) all() []*component {
	return append(append([]*component{}, ck.comps...), ck.sinks...)
}

// snapshotLocked writes c's state into p and marks it done.
func (ck *checkpointer) snapshotLocked(c *component, p *pendingCP) error {
	if p.done[c] {
		return nil
	}
	if c.st != nil {
		if err := c.st.SnapshotState(ck.newSnapshot(c, p)); err != nil {
			p.failed = err
			return fmt.Errorf("checkpoint %d: %s: %w", p.id, c.name, err)
		}
	}
	p.done[c] = true
	return nil
}

// snapshot is a component's snapshot at barrier id, in its own goroutine.
func (ck *checkpointer) snapshot(c *component, id uint64) error {
	ck.mu.Lock()
	p := ck.pending
	ck.mu.Unlock()
	if p == nil || p.id != id {
		return nil // an aborted checkpoint's barrier
	}
	var took time.Duration
	if c != nil && c.st != nil {
		ck.mu.Lock()
		s := ck.newSnapshot(c, p)
		ck.mu.Unlock()
		start := time.Now()
		if err := c.st.SnapshotState(s); err != nil {
			return fmt.Errorf("checkpoint %d: %s: %w", id, c.name, err)
		}
		took = time.Since(start)
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if c != nil && ck.pending == p {
		p.sync = max(p.sync, took)
		p.done[c] = true
		ck.checkDoneLocked()
	}
	return nil
}

// finish marks c finished: its goroutine will not touch it again. A
// pending checkpoint it has not written yet gets its final state now.
func (ck *checkpointer) finish(c *component) error {
	if c == nil {
		return nil
	}
	ck.mu.Lock()
	defer ck.mu.Unlock()
	c.finished = true
	if c.barriers != nil {
		c.barriers.drain()
	}
	if p := ck.pending; p != nil && !p.done[c] {
		if err := ck.snapshotLocked(c, p); err != nil {
			return err
		}
		ck.checkDoneLocked()
	}
	return nil
}

func (ck *checkpointer) checkDoneLocked() {
	p := ck.pending
	if p == nil || p.failed != nil {
		return
	}
	for _, c := range ck.all() {
		if !p.done[c] {
			return
		}
	}
	select {
	case ck.complete <- p.id:
	default:
	}
}

// completeCP writes the manifest of the pending checkpoint id, prunes old
// ones and commits the two-phase sinks.
func (ck *checkpointer) completeCP(id uint64) error {
	ck.mu.Lock()
	p := ck.pending
	if p == nil || p.id != id {
		ck.mu.Unlock()
		return nil
	}
	ck.pending = nil
	ck.mu.Unlock()
	if cl := ck.cfg.Cluster; cl != nil {
		parts, err := p.w.Parts()
		if err != nil {
			return err
		}
		return cl.Ack(id, parts, ck.operators(), p.sync)
	}
	err := p.w.Commit(checkpoint.Meta{Job: ck.cfg.Job, Fingerprint: ck.cfg.Fingerprint, Operators: ck.operators(),
		Properties: map[string]string{checkpoint.PropSyncDuration: strconv.FormatFloat(float64(p.sync.Microseconds())/1000, 'f', 3, 64)}})
	if err != nil {
		return err
	}
	if err := ck.cfg.Store.Retain(ck.cfg.Retain); err != nil {
		return err
	}
	if err := ck.commit(id); err != nil {
		return err
	}
	if ck.cfg.Logf != nil {
		ck.cfg.Logf("checkpoint %d complete (%d parts, %s, longest synchronous snapshot %s)", id, len(p.done), time.Since(p.start).Round(time.Millisecond), p.sync.Round(10*time.Microsecond))
	}
	return nil
}

// commit publishes what the two-phase sinks staged up to the completed
// checkpoint id.
func (ck *checkpointer) commit(id uint64) error {
	ck.mu.Lock()
	if id <= ck.last {
		ck.mu.Unlock()
		return nil
	}
	ck.last = id
	ck.count++
	ck.mu.Unlock()
	for _, c := range ck.sinks {
		if c.sink != nil {
			if err := c.sink.Commit(id); err != nil {
				return fmt.Errorf("checkpoint %d: committing %s: %w", id, c.name, err)
			}
		}
	}
	if ck.cfg.OnComplete != nil {
		ck.cfg.OnComplete(id)
	}
	return nil
}

// abort drops a pending checkpoint (the job stops).
func (ck *checkpointer) abort() {
	ck.mu.Lock()
	p := ck.pending
	ck.pending = nil
	ck.mu.Unlock()
	if p != nil {
		p.w.Abort()
	}
}

// guarantee states the job's end-to-end guarantee.
func guaranteeOf(pipes []*Pipeline, checkpoints bool) string {
	if !checkpoints {
		return "NONE (no checkpoints: a crash loses the job's state; run with --checkpoint-dir for exactly-once state)"
	}
	var limited []string
	seen := map[string]bool{}
	for _, p := range pipes {
		if _, ok := p.Sink.(exchangeOut); ok {
			continue
		}
		if _, ok := p.Sink.(TwoPhaseSink); !ok && !seen[p.SinkName] {
			seen[p.SinkName] = true
			limited = append(limited, "'"+p.SinkName+"'")
		}
	}
	if len(limited) == 0 {
		return "EXACTLY_ONCE"
	}
	sort.Strings(limited)
	return "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink " + strings.Join(limited, ", ") + ")"
}

// Guarantee states the end-to-end guarantee of a job of these pipelines,
// with or without checkpoints, e.g. "EXACTLY_ONCE" or
// "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'print')".
func Guarantee(pipes []*Pipeline, checkpoints bool) string { return guaranteeOf(pipes, checkpoints) }

// finalJoined runs when every local component has finished in a cluster
// job: it tells the Coordinator, acknowledges what is pending, and waits
// until a checkpoint triggered after that completes (the Coordinator's
// final one), which the two-phase sinks then publish.
func (ck *checkpointer) finalJoined(done <-chan struct{}) error {
	cl := ck.cfg.Cluster
	cl.Finished()
	var final uint64
	for {
		select {
		case id := <-ck.complete:
			if err := ck.completeCP(id); err != nil {
				return err
			}
		case t := <-cl.Trigger:
			if t.Final {
				final = t.ID
			}
			if err := ck.triggerJoined(t); err != nil {
				return err
			}
		case id := <-cl.Complete:
			if err := ck.commit(id); err != nil {
				return err
			}
			if final != 0 && id >= final {
				return nil
			}
		case <-done:
			return context.Canceled
		}
	}
}

// final runs when every component has finished: it completes a pending
// checkpoint (complete by now) and takes one more that records the
// finished job, so that a restart from it does nothing twice.
func (ck *checkpointer) final() error {
	for {
		select {
		case id := <-ck.complete:
			if err := ck.completeCP(id); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	ck.mu.Lock()
	p := ck.pending
	ck.mu.Unlock()
	if p != nil {
		return fmt.Errorf("checkpoint %d: incomplete although the job finished", p.id)
	}
	if err := ck.trigger(); err != nil {
		return err
	}
	select {
	case id := <-ck.complete:
		return ck.completeCP(id)
	default:
		return fmt.Errorf("final checkpoint: incomplete although the job finished")
	}
}

// StateOperators lists the operators with state of a job as its
// checkpoints' manifests do, from pipelines that planner.Validate built
// (no source or sink opened, one subtask): `clink savepoint-check`
// compares them with a checkpoint's. Names are given as newCheckpointer
// gives them. A sink is listed whether or not it keeps state, which only
// the opened sink knows (a two-phase one does).
func StateOperators(pipes []*Pipeline) []checkpoint.OperatorInfo {
	var out []checkpoint.OperatorInfo
	used := map[string]int{}
	add := func(display string, sig checkpoint.Signature) {
		name := stateName(display)
		used[name]++
		if n := used[name]; n > 1 {
			name = fmt.Sprintf("%s_%d", name, n)
		}
		out = append(out, checkpoint.OperatorInfo{Operator: name, Signature: sig})
	}
	for pi, p := range pipes {
		// A table read twice by one root is one source (the planner's
		// reads); unopened, it is known by its name.
		sources := map[any]bool{}
		var visit func(n *Node)
		visit = func(n *Node) {
			if n.Binary == nil && len(n.Inputs) == 0 {
				var key any = [2]any{pi, n.SourceName}
				if n.Source != nil {
					key = n.Source
				}
				if !sources[key] {
					sources[key] = true
					add(sourceName(n), n.SourceSig)
				}
			}
			if _, ok := n.Binary.(Stateful); ok {
				add(binaryName(n), n.BinarySig)
			}
			for i, o := range n.Ops {
				if _, ok := o.(Stateful); ok {
					name := fmt.Sprintf("op%d", i+1)
					if i < len(n.Names) {
						name = n.Names[i]
					}
					add(name, n.sigOf(i))
				}
			}
			for _, in := range n.Inputs {
				visit(in)
			}
		}
		visit(p.root())
		add("sink_"+p.SinkName, p.SinkSig)
	}
	return out
}
