package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels/hash"
	"github.com/clink-dev/clink/vector"
)

// Keyed is implemented by operators whose state is partitioned by key: at
// parallelism > 1 the rows reaching subtask j of such an operator are the
// rows whose key group subtask j owns.
type Keyed = op.Keyed

// exchange is an all-to-all keyed shuffle between p upstream and p
// downstream subtasks: ch[i][j] carries what upstream i sends downstream j,
// rows, watermarks, barriers and end of input in order.
type exchange struct {
	p      int
	maxPar int
	keys   []int
	ch     [][]chan Message
	mu     sync.Mutex
	binding
}

// binding is an edge's hold on the job's context (bind, once RunJob
// starts): sends wait for it and stop when the job is done.
type binding struct {
	ctx     context.Context
	bound   chan struct{}
	bindOne sync.Once
}

func newBinding() binding { return binding{bound: make(chan struct{})} }

func newExchange(p, maxPar, depth int, keys []int) *exchange {
	x := &exchange{p: p, maxPar: maxPar, keys: keys, ch: make([][]chan Message, p), binding: newBinding()}
	for i := range x.ch {
		x.ch[i] = make([]chan Message, p)
		for j := range x.ch[i] {
			x.ch[i][j] = make(chan Message, depth)
		}
	}
	return x
}

// bind gives the edge the job's context: sends stop when it is done.
func (x *binding) bind(ctx context.Context) {
	x.bindOne.Do(func() {
		x.ctx = ctx
		close(x.bound)
	})
}

// send puts m on ch; when the job is done first, it releases m's batch.
func (x *binding) send(ch chan<- Message, m Message) error {
	<-x.bound
	select {
	case ch <- m:
		return nil
	case <-x.ctx.Done():
		if m.Batch != nil {
			m.Batch.Release()
		}
		return x.ctx.Err()
	}
}

// exchangeSink is upstream subtask i's end: it routes each row to the
// downstream subtask that owns its key's key group and broadcasts
// watermarks, barriers and end of input.
type exchangeSink struct {
	x     *exchange
	i     int
	mem   memory.Allocator
	owner []int32 // key group -> downstream subtask
	dests []int32 // 0..n-1, scratch for batches without a selection
}

func (s *exchangeSink) Write(b *vector.Batch) error {
	x := s.x
	n := b.NumRows()
	cols := make([]arrow.Array, len(x.keys))
	for k, c := range x.keys {
		cols[k] = b.Column(c)
	}
	hs, err := hash.KeyHashes(cols, n)
	if err != nil {
		b.Release()
		return err
	}
	if s.owner == nil {
		s.owner = make([]int32, x.maxPar)
		for g := range s.owner {
			s.owner[g] = int32(checkpoint.KeyGroupOwner(x.maxPar, x.p, int32(g)))
		}
	}
	// Count each destination's rows, then fill their selections: one
	// pass of direct loops, one allocation per destination.
	live := b.Sel
	if live == nil {
		if cap(s.dests) < n {
			s.dests = make([]int32, n)
		}
		live = s.dests[:n]
		for i := range live {
			live[i] = int32(i)
		}
	}
	dest := make([]int32, len(live))
	count := make([]int, x.p)
	for k, r := range live {
		j := s.owner[checkpoint.KeyGroupOf(hs[r], x.maxPar)]
		dest[k] = j
		count[j]++
	}
	per := make([][]int32, x.p)
	for j, c := range count {
		if c > 0 {
			per[j] = make([]int32, 0, c)
		}
	}
	for k, r := range live {
		per[dest[k]] = append(per[dest[k]], r)
	}
	for j, rows := range per {
		if len(rows) == 0 {
			continue
		}
		// Each destination shares the record and gets a selection of
		// its rows: nothing is copied.
		b.Rec.Retain()
		out := vector.New(b.Rec)
		out.RowWatermark, out.Kinds = b.RowWatermark, b.Kinds
		if len(rows) != n || b.Sel != nil {
			out.Sel = rows
		}
		if err := x.send(x.ch[s.i][j], Message{Kind: KindData, Batch: out}); err != nil {
			b.Release()
			return err
		}
	}
	b.Release()
	return nil
}

func (s *exchangeSink) broadcast(m Message) error {
	for j := range s.x.p {
		if err := s.x.send(s.x.ch[s.i][j], m); err != nil {
			return err
		}
	}
	return nil
}

// watermark, barrier and end are what sinkOutput forwards to an exchange.
func (s *exchangeSink) watermark(wm int64) error {
	return s.broadcast(Message{Kind: KindWatermark, Watermark: wm})
}
func (s *exchangeSink) status(idle bool) error { return s.broadcast(statusMessage(idle)) }
func (s *exchangeSink) barrier(id uint64) error {
	return s.broadcast(Message{Kind: KindBarrier, Checkpoint: id})
}
func (s *exchangeSink) end() error { return endStream(s.broadcast) }

// endStream sends what ends an edge's stream: the final watermark, then
// end of input.
func endStream(send func(Message) error) error {
	if err := send(Message{Kind: KindWatermark, Watermark: MaxWatermark}); err != nil {
		return err
	}
	return send(Message{Kind: KindEnd})
}
func (s *exchangeSink) Flush() error { return nil }
func (s *exchangeSink) Close() error { return nil }

// exchangeSource is downstream subtask j's start: it merges the p
// upstream channels into one stream. Its watermark is the minimum of the
// inputs' that are not idle (idle while every input is); a barrier passes once every input delivered it or ended (an
// input that delivered it is not read meanwhile); it ends when every input
// ended. It keeps no state of its own.
type exchangeSource struct {
	x *exchange
	j int
}

func (s *exchangeSource) SetBarriers(*Barriers)            {}
func (s *exchangeSource) SnapshotState(*Snapshot) error    { return nil }
func (s *exchangeSource) RestoreState(*Restore) error      { return nil }
func (s *exchangeSource) Stats() map[string]int64          { return nil }
func (s *exchangeSource) String() string                   { return fmt.Sprintf("exchange-%d", s.j) }
func (s *exchangeSource) bindExchange(ctx context.Context) { s.x.bind(ctx) }
func (s *exchangeSink) bindExchange(ctx context.Context)   { s.x.bind(ctx) }
func (s *exchangeSource) Run(ctx context.Context, emit func(Message) error) error {
	in := make([]<-chan Message, s.x.p)
	for i := range in {
		in[i] = s.x.ch[i][s.j]
	}
	return runMerged(ctx, in, emit)
}

// runMerged passes the merged stream of an edge's input channels on as a
// source's messages (the driver's watermark and barrier rules).
func runMerged(ctx context.Context, in []<-chan Message, emit func(Message) error) error {
	d := &driver{in: in, ctx: ctx}
	ended, err := d.run(mergeTask{emit})
	if err != nil {
		return err
	}
	if !ended {
		// An upstream stopped without ending: the job is stopping.
		<-ctx.Done()
		return ctx.Err()
	}
	return nil // the runtime sends the final watermark and end
}

// mergeTask passes an exchange's merged stream on as a source's messages.
// The final watermark is left to the runtime, which sends it after the
// source's state is final.
type mergeTask struct{ emit func(Message) error }

func (m mergeTask) data(_ int, b *vector.Batch) error {
	return m.emit(Message{Kind: KindData, Batch: b})
}

func (m mergeTask) watermark(wm int64) error {
	if wm == MaxWatermark {
		return nil
	}
	return m.emit(Message{Kind: KindWatermark, Watermark: wm})
}

func (m mergeTask) status(idle bool) error { return m.emit(statusMessage(idle)) }

func (m mergeTask) barrier(id uint64) error {
	return m.emit(Message{Kind: KindBarrier, Checkpoint: id})
}

// exchangeBinder is implemented by the exchange's ends: RunJob binds them
// to the job's context.
type exchangeBinder interface {
	bindExchange(ctx context.Context)
}

// exchangeOut is a sink that passes watermarks, barriers and end of input
// on (an exchange's upstream end) rather than ending the stream.
type exchangeOut interface {
	watermark(wm int64) error
	status(idle bool) error
	barrier(id uint64) error
	end() error
}

// KeyedBinary is implemented by binary operators whose state is
// partitioned by a key of each input (joins).
type KeyedBinary = op.KeyedBinary

// KeyedOutput and Passthrough tell Parallelize how a stream stays
// partitioned through operators.
type (
	KeyedOutput = op.KeyedOutput
	Passthrough = op.Passthrough
)

// Parallelize turns p copies of one pipeline (built for subtasks 0..p-1)
// into the pipelines of a parallel job: an all-to-all keyed exchange is
// put in front of every keyed operator and in front of each input of a
// keyed binary operator (a join), so that subtask j of the operator sees
// exactly the keys whose key groups it owns (key group = the engine's key
// hash mod maxPar, Flink's ranges). Each exchange cuts the tree: what is
// below it runs as a pipeline of its own (one per subtask) whose sink is
// the exchange's upstream end. Stateless operators and unions stay in the
// subtask of their input. A source read by several nodes (a self-join)
// runs once per subtask in a pipeline of its own, behind a tee whose
// channels the reading nodes read (tee.go). The result runs with RunJob.
// A stateful operator that is neither keyed nor a join is refused (every
// operator of the engine is one or the other).
//
// A nil copy is a subtask another process runs (a cluster Worker runs
// some subtasks of a job): it gets no pipelines here, and its ends of the
// exchanges are Edges for the flight package to carry.
func Parallelize(copies []*Pipeline, maxPar, depth int) ([]*Pipeline, error) {
	p := len(copies)
	if p == 1 {
		if copies[0] == nil {
			return nil, nil
		}
		return copies, nil
	}
	if maxPar <= 0 {
		maxPar = checkpoint.DefaultMaxParallelism
	}
	if p > maxPar {
		return nil, fmt.Errorf("parallelism %d is more than the %d key groups", p, maxPar)
	}
	if depth <= 0 {
		depth = 4
	}
	var xs []*exchange // shared by the copies, in the order of the walk
	var stages [][]*Pipeline
	for i, c := range copies {
		if c == nil {
			continue
		}
		sp := &splitter{c: c, i: i, p: p, maxPar: maxPar, depth: depth, xs: &xs, readers: map[Source]int{}, tees: map[Source]*teeAt{}}
		c.root().walk(func(n *Node) {
			if n.Binary == nil && n.Source != nil {
				sp.readers[n.Source]++
			}
		})
		root, _, err := sp.rewrite(c.root())
		if err != nil {
			return nil, err
		}
		sp.stages = append(sp.stages, &Pipeline{
			Name: c.Name, Root: root, Sink: c.Sink, SinkName: c.SinkName, SinkSig: c.SinkSig,
			ChannelDepth: c.ChannelDepth, Live: c.Live, Subtask: i, Parallelism: p,
		})
		stages = append(stages, sp.stages)
	}
	// Stage by stage, then subtask by subtask: every process lists the
	// pipelines of its subtasks in the same order.
	var out []*Pipeline
	for k := range stages[0] {
		for _, st := range stages {
			out = append(out, st[k])
		}
	}
	return out, nil
}

// splitter cuts one copy's tree at its exchanges.
type splitter struct {
	c                   *Pipeline
	i, p, maxPar, depth int
	xs                  *[]*exchange
	next                int // the next exchange of the walk
	stages              []*Pipeline
	// readers counts the nodes reading each source; a source read by
	// several runs once, in a pipeline of its own, behind a tee.
	readers map[Source]int
	tees    map[Source]*teeAt
}

// teeAt is a shared source's tee and the next reading to hand out.
type teeAt struct {
	t    *tee
	next int
}

// reading returns the node that reads leaf n's source: n itself, or, for
// a source several nodes read, the next channel of its tee (the first
// reading puts the source's pipeline in front of the others).
func (s *splitter) reading(n *Node) *Node {
	k := s.readers[n.Source]
	if k < 2 {
		return &Node{Source: n.Source, SourceName: n.SourceName, SourceSig: n.SourceSig}
	}
	at := s.tees[n.Source]
	if at == nil {
		at = &teeAt{t: newTee(k, s.depth)}
		s.tees[n.Source] = at
		s.stages = append(s.stages, &Pipeline{
			Name: s.c.Name, Root: &Node{Source: n.Source, SourceName: n.SourceName, SourceSig: n.SourceSig},
			Sink: &teeSink{t: at.t}, SinkName: "tee", SinkSig: checkpoint.Signature{"kind": "sink", "table": "tee"},
			ChannelDepth: s.c.ChannelDepth, Subtask: s.i, Parallelism: s.p,
		})
	}
	at.next++
	return &Node{Source: &teeSource{t: at.t, k: at.next - 1}, SourceName: "tee", SourceSig: teeSig}
}

// cut makes n the root of a pipeline feeding the next exchange (keyed by
// keys) and returns the node that reads the exchange in n's place.
func (s *splitter) cut(n *Node, keys []int) *Node {
	if s.next == len(*s.xs) {
		*s.xs = append(*s.xs, newExchange(s.p, s.maxPar, s.depth, keys))
	}
	x := (*s.xs)[s.next]
	s.next++
	s.stages = append(s.stages, &Pipeline{
		Name: s.c.Name, Root: n, Sink: &exchangeSink{x: x, i: s.i, mem: memory.DefaultAllocator}, SinkName: "exchange",
		SinkSig:      checkpoint.Signature{"kind": "sink", "table": "exchange"},
		ChannelDepth: s.c.ChannelDepth, Subtask: s.i, Parallelism: s.p,
	})
	return &Node{Source: &exchangeSource{x: x, j: s.i}, SourceName: "exchange", SourceSig: checkpoint.Signature{"kind": "source", "table": "exchange"}}
}

// partitioning is how a stream's rows are spread over the subtasks: by
// the key in columns cols (hashed into key groups, the exchange's
// assignment), or, when !keyed, in no known way.
type partitioning struct {
	keyed bool
	cols  []int
}

// by reports whether the rows are partitioned by exactly the key cols
// (in this order: the hash combines the columns in order).
func (pt partitioning) by(cols []int) bool { return pt.keyed && slices.Equal(pt.cols, cols) }

// through is the partitioning after o, a stateless operator: a key
// column it passes on unchanged stays a key column; a key it drops or
// computes loses it.
func (pt partitioning) through(o Operator) partitioning {
	if !pt.keyed {
		return pt
	}
	pass, ok := o.(Passthrough)
	if !ok {
		return partitioning{}
	}
	out := make([]int, len(pt.cols))
	for k, c := range pt.cols {
		if out[k] = pass.OutputColumn(c); out[k] < 0 {
			return partitioning{}
		}
	}
	return partitioning{keyed: true, cols: out}
}

// after is the partitioning of what a keyed operator o emits.
func after(o any) partitioning {
	if ko, ok := o.(KeyedOutput); ok {
		if cols := ko.OutputKeyColumns(); cols != nil {
			return partitioning{keyed: true, cols: cols}
		}
	}
	return partitioning{}
}

// rewrite returns n with an exchange cut in front of every keyed operator
// and every input of a keyed binary operator, unless its input is already
// partitioned by its key (a forward edge: the same key at the same
// parallelism), and how n's output is partitioned.
func (s *splitter) rewrite(n *Node) (*Node, partitioning, error) {
	opName := func(k int) string {
		if k < len(n.Names) {
			return n.Names[k]
		}
		return fmt.Sprintf("op%d", k+1)
	}
	cur := &Node{Binary: n.Binary, BinarySig: n.BinarySig}
	if n.Binary == nil && n.Source != nil {
		cur = s.reading(n)
	}
	var pt partitioning // a source's rows: no known partitioning
	if n.Binary != nil {
		name := fmt.Sprintf("%T", n.Binary)
		if len(n.Names) > len(n.Ops) {
			name = n.Names[len(n.Ops)]
		}
		kb, keyed := n.Binary.(KeyedBinary)
		if _, ok := n.Binary.(Stateless); !ok && !keyed {
			return nil, pt, fmt.Errorf("parallelism > 1 is not supported yet for operator %s", name)
		}
		var ins []partitioning
		for side, in := range n.Inputs {
			r, ipt, err := s.rewrite(in)
			if err != nil {
				return nil, pt, err
			}
			if keyed && !ipt.by(kb.SideKeyColumns(side)) {
				r = s.cut(r, kb.SideKeyColumns(side))
			}
			cur.Inputs = append(cur.Inputs, r)
			ins = append(ins, ipt)
		}
		switch {
		case keyed:
			pt = after(n.Binary)
		case len(ins) == 2 && ins[1].keyed && ins[0].by(ins[1].cols): // a union of two streams partitioned alike
			pt = ins[0]
		}
	}
	from := 0
	finish := func(to int) {
		cur.Ops = n.Ops[from:to:to]
		cur.Sigs = namesFrom(namesUpTo(n.Sigs, to), from)
		cur.Names = append([]string(nil), namesFrom(namesUpTo(n.Names, to), from)...)
		if cur.Binary != nil && len(n.Names) > len(n.Ops) {
			for len(cur.Names) < len(cur.Ops) {
				cur.Names = append(cur.Names, opName(from+len(cur.Names)))
			}
			cur.Names = append(cur.Names, n.Names[len(n.Ops)])
		}
	}
	for k, o := range n.Ops {
		if ko, ok := o.(Keyed); ok {
			if keys := ko.KeyColumns(); !pt.by(keys) {
				finish(k)
				cur, from = s.cut(cur, keys), k
			}
			pt = after(o)
			continue
		}
		if _, ok := o.(Stateless); !ok {
			return nil, pt, fmt.Errorf("parallelism > 1 is not supported yet for operator %s", opName(k))
		}
		pt = pt.through(o)
	}
	finish(len(n.Ops))
	return cur, pt, nil
}

// walk calls f on n and every node below it, n first.
func (n *Node) walk(f func(*Node)) {
	f(n)
	for _, in := range n.Inputs {
		in.walk(f)
	}
}

// Edge is one channel of a keyed exchange: what upstream subtask From
// sends downstream subtask To (rows, watermarks, barriers, end of input,
// in order). When the two subtasks run in different processes, the
// sending process reads C (an upstream end is local) and the receiving
// process writes C (a downstream end is local); the flight package
// carries the messages between them.
type Edge struct {
	// Exchange numbers the job's exchanges in pipeline order, the same in
	// every process that plans the job.
	Exchange int
	From, To int
	C        chan Message
}

// Edges lists the channels of the exchanges among pipes, by exchange,
// then upstream, then downstream subtask. Exchanges are numbered in the
// order they first appear (a pipeline's sink before the sources of its
// tree); Parallelize lists a pipeline feeding an exchange before every
// pipeline reading it, so the numbers agree in every process.
func Edges(pipes []*Pipeline) []Edge {
	var xs []*exchange
	seen := map[*exchange]bool{}
	add := func(x *exchange) {
		if !seen[x] {
			seen[x] = true
			xs = append(xs, x)
		}
	}
	for _, p := range pipes {
		if s, ok := p.Sink.(*exchangeSink); ok {
			add(s.x)
		}
		p.root().walk(func(n *Node) {
			if s, ok := n.Source.(*exchangeSource); ok {
				add(s.x)
			}
		})
	}
	var out []Edge
	for k, x := range xs {
		for i := range x.ch {
			for j := range x.ch[i] {
				out = append(out, Edge{Exchange: k, From: i, To: j, C: x.ch[i][j]})
			}
		}
	}
	return out
}

func namesUpTo[T any](names []T, k int) []T {
	if k > len(names) {
		k = len(names)
	}
	return names[:k]
}

func namesFrom[T any](names []T, k int) []T {
	if k > len(names) {
		return nil
	}
	return names[k:]
}
