package logictest

// Crash-and-restore runs. A query's plan runs with checkpoints on; its
// first checkpoint's barrier is placed at a cut chosen per source (after
// the batch that reaches the source's cut row), the run goes on until every
// row after the cut has reached the sinks and been pre-committed for the
// next checkpoint, and then the process "dies" before that checkpoint
// completes. A second run restores the first checkpoint, at the same or
// another parallelism, and runs to the end. Sinks are exactly-once
// collectors (txCollector), so the rows published over both runs must be
// the rows of a straight run, as must the late and skipped counts: those of
// the first run at its cut plus those of the second.
//
// Everything here goes through the engine's own checkpoint machinery
// (engine.RunJob with a CheckpointConfig, a checkpoint.Store, Restore); the
// test only decorates the job it planned: its sources (cutSource decides
// when the runtime's barrier request reaches the real source), its stateful
// operators (cutOp reads their counters when they snapshot) and its sinks.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/checkpoint"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/connectors/print"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/vector"
)

// crashWait bounds how long the first run may take to reach its crash
// point (every sink pre-committed the rows after the cut).
const crashWait = 30 * time.Second

// internal reports whether x is one of the engine's own parts (the ends of
// a keyed exchange), which the test leaves alone.
func internal(x any) bool {
	t := reflect.TypeOf(x)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && t.PkgPath() == reflect.TypeOf(engine.Pipeline{}).PkgPath()
}

// nodes are a pipeline's nodes, the root first; a linear pipeline gets
// its Root set so that its node can be decorated.
func nodes(p *engine.Pipeline) []*engine.Node {
	if p.Root == nil {
		p.Root = &engine.Node{Source: p.Source, Ops: p.Ops, Names: p.Names}
	}
	var out []*engine.Node
	var walk func(n *engine.Node)
	walk = func(n *engine.Node) {
		out = append(out, n)
		for _, in := range n.Inputs {
			walk(in)
		}
	}
	walk(p.Root)
	return out
}

// eachSource calls f once per input source of the job (a source read by
// several nodes once), in a fixed order, with a key naming it: pipeline,
// source table and subtask. f returns the source to put in its place.
func eachSource(pipes []*engine.Pipeline, f func(key string, src engine.Source) engine.Source) {
	done := map[engine.Source]engine.Source{}
	used := map[string]int{}
	for _, p := range pipes {
		for _, n := range nodes(p) {
			if n.Binary != nil || n.Source == nil || internal(n.Source) {
				continue
			}
			if w, ok := done[n.Source]; ok {
				n.Source = w
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", p.Name, n.SourceName, p.Subtask)
			if used[key]++; used[key] > 1 {
				key = fmt.Sprintf("%s#%d", key, used[key])
			}
			w := f(key, n.Source)
			done[n.Source] = w
			n.Source = w
		}
	}
}

// countSource counts the rows a source emits (straight runs: the cut of a
// crash run is chosen among them).
type countSource struct {
	engine.Source
	rows int64
}

func (s *countSource) Run(ctx context.Context, emit func(engine.Message) error) error {
	return s.Source.Run(ctx, func(m engine.Message) error {
		if m.Kind == engine.KindData {
			s.rows += int64(m.Batch.Len())
		}
		return emit(m)
	})
}

func (s *countSource) Stats() map[string]int64 { return counters(s.Source) }

// counters copies x's counters (none when it reports none).
func counters(x any) map[string]int64 {
	if r, ok := x.(engine.StatsReporter); ok {
		if m := r.Stats(); m != nil {
			return maps.Clone(m)
		}
	}
	return map[string]int64{}
}

// crashPlan coordinates the first run of a crash-and-restore: the
// collectors report when they have pre-committed the rows after the cut,
// and dead closes when the process dies.
type crashPlan struct {
	dead    chan struct{}
	arrived chan struct{} // closed when every collector arrived

	mu      sync.Mutex
	sinks   int
	waiting int
}

func newCrashPlan() *crashPlan {
	return &crashPlan{dead: make(chan struct{}), arrived: make(chan struct{})}
}

func (c *crashPlan) arrive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting++; c.waiting == c.sinks {
		close(c.arrived)
	}
}

func (c *crashPlan) isDead() bool {
	if c == nil {
		return false
	}
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// cutSource places the first checkpoint's barrier of a source at its cut:
// it keeps the runtime's barrier requests (engine.Barriers) from the real
// source and hands it the first only once cut rows went out, so the source
// emits that barrier where it next can (right after the batch that reached
// the cut, or after the partly filled batch of another file that follows
// it). The place depends only on the input, the batch size and the cut,
// never on timing. A source that ends before it takes the barrier (the cut
// is its last row, it has no rows, it ignores barriers: VALUES) gets it
// from cutSource after its end, when its state covers every row. After its
// end cutSource emits the barrier of the next checkpoint, and then hangs:
// the process dies before the source could end.
type cutSource struct {
	inner engine.CheckpointedSource
	key   string
	cut   int64

	outer     *engine.Barriers // the runtime's requests
	own       *engine.Barriers // what the real source sees
	rows      int64
	barriers  int // emitted so far
	forwarded bool
	atCut     map[string]int64 // the source's counters at the cut's barrier
}

var _ engine.CheckpointedSource = (*cutSource)(nil)

func (s *cutSource) SetBarriers(b *engine.Barriers) {
	s.outer, s.own = b, engine.NewBarriers()
	s.inner.SetBarriers(s.own)
}

// request waits for the runtime's next barrier request.
func (s *cutSource) request(ctx context.Context) (uint64, error) {
	for {
		if id, ok := s.outer.Next(); ok {
			return id, nil
		}
		select {
		case <-s.outer.C():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (s *cutSource) forward(ctx context.Context) error {
	id, err := s.request(ctx)
	if err != nil {
		return err
	}
	s.forwarded = true
	s.own.Request(id)
	return nil
}

func (s *cutSource) Run(ctx context.Context, emit func(engine.Message) error) error {
	if s.cut <= 0 {
		if err := s.forward(ctx); err != nil {
			return err
		}
	}
	err := s.inner.Run(ctx, func(m engine.Message) error {
		switch m.Kind {
		case engine.KindData:
			s.rows += int64(m.Batch.Len())
		case engine.KindBarrier:
			s.barriers++
		}
		if err := emit(m); err != nil {
			return err
		}
		if m.Kind == engine.KindData && !s.forwarded && s.rows >= s.cut {
			return s.forward(ctx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for s.barriers < 2 {
		id, ok := uint64(0), false
		if s.barriers == 0 && s.forwarded {
			id, ok = s.own.Next() // requested, but the source ended first
		}
		if !ok {
			if id, err = s.request(ctx); err != nil {
				return err
			}
		}
		s.barriers++
		if err := emit(engine.Message{Kind: engine.KindBarrier, Checkpoint: id}); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *cutSource) SnapshotState(snap *engine.Snapshot) error {
	if err := s.inner.SnapshotState(snap); err != nil {
		return err
	}
	if s.atCut == nil {
		s.atCut = counters(s.inner)
	}
	return nil
}

func (s *cutSource) RestoreState(r *engine.Restore) error { return s.inner.RestoreState(r) }
func (s *cutSource) Stats() map[string]int64              { return counters(s.inner) }

// cutOp wraps a stateful operator that reports counters (window
// aggregates and joins count late rows) to read them when it snapshots at
// the cut. It forwards every optional method with the engine's default
// where the operator has none.
type cutOp struct {
	op    engine.Stateful // and an engine.Operator or engine.BinaryOperator
	atCut map[string]int64
}

var (
	_ engine.Operator         = (*cutOp)(nil)
	_ engine.BinaryOperator   = (*cutOp)(nil)
	_ engine.WatermarkHandler = (*cutOp)(nil)
	_ engine.Finisher         = (*cutOp)(nil)
	_ engine.Closer           = (*cutOp)(nil)
	_ engine.StatsReporter    = (*cutOp)(nil)
	_ engine.Stateful         = (*cutOp)(nil)
)

func (o *cutOp) Process(b *vector.Batch, out engine.Output) error {
	return o.op.(engine.Operator).Process(b, out)
}

func (o *cutOp) ProcessSide(side int, b *vector.Batch, out engine.Output) error {
	return o.op.(engine.BinaryOperator).ProcessSide(side, b, out)
}

func (o *cutOp) OnWatermark(wm int64, out engine.Output) error {
	if h, ok := o.op.(engine.WatermarkHandler); ok {
		return h.OnWatermark(wm, out)
	}
	return out.EmitWatermark(wm)
}

func (o *cutOp) Finish(out engine.Output) error {
	if f, ok := o.op.(engine.Finisher); ok {
		return f.Finish(out)
	}
	return nil
}

func (o *cutOp) Close() error {
	if c, ok := o.op.(engine.Closer); ok {
		return c.Close()
	}
	return nil
}

func (o *cutOp) Stats() map[string]int64 { return counters(o.op) }

func (o *cutOp) SnapshotState(s *engine.Snapshot) error {
	if err := o.op.SnapshotState(s); err != nil {
		return err
	}
	if o.atCut == nil {
		o.atCut = counters(o.op)
	}
	return nil
}

func (o *cutOp) RestoreState(r *engine.Restore) error { return o.op.RestoreState(r) }

// wrapOps puts a cutOp around every stateful operator with counters.
func wrapOps(pipes []*engine.Pipeline) []*cutOp {
	var out []*cutOp
	wrap := func(x any) (*cutOp, bool) {
		st, ok := x.(engine.Stateful)
		if _, rep := x.(engine.StatsReporter); !ok || !rep {
			return nil, false
		}
		o := &cutOp{op: st}
		out = append(out, o)
		return o, true
	}
	for _, p := range pipes {
		for _, n := range nodes(p) {
			for i, op := range n.Ops {
				if w, ok := wrap(op); ok {
					n.Ops[i] = w
				}
			}
			if n.Binary == nil {
				continue
			}
			// The engine names an unnamed binary operator's state after
			// its type; keep that name for the wrapper.
			name := strings.ToLower(strings.TrimPrefix(fmt.Sprintf("%T", n.Binary), "*op."))
			if w, ok := wrap(n.Binary); ok {
				if len(n.Names) <= len(n.Ops) {
					names := slices.Clone(n.Names)
					for i := len(names); i < len(n.Ops); i++ {
						names = append(names, fmt.Sprintf("op%d", i+1))
					}
					n.Names = append(names, name)
				}
				n.Binary = w
			}
		}
	}
	return out
}

// formatRows renders a batch's live rows as the print sink does.
func formatRows(buf []byte, b *vector.Batch) ([]byte, []string) {
	if b.Kinds != nil {
		buf = print.AppendChangelog(buf[:0], b)
	} else {
		buf = cjson.AppendBatch(buf[:0], b)
	}
	var rows []string
	for _, l := range bytes.Split(buf, []byte{'\n'}) {
		if len(l) > 0 {
			rows = append(rows, string(l))
		}
	}
	return buf, rows
}

// teeSink records the rows a sink other than print receives in a straight
// run (a file table later queries read), to compare with what the crash
// runs' collectors publish in its place.
type teeSink struct {
	engine.Sink
	name string
	mu   *sync.Mutex
	rows *[]string
	buf  []byte
}

func (s *teeSink) Write(b *vector.Batch) error {
	var rows []string
	s.buf, rows = formatRows(s.buf, b)
	s.mu.Lock()
	for _, r := range rows {
		*s.rows = append(*s.rows, s.name+": "+r)
	}
	s.mu.Unlock()
	return s.Sink.Write(b)
}

func (s *teeSink) Stats() map[string]int64 { return counters(s.Sink) }

// txStore is the system the exactly-once collectors publish to; it
// outlives a crashed run, as a database would.
type txStore struct {
	mu        sync.Mutex
	staged    map[string][]string // pre-committed transactions by id
	committed map[string]bool
	rows      map[string][]string // published rows by sink table
	discarded int                 // rows of discarded transactions
}

func newTxStore() *txStore {
	return &txStore{staged: map[string][]string{}, committed: map[string]bool{}, rows: map[string][]string{}}
}

func (st *txStore) stage(id string, rows []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.staged[id] = rows
}

// commit publishes transaction id into table; committing it again does
// nothing.
func (st *txStore) commit(table, id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.committed[id] {
		return nil
	}
	rows, ok := st.staged[id]
	if !ok {
		return fmt.Errorf("sink %s: transaction %s is neither staged nor committed", table, id)
	}
	st.rows[table] = append(st.rows[table], rows...)
	st.committed[id] = true
	delete(st.staged, id)
	return nil
}

// discard drops the staged transactions of sink that keep does not list.
func (st *txStore) discard(sink string, keep map[string]bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for id := range st.staged {
		if strings.HasPrefix(id, sink+"/") && !keep[id] {
			st.discarded += len(st.staged[id])
			delete(st.staged, id)
		}
	}
}

// txCollector is an exactly-once test sink (engine.TwoPhaseSink): it
// stages the rows of each transaction in the txStore at PreCommit, lists
// the staged transactions in its checkpoint state, publishes them on
// Commit, and on restore commits what the checkpoint lists and discards
// every other staged transaction of its sink. In the first run of a crash
// (plan set), its second snapshot (the checkpoint after the cut) reports to
// the plan and hangs until the process dies; after that it does nothing.
type txCollector struct {
	store  *txStore
	sink   string // the sink: table#k
	table  string // the sink table
	prefix string // of its transaction ids
	plan   *crashPlan

	tx    bool
	open  []string
	seq   int
	buf   []byte
	snaps int

	mu      sync.Mutex
	pending []collectorTxn // pre-committed, not yet published
}

type collectorTxn struct {
	id   string
	ckpt uint64 // 0 until a snapshot lists it
}

var _ engine.TwoPhaseSink = (*txCollector)(nil)

var collectorSlots = []checkpoint.Slot{{Name: "pending", Raw: true, Values: []arrow.Field{
	{Name: "checkpoint_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "txn", Type: arrow.BinaryTypes.String},
}}}

func (s *txCollector) StartTransactions() error {
	s.tx = true
	return nil
}

func (s *txCollector) Write(b *vector.Batch) error {
	defer b.Release()
	if !s.tx {
		return fmt.Errorf("sink %s: the test's collector needs checkpoints", s.table)
	}
	var rows []string
	s.buf, rows = formatRows(s.buf, b)
	s.open = append(s.open, rows...)
	return nil
}

func (s *txCollector) PreCommit() error {
	if s.plan.isDead() {
		return nil
	}
	s.seq++
	id := fmt.Sprintf("%s%d", s.prefix, s.seq)
	s.store.stage(id, s.open)
	s.open = nil
	s.mu.Lock()
	s.pending = append(s.pending, collectorTxn{id: id})
	s.mu.Unlock()
	return nil
}

func (s *txCollector) SnapshotState(snap *engine.Snapshot) error {
	if s.plan != nil {
		if s.snaps++; s.snaps == 2 {
			s.plan.arrive()
			<-s.plan.dead
			return context.Canceled
		}
	}
	s.mu.Lock()
	for i := range s.pending {
		if s.pending[i].ckpt == 0 {
			s.pending[i].ckpt = snap.ID
		}
	}
	pending := slices.Clone(s.pending)
	s.mu.Unlock()
	p, err := snap.Open(collectorSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, t := range pending {
		b.Raw("pending")
		b.Value("checkpoint_id").(*array.Int64Builder).Append(int64(t.ckpt))
		b.Value("txn").(*array.StringBuilder).Append(t.id)
	}
	return p.WriteRows(b)
}

func (s *txCollector) Commit(id uint64) error {
	if s.plan.isDead() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 && s.pending[0].ckpt != 0 && s.pending[0].ckpt <= id {
		if err := s.store.commit(s.table, s.pending[0].id); err != nil {
			return err
		}
		s.pending = s.pending[1:]
	}
	return nil
}

// RestoreState gets every subtask's part: each subtask commits all the
// listed transactions (committing twice does nothing) and discards the
// rest, so that any parallelism restores any other.
func (s *txCollector) RestoreState(r *engine.Restore) error {
	keep := map[string]bool{}
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			slot := rec.Column(0).(*array.String)
			ids, _ := checkpoint.Column(rec, "txn").(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				if slot.Value(i) != "pending" {
					continue
				}
				if ids == nil || ids.IsNull(i) {
					return fmt.Errorf("%s: bad pending row %d", part.Path, i)
				}
				keep[ids.Value(i)] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(keep)) {
		if err := s.store.commit(s.table, id); err != nil {
			return err
		}
	}
	s.store.discard(s.sink, keep)
	return nil
}

func (s *txCollector) Abort() error {
	s.open = nil
	return nil
}

func (s *txCollector) Flush() error { return nil }
func (s *txCollector) Close() error { return nil }

// collect puts a txCollector in place of every sink of the job and
// returns how many. A collector's transactions are named after its sink
// table and the how-manieth sink of that table it is in its subtask (as
// the engine names their state), so that a restore discards exactly the
// staged transactions of the same sink.
func collect(pipes []*engine.Pipeline, store *txStore, run string, plan *crashPlan) int {
	n := 0
	seen := map[string]int{}
	for _, p := range pipes {
		if internal(p.Sink) {
			continue
		}
		seen[fmt.Sprint(p.SinkName, "/", p.Subtask)]++
		sink := fmt.Sprintf("%s#%d", p.SinkName, seen[fmt.Sprint(p.SinkName, "/", p.Subtask)])
		p.Sink = &txCollector{store: store, sink: sink, table: p.SinkName, prefix: fmt.Sprintf("%s/%s/%d/", sink, run, p.Subtask), plan: plan}
		n++
	}
	return n
}

// restoreMode is one crash-and-restore run: the first run at parallelism
// from, the second at to.
type restoreMode struct{ from, to int }

// RunRestored runs plan (its protobuf bytes) with checkpoints at batch size
// batch and parallelism from, with the first checkpoint's barrier at cuts
// (rows of each source, by eachSource key, that go before it), crashes it
// once the rows after the cut are staged for the next checkpoint, restores
// the first checkpoint at parallelism to and runs it to the end. The rows
// are what the sinks published over both runs, the counts those of the
// first run at its cut plus those of the second.
func (r *Runner) RunRestored(data []byte, batch, from, to int, cuts map[string]int64) Result {
	dir, err := checkpointDir(r.Dir)
	if err != nil {
		return Result{Err: err}
	}
	defer os.RemoveAll(dir)
	store := newTxStore()
	cut, err := r.crash(data, batch, from, cuts, dir, store, nil, "run1")
	if err != nil {
		return Result{Err: fmt.Errorf("first run, at parallelism %d: %w", from, err)}
	}
	res := r.resume(data, batch, to, cut, dir, store, "run2")
	res.interleaved = res.interleaved || cut.interleaved
	if res.Err != nil {
		res.Err = fmt.Errorf("run restored from checkpoint %d at parallelism %d: %w", cut.id, to, res.Err)
		return res
	}
	res.Late += cut.late
	res.Skipped += cut.skipped
	return published(res, store)
}

// RunRestoredChain is RunRestored with a restore in the middle: the first
// run at parallelism pars[0] crashes after its checkpoint at cuts; the
// second restores it at pars[1], takes a checkpoint at once (the state as
// pars[1] subtasks hold it) and crashes; the third restores that at
// pars[2] and runs to the end (a checkpoint taken at 1 restored at 4 and
// then at 2).
func (r *Runner) RunRestoredChain(data []byte, batch int, pars [3]int, cuts map[string]int64) Result {
	dir, err := checkpointDir(r.Dir)
	if err != nil {
		return Result{Err: err}
	}
	defer os.RemoveAll(dir)
	store := newTxStore()
	cut1, err := r.crash(data, batch, pars[0], cuts, dir, store, nil, "run1")
	if err != nil {
		return Result{Err: fmt.Errorf("first run, at parallelism %d: %w", pars[0], err)}
	}
	cs, err := checkpoint.NewStore(dir, checkpoint.Options{Compression: checkpoint.CompressNone})
	if err != nil {
		return Result{Err: err}
	}
	cp1, err := cs.Open(cut1.id)
	if err != nil {
		return Result{Err: err}
	}
	cut2, err := r.crash(data, batch, pars[1], nil, dir, store, cp1, "run2")
	if err != nil {
		return Result{Err: fmt.Errorf("second run, restored from checkpoint %d at parallelism %d: %w", cut1.id, pars[1], err)}
	}
	res := r.resume(data, batch, pars[2], cut2, dir, store, "run3")
	res.interleaved = res.interleaved || cut1.interleaved || cut2.interleaved
	if res.Err != nil {
		res.Err = fmt.Errorf("run restored from checkpoint %d at parallelism %d: %w", cut2.id, pars[2], res.Err)
		return res
	}
	res.Late += cut1.late + cut2.late
	res.Skipped += cut1.skipped + cut2.skipped
	return published(res, store)
}

// published completes a crash-and-restore run's result with what the
// sinks published over its runs.
func published(res Result, store *txStore) Result {
	store.mu.Lock()
	defer store.mu.Unlock()
	res.discarded = store.discarded
	if len(store.staged) > 0 {
		res.Err = fmt.Errorf("transactions left staged, neither committed nor discarded: %v", slices.Sorted(maps.Keys(store.staged)))
	}
	for sink, rows := range store.rows {
		for _, row := range rows {
			if res.printSinks[sink] {
				res.Rows = append(res.Rows, row)
			} else {
				res.SinkRows = append(res.SinkRows, sink+": "+row)
			}
		}
	}
	sort.Strings(res.Rows)
	sort.Strings(res.SinkRows)
	return res
}

// checkpointDir makes a directory for a crash run's checkpoints: in
// memory (/dev/shm) where there is one, since a checkpoint fsyncs every
// part and its manifest, and the crash here is simulated in the process
// (the disk's durability is not what the logic tests check); else under
// dir.
func checkpointDir(dir string) (string, error) {
	if d, err := os.MkdirTemp("/dev/shm", "clink-logictest-"); err == nil {
		return d, nil
	}
	return os.MkdirTemp(dir, "checkpoints-")
}

func unmarshal(data []byte) (*pb.Plan, error) {
	var p pb.Plan
	return &p, proto.Unmarshal(data, &p)
}

// cutPoint is what the first run of a crash leaves: the plan's
// fingerprint, the checkpoint at the cut, and the counts at the cut.
type cutPoint struct {
	fp            string
	id            uint64
	late, skipped int64
	interleaved   bool // see Result.interleaved
}

// crash is the first run of RunRestored: from the start, or, with from
// set, restored from it (the middle run of RunRestoredChain); run labels
// its transactions.
func (r *Runner) crash(data []byte, batch, par int, cuts map[string]int64, dir string, store *txStore, from *checkpoint.Checkpoint, run string) (cut cutPoint, err error) {
	plan, err := unmarshal(data)
	if err != nil {
		return cut, err
	}
	if cut.fp, err = substrait.Fingerprint(plan); err != nil {
		return cut, err
	}
	var out bytes.Buffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	job, err := r.build(plan, batch, par, mem, &syncWriter{w: &out})
	if err != nil {
		return cut, err
	}
	cut.interleaved = interleaves(job.Pipelines)
	var srcs []*cutSource
	eachSource(job.Pipelines, func(key string, src engine.Source) engine.Source {
		cs, ok := src.(engine.CheckpointedSource)
		if !ok {
			return src // RunJob says which source cannot checkpoint
		}
		s := &cutSource{inner: cs, key: key, cut: cuts[key]}
		srcs = append(srcs, s)
		return s
	})
	ops := wrapOps(job.Pipelines)
	plan1 := newCrashPlan()
	if plan1.sinks = collect(job.Pipelines, store, run, plan1); plan1.sinks == 0 {
		return cut, fmt.Errorf("no sink")
	}
	cs, err := checkpoint.NewStore(dir, checkpoint.Options{Compression: checkpoint.CompressNone})
	if err != nil {
		return cut, err
	}
	var mu sync.Mutex
	var completed []uint64
	// Incremental with short chains: restores read deltas and compacted
	// (full again) parts.
	cfg := &engine.CheckpointConfig{Store: cs, Interval: time.Millisecond, Job: "logictest", Fingerprint: cut.fp, Mem: mem, Restore: from,
		Incremental: true, MaxDeltas: 3,
		OnComplete: func(id uint64) {
			mu.Lock()
			completed = append(completed, id)
			mu.Unlock()
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := engine.RunJob(ctx, job.Pipelines, cfg)
		done <- err
	}()
	var runErr error
	ended := false
	select {
	case <-plan1.arrived:
	case runErr = <-done:
		ended = true
	case <-time.After(crashWait):
		runErr = fmt.Errorf("the rows after the cut did not reach every sink's next checkpoint in %s", crashWait)
	}
	close(plan1.dead)
	cancel()
	if !ended {
		if err := <-done; runErr == nil && err != nil && !errors.Is(err, context.Canceled) {
			runErr = err
		}
	}
	if runErr == nil && ended {
		runErr = fmt.Errorf("the job ended before its crash")
	}
	if runErr != nil {
		return cut, runErr
	}
	if n := mem.CurrentAlloc(); n != 0 {
		return cut, fmt.Errorf("memory leak: %d bytes still allocated after the crash", n)
	}
	if out.Len() > 0 {
		return cut, fmt.Errorf("rows printed past the collectors: %s", out.String())
	}
	if len(completed) != 1 {
		return cut, fmt.Errorf("checkpoints %v completed before the crash, want only the cut's", completed)
	}
	for _, s := range srcs {
		if s.atCut == nil {
			return cut, fmt.Errorf("source %s did not snapshot at the cut", s.key)
		}
		cut.late += s.atCut["late_rows_dropped"]
		cut.skipped += s.atCut["records_skipped"]
	}
	for _, o := range ops {
		if o.atCut == nil {
			return cut, fmt.Errorf("operator %T did not snapshot at the cut", o.op)
		}
		cut.late += o.atCut["late_rows_dropped"]
		cut.skipped += o.atCut["records_skipped"]
	}
	cut.id = completed[0]
	return cut, nil
}

// resume is the second run of RunRestored: it restores the cut's
// checkpoint at parallelism par and runs to the end, publishing into store.
func (r *Runner) resume(data []byte, batch, par int, cut cutPoint, dir string, store *txStore, run string) Result {
	id := cut.id
	plan, err := unmarshal(data)
	if err != nil {
		return Result{Err: err}
	}
	var out bytes.Buffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	job, err := r.build(plan, batch, par, mem, &syncWriter{w: &out})
	if err != nil {
		return Result{Err: err}
	}
	res := Result{printSinks: map[string]bool{}, interleaved: interleaves(job.Pipelines)}
	for _, p := range job.Pipelines {
		if _, ok := p.Sink.(*print.Sink); ok {
			res.printSinks[p.SinkName] = true
		}
	}
	collect(job.Pipelines, store, run, nil)
	cs, err := checkpoint.NewStore(dir, checkpoint.Options{Compression: checkpoint.CompressNone})
	if err != nil {
		return Result{Err: err}
	}
	latest, ok, err := cs.Latest()
	if err != nil {
		return Result{Err: err}
	}
	if !ok || latest != id {
		return Result{Err: fmt.Errorf("newest complete checkpoint is %d (found: %v), want the cut's, %d", latest, ok, id)}
	}
	cp, err := cs.Open(id) // the restore reads every part with its checksum
	if err != nil {
		return Result{Err: err}
	}

	// No checkpoint but the final one: the second run is deterministic.
	cfg := &engine.CheckpointConfig{Store: cs, Interval: time.Hour, Job: "logictest", Fingerprint: cut.fp, Mem: mem, Restore: cp, Incremental: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stats, err := engine.RunJob(ctx, job.Pipelines, cfg)
	if err != nil {
		return Result{Err: err}
	}
	for _, s := range stats {
		if s != nil {
			res.Late += s.Total("late_rows_dropped")
			res.Skipped += s.Total("records_skipped")
		}
	}
	if n := mem.CurrentAlloc(); n != 0 {
		return Result{Err: fmt.Errorf("memory leak: %d bytes still allocated after the run", n)}
	}
	if out.Len() > 0 {
		return Result{Err: fmt.Errorf("rows printed past the collectors: %s", out.String())}
	}
	return res
}
