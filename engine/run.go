package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/clink-dev/clink/vector"
)

// Run executes the pipeline until its input ends (then the final watermark
// fires every open window and the sink is flushed), ctx is cancelled (the
// sink is flushed, open windows are not), or an error occurs.
func (p *Pipeline) Run(ctx context.Context) (*Stats, error) {
	st, err := RunJob(ctx, []*Pipeline{p}, nil)
	return st[0], err
}

func (p *Pipeline) root() *Node {
	if p.Root == nil {
		p.Root = &Node{Source: p.Source, Ops: p.Ops, Names: p.Names}
	}
	return p.Root
}

// RunJob runs the pipelines of one job concurrently and returns their stats
// in order; the first error cancels the others. With cfg, the job takes
// checkpoints (and first restores cfg.Restore): barriers every
// cfg.Interval, and a final checkpoint when every input has ended, after
// which the two-phase sinks have published everything.
func RunJob(ctx context.Context, pipes []*Pipeline, cfg *CheckpointConfig) ([]*Stats, error) {
	stats := make([]*Stats, len(pipes))
	for i := range stats {
		stats[i] = &Stats{Interrupted: true}
	}
	var ck *checkpointer
	if cfg != nil {
		var err error
		if ck, err = newCheckpointer(*cfg, pipes); err != nil {
			return stats, err
		}
		start := time.Now()
		if err := ck.restore(); err != nil {
			return stats, err
		}
		if cfg.Restore != nil && cfg.Logf != nil {
			cfg.Logf("restored checkpoint %d (%s)", cfg.Restore.ID, time.Since(start).Round(time.Millisecond))
		}
	}
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range pipes {
		if b, ok := p.Sink.(exchangeBinder); ok {
			b.bindExchange(ctx2)
		}
		p.root().walk(func(n *Node) {
			if b, ok := n.Source.(exchangeBinder); ok {
				b.bindExchange(ctx2)
			}
		})
	}
	runners := make([]*runner, len(pipes))
	ended := make([]bool, len(pipes))
	errs := make([]error, len(pipes))
	var wg sync.WaitGroup
	for i, p := range pipes {
		runners[i] = newRunner(ctx2, p, ck, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ended[i], errs[i] = runners[i].run()
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	var ckErr error
	finished := false
	if ck != nil {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var tick <-chan time.Time
		var trig <-chan ClusterTrigger
		var compl <-chan uint64
		if cl := ck.cfg.Cluster; cl != nil {
			trig, compl = cl.Trigger, cl.Complete
		} else {
			ticker := time.NewTicker(ck.cfg.Interval)
			defer ticker.Stop()
			tick = ticker.C
		}
		fail := func(err error) {
			if ckErr == nil && err != nil {
				ckErr = err
				cancel()
			}
		}
	loop:
		for {
			select {
			case <-done:
				break loop
			case <-tick:
				if ckErr == nil {
					fail(ck.trigger())
				}
			case t := <-trig:
				if ckErr == nil {
					fail(ck.triggerJoined(t))
				}
			case id := <-compl:
				if ckErr == nil {
					fail(ck.commit(id))
				}
			case id := <-ck.complete:
				if ckErr == nil {
					fail(ck.completeCP(id))
				}
			}
		}
		finished = ckErr == nil
		for i := range pipes {
			finished = finished && ended[i] && errs[i] == nil
		}
		if finished {
			// Every component has finished: a pending checkpoint is
			// complete, and one more records the finished job, so that a
			// restart does nothing twice.
			if ck.cfg.Cluster != nil {
				ckErr = ck.finalJoined(ctx.Done())
			} else {
				ckErr = ck.final()
			}
		} else {
			ck.abort()
		}
	} else {
		wg.Wait()
	}
	var firstErr error
	for _, err := range errs {
		stopped := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		if err != nil && !(stopped && (ctx.Err() != nil || ctx2.Err() != nil)) {
			firstErr = err
			break
		}
	}
	if firstErr == nil {
		firstErr = ckErr
	}
	for i := range pipes {
		var err error
		stats[i], err = runners[i].close(ended[i], ck != nil && !finished)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return stats, firstErr
}

func newRunner(ctx context.Context, p *Pipeline, ck *checkpointer, pi int) *runner {
	depth := p.ChannelDepth
	if depth <= 0 {
		depth = 4
	}
	r := &runner{ctx: ctx, depth: depth, p: p, ck: ck, pi: pi}
	r.ctx2, r.cancel = context.WithCancel(ctx)
	r.sinkStats = &OpStats{Name: "sink", Watermark: MinWatermark}
	count := map[Source]int{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Binary == nil && n.Source != nil {
			count[n.Source]++
		}
		for _, in := range n.Inputs {
			walk(in)
		}
	}
	walk(p.root())
	for src, k := range count {
		if k > 1 {
			if r.shared == nil {
				r.shared = map[Source]*fanout{}
			}
			r.shared[src] = &fanout{readers: k}
		}
	}
	return r
}

// run drives the pipeline to its end (or stop or error), then flushes its
// sink: a two-phase sink pre-commits at end of input and publishes with the
// final checkpoint; other sinks flush, also on a drained stop.
func (r *runner) run() (bool, error) {
	p := r.p
	defer r.cancel()
	var sinkComp *component
	if r.ck != nil {
		sinkComp = r.ck.sinks[r.pi]
	}
	sinkOut := &sinkOutput{sink: p.Sink, stats: r.sinkStats, r: r, comp: sinkComp}
	ended, runErr := r.runNode(p.root(), sinkOut)
	r.cancel()
	r.wg.Wait()
	if runErr == nil {
		runErr = r.firstErr()
	}
	if runErr != nil {
		return ended, runErr
	}
	if x, ok := p.Sink.(exchangeOut); ok && ended {
		if err := x.end(); err != nil {
			return ended, err
		}
	}
	if tp, ok := p.Sink.(TwoPhaseSink); ok && r.ck != nil {
		if !ended {
			return ended, nil
		}
		if err := tp.PreCommit(); err != nil {
			return ended, err
		}
		return ended, r.ck.finish(sinkComp)
	}
	if err := p.Sink.Flush(); err != nil {
		return ended, err
	}
	if ended && r.ck != nil {
		return ended, r.ck.finish(sinkComp)
	}
	return ended, nil
}

// close collects the stats and closes operators and the sink; abort
// discards a two-phase sink's open transaction.
func (r *runner) close(ended, abort bool) (*Stats, error) {
	var runErr error
	reported := map[any]bool{}
	for _, n := range r.nodes {
		for i, op := range n.node.Ops {
			if rep, ok := op.(StatsReporter); ok {
				n.stats[i+1].Extra = rep.Stats()
			}
			if c, ok := op.(Closer); ok {
				if err := c.Close(); err != nil && runErr == nil {
					runErr = err
				}
			}
		}
		if rep, ok := n.head().(StatsReporter); ok && !reported[n.head()] {
			n.stats[0].Extra = rep.Stats()
			if n.node.Binary == nil {
				reported[n.head()] = true // a shared source counts once
			}
		}
		if c, ok := n.node.Binary.(Closer); ok {
			if err := c.Close(); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	p := r.p
	if rep, ok := p.Sink.(StatsReporter); ok {
		r.sinkStats.Extra = rep.Stats()
	}
	if tp, ok := p.Sink.(TwoPhaseSink); ok && abort {
		if err := tp.Abort(); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := p.Sink.Close(); err != nil && runErr == nil {
		runErr = err
	}
	st := &Stats{Interrupted: !ended}
	for _, n := range r.nodes {
		for _, s := range n.stats {
			st.Ops = append(st.Ops, *s)
		}
	}
	st.Ops = append(st.Ops, *r.sinkStats)
	return st, runErr
}

type runner struct {
	ctx       context.Context // the caller's: cancelled = drained stop
	ctx2      context.Context // cancelled on stop or on the first error
	cancel    context.CancelFunc
	depth     int
	p         *Pipeline
	ck        *checkpointer // nil without checkpoints
	pi        int           // the pipeline's index in the job
	sinkStats *OpStats
	wg        sync.WaitGroup
	mu        sync.Mutex
	errs      []error
	nodes     []*nodeRun
	shared    map[Source]*fanout // sources read by several nodes
}

func (r *runner) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	r.cancel()
}

func (r *runner) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, err := range r.errs {
		if !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// nodeRun is one node's chain and counters: stats[0] is the node's head
// (source or binary operator), stats[i+1] its i-th chained operator.
type nodeRun struct {
	node  *Node
	stats []*OpStats
	outs  []Output // outs[i]: what operator i emits into
	head0 Output   // the chain's entry
	pub   uint64   // the LiveStats generation last published
}

func (n *nodeRun) head() any {
	if n.node.Binary != nil {
		return n.node.Binary
	}
	return n.node.Source
}

// chain wires a node's operators in front of next.
func (r *runner) chain(n *Node, next Output) *nodeRun {
	nr := &nodeRun{node: n}
	headName := sourceName(n)
	if n.Binary != nil {
		headName = fmt.Sprintf("%T", n.Binary)
		if len(n.Names) > len(n.Ops) {
			headName = n.Names[len(n.Ops)]
		}
	}
	nr.stats = append(nr.stats, &OpStats{Name: headName, Watermark: MinWatermark})
	for i := range n.Ops {
		name := fmt.Sprintf("op%d", i+1)
		if i < len(n.Names) {
			name = n.Names[i]
		}
		nr.stats = append(nr.stats, &OpStats{Name: name, Watermark: MinWatermark})
	}
	nr.outs = make([]Output, len(n.Ops))
	var comps []*component
	if r.ck != nil {
		comps = r.ck.nodes[n].ops
	}
	head := next
	for i := len(n.Ops) - 1; i >= 0; i-- {
		s := nr.stats[i+1]
		nr.outs[i] = &counter{stats: s, next: head}
		st := &stage{op: n.Ops[i], stats: s, next: nr.outs[i], ck: r.ck}
		if i < len(comps) {
			st.comp = comps[i]
		}
		head = st
	}
	nr.head0 = head
	r.mu.Lock()
	r.nodes = append(r.nodes, nr)
	r.mu.Unlock()
	return nr
}

// send delivers m on ch unless the job is stopping.
func (r *runner) send(ch chan<- Message, m Message) error {
	select {
	case ch <- m:
		return nil
	case <-r.ctx2.Done():
		if m.Batch != nil {
			m.Batch.Release()
		}
		return r.ctx2.Err()
	}
}

// broadcast sends m to every channel: each receives its own Batch (sharing
// the immutable columns, with a reference each).
func (r *runner) broadcast(chs []chan Message, m Message) error {
	for i, ch := range chs[:len(chs)-1] {
		c := m
		if m.Batch != nil {
			b := *m.Batch
			b.Rec.Retain()
			c.Batch = &b
		}
		if err := r.send(ch, c); err != nil {
			if m.Batch != nil {
				for range chs[i+1:] {
					m.Batch.Rec.Release()
				}
			}
			return err
		}
	}
	return r.send(chs[len(chs)-1], m)
}

// sourceInput is the channel a source node reads. A source shared by
// several nodes (one table read by several references of a query) runs
// once: the first node to ask starts it, and every sharing node receives
// every message.
func (r *runner) sourceInput(src Source, comp *component) <-chan Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.shared[src]
	if f == nil {
		return r.startSource(src, comp, []chan Message{make(chan Message, r.depth)})[0]
	}
	if f.chans == nil {
		f.chans = make([]chan Message, f.readers)
		for i := range f.chans {
			f.chans[i] = make(chan Message, r.depth)
		}
		r.startSource(src, comp, f.chans)
	}
	f.next++
	return f.chans[f.next-1]
}

// fanout is a source shared by several nodes of the pipeline.
type fanout struct {
	readers, next int
	chans         []chan Message
}

// startSource runs a source in its own goroutine; each of the channels
// carries its messages, the final watermark and end of input when its input
// ended, and is closed after.
func (r *runner) startSource(src Source, comp *component, chs []chan Message) []chan Message {
	emit := func(m Message) error { return r.broadcast(chs, m) }
	if comp != nil {
		comp.src.SetBarriers(comp.barriers)
		emit = func(m Message) error {
			if m.Kind == KindBarrier {
				if err := r.ck.snapshot(comp, m.Checkpoint); err != nil {
					return err
				}
			}
			return r.broadcast(chs, m)
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			for _, ch := range chs {
				close(ch)
			}
		}()
		err := src.Run(r.ctx2, emit)
		if err == nil && comp != nil {
			err = r.ck.finish(comp)
		}
		switch {
		case err == nil:
			if r.broadcast(chs, Message{Kind: KindWatermark, Watermark: MaxWatermark}) == nil {
				r.broadcast(chs, Message{Kind: KindEnd})
			}
		case errors.Is(err, context.Canceled) && (r.ctx.Err() != nil || r.ctx2.Err() != nil):
			// drained stop, or another part failed: no final watermark
		default:
			r.fail(err)
		}
	}()
	return chs
}

// startNode runs a non-root node in its own goroutine, emitting into a new
// channel.
func (r *runner) startNode(n *Node) <-chan Message {
	ch := make(chan Message, r.depth)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(ch)
		ended, err := r.runNode(n, &chanOutput{r: r, ch: ch})
		if err != nil {
			r.fail(err)
			return
		}
		if ended {
			r.send(ch, Message{Kind: KindEnd})
		}
	}()
	return ch
}

// chanOutput forwards a node's output to its parent's input channel.
type chanOutput struct {
	r  *runner
	ch chan<- Message
}

func (c *chanOutput) Emit(b *vector.Batch) error {
	return c.r.send(c.ch, Message{Kind: KindData, Batch: b})
}
func (c *chanOutput) EmitWatermark(wm int64) error {
	return c.r.send(c.ch, Message{Kind: KindWatermark, Watermark: wm})
}

func (c *chanOutput) EmitBarrier(id uint64) error {
	return c.r.send(c.ch, Message{Kind: KindBarrier, Checkpoint: id})
}

func (c *chanOutput) emitStatus(idle bool) error {
	return c.r.send(c.ch, statusMessage(idle))
}

// statusOutput is implemented by the ends of a chain that carry the
// watermark status on: a node's channel to its parent, an exchange's
// upstream end. Operators do not see the status; it passes around them to
// the chain's end, after everything they emitted before it (a chain runs
// in one goroutine).
type statusOutput interface {
	emitStatus(idle bool) error
}

// emitStatus hands the watermark status to the end of a chain, if it
// carries it on (a sink that is not an exchange has no use for it).
func emitStatus(tail Output, idle bool) error {
	if s, ok := tail.(statusOutput); ok {
		return s.emitStatus(idle)
	}
	return nil
}

func statusMessage(idle bool) Message {
	if idle {
		return Message{Kind: KindIdle}
	}
	return Message{Kind: KindActive}
}

// finishNode marks a node's operators finished after its input ended.
func (r *runner) finishNode(n *Node) error {
	if r.ck == nil {
		return nil
	}
	nc := r.ck.nodes[n]
	if err := r.ck.finish(nc.head); err != nil {
		return err
	}
	for _, c := range nc.ops {
		if err := r.ck.finish(c); err != nil {
			return err
		}
	}
	return nil
}

// runNode consumes a node's inputs through its chain into next, in the
// calling goroutine. It returns whether every input ended.
func (r *runner) runNode(n *Node, next Output) (bool, error) {
	nr := r.chain(n, next)
	head := nr.stats[0]
	var ended bool
	var err error
	if n.Binary == nil {
		var comp *component
		if r.ck != nil {
			comp = r.ck.nodes[n].source
		}
		ended, err = r.consume(nr, r.sourceInput(n.Source, comp), head, nr.head0, next)
	} else {
		if len(n.Inputs) != 2 {
			return false, fmt.Errorf("binary operator with %d inputs", len(n.Inputs))
		}
		ended, err = r.consumeTwo(nr, [2]<-chan Message{r.startNode(n.Inputs[0]), r.startNode(n.Inputs[1])}, head, nr.head0, next)
	}
	if err != nil {
		r.fail(err)
		return false, err
	}
	if ended {
		for i, op := range n.Ops {
			if f, ok := op.(Finisher); ok {
				if err := f.Finish(nr.outs[i]); err != nil {
					return false, err
				}
			}
		}
		if err := r.finishNode(n); err != nil {
			return false, err
		}
	}
	return ended, nil
}

// consume drives a chain from one input channel (a source's).
// tail is the chain's end (its parent's channel or the sink).
func (r *runner) consume(nr *nodeRun, in <-chan Message, st *OpStats, head, tail Output) (bool, error) {
	d := &driver{in: []<-chan Message{in}, drain: true, fail: r.cancel, tick: r.ticker(nr)}
	return d.run(&chainTask{st: st, head: head, tail: tail})
}

// chainTask is a node's chain behind one input.
type chainTask struct {
	st         *OpStats
	head, tail Output
}

func (c *chainTask) status(idle bool) error { return emitStatus(c.tail, idle) }

func (c *chainTask) data(_ int, b *vector.Batch) error {
	c.st.RowsOut += int64(b.Len())
	return c.head.Emit(b)
}

func (c *chainTask) watermark(wm int64) error {
	c.st.Watermark = wm
	return c.head.EmitWatermark(wm)
}

// barrier enters the chain: the source wrote its state as it emitted the
// barrier (startSource); each stage writes its operator's.
func (c *chainTask) barrier(id uint64) error { return c.head.EmitBarrier(id) }

// consumeTwo drives a binary operator from two input channels (see
// driver: its watermark is the minimum of the inputs', barriers are
// aligned).
func (r *runner) consumeTwo(nr *nodeRun, in [2]<-chan Message, st *OpStats, head, tail Output) (bool, error) {
	d := &driver{in: in[:], drain: true, fail: r.cancel, tick: r.ticker(nr)}
	return d.run(&binaryTask{r: r, n: nr.node, st: st, out: &counter{stats: st, next: head}, head: head, tail: tail})
}

// binaryTask is a binary operator (a join, a union) and the chain behind it.
type binaryTask struct {
	r               *runner
	n               *Node
	st              *OpStats
	out, head, tail Output
}

func (t *binaryTask) status(idle bool) error { return emitStatus(t.tail, idle) }

func (t *binaryTask) data(side int, b *vector.Batch) error {
	t.st.RowsIn += int64(b.Len())
	return t.n.Binary.ProcessSide(side, b, t.out)
}

func (t *binaryTask) watermark(wm int64) error {
	t.st.Watermark = wm
	if h, ok := t.n.Binary.(WatermarkHandler); ok {
		return h.OnWatermark(wm, t.out)
	}
	return t.head.EmitWatermark(wm)
}

// barrier: the aligned barrier reaches the binary operator, whose state
// is written first; then it goes on through the chain behind it.
func (t *binaryTask) barrier(id uint64) error {
	if t.r.ck != nil {
		if c := t.r.ck.nodes[t.n].head; c != nil {
			if err := t.r.ck.snapshot(c, id); err != nil {
				return err
			}
		}
	}
	if h, ok := t.n.Binary.(BarrierHandler); ok {
		return h.OnBarrier(id, t.out)
	}
	return t.out.EmitBarrier(id)
}

// ticker publishes a node's live counters as messages pass (nil: none).
func (r *runner) ticker(nr *nodeRun) func() {
	if r.p.Live == nil {
		return nil
	}
	return func() { r.p.Live.tick(r, nr) }
}
