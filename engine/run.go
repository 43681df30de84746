package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/clink-dev/clink/vector"
)

// Run executes the pipeline until its input ends (then the final watermark
// fires every open window and the sink is flushed), ctx is cancelled (the
// sink is flushed, open windows are not), or an error occurs.
func (p *Pipeline) Run(ctx context.Context) (*Stats, error) {
	root := p.Root
	if root == nil {
		root = &Node{Source: p.Source, Ops: p.Ops, Names: p.Names}
	}
	depth := p.ChannelDepth
	if depth <= 0 {
		depth = 4
	}
	r := &runner{ctx: ctx, depth: depth}
	r.ctx2, r.cancel = context.WithCancel(ctx)
	defer r.cancel()

	sinkStats := &OpStats{Name: "sink", Watermark: MinWatermark}
	sinkOut := &sinkOutput{sink: p.Sink, stats: sinkStats}
	ended, runErr := r.runNode(root, sinkOut)
	r.cancel()
	r.wg.Wait()
	if runErr == nil {
		runErr = r.firstErr()
	}
	if runErr == nil {
		runErr = p.Sink.Flush()
	}
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
		if rep, ok := n.head().(StatsReporter); ok {
			n.stats[0].Extra = rep.Stats()
		}
		if c, ok := n.node.Binary.(Closer); ok {
			if err := c.Close(); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	if rep, ok := p.Sink.(StatsReporter); ok {
		sinkStats.Extra = rep.Stats()
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
	st.Ops = append(st.Ops, *sinkStats)
	return st, runErr
}

type runner struct {
	ctx    context.Context // the caller's: cancelled = drained stop
	ctx2   context.Context // cancelled on stop or on the first error
	cancel context.CancelFunc
	depth  int
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	nodes  []*nodeRun
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
	headName := "source"
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
	head := next
	for i := len(n.Ops) - 1; i >= 0; i-- {
		s := nr.stats[i+1]
		nr.outs[i] = &counter{stats: s, next: head}
		head = &stage{op: n.Ops[i], stats: s, next: nr.outs[i]}
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

// startSource runs a source in its own goroutine; the returned channel
// carries its messages, the final watermark and end of input when its input
// ended, and is closed after.
func (r *runner) startSource(src Source) <-chan Message {
	ch := make(chan Message, r.depth)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(ch)
		err := src.Run(r.ctx2, func(m Message) error { return r.send(ch, m) })
		switch {
		case err == nil:
			if r.send(ch, Message{Kind: KindWatermark, Watermark: MaxWatermark}) == nil {
				r.send(ch, Message{Kind: KindEnd})
			}
		case errors.Is(err, context.Canceled) && (r.ctx.Err() != nil || r.ctx2.Err() != nil):
			// drained stop, or another part failed: no final watermark
		default:
			r.fail(err)
		}
	}()
	return ch
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

// runNode consumes a node's inputs through its chain into next, in the
// calling goroutine. It returns whether every input ended.
func (r *runner) runNode(n *Node, next Output) (bool, error) {
	nr := r.chain(n, next)
	head := nr.stats[0]
	var ended bool
	var err error
	if n.Binary == nil {
		ended, err = r.consume(r.startSource(n.Source), head, nr.head0)
	} else {
		if len(n.Inputs) != 2 {
			return false, fmt.Errorf("binary operator with %d inputs", len(n.Inputs))
		}
		ended, err = r.consumeTwo(n.Binary, [2]<-chan Message{r.startNode(n.Inputs[0]), r.startNode(n.Inputs[1])}, head, nr.head0)
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
	}
	return ended, nil
}

// consume drives a chain from one input channel. After an error it drains
// the channel so the producer can stop.
func (r *runner) consume(in <-chan Message, st *OpStats, head Output) (bool, error) {
	var err error
	ended := false
	for m := range in {
		if err != nil {
			if m.Batch != nil {
				m.Batch.Release()
			}
			continue
		}
		switch m.Kind {
		case KindData:
			st.RowsOut += int64(m.Batch.Len())
			err = head.Emit(m.Batch)
		case KindWatermark:
			if m.Watermark > st.Watermark {
				st.Watermark = m.Watermark
			}
			err = head.EmitWatermark(m.Watermark)
		case KindEnd:
			ended = true
		}
		if err != nil {
			r.cancel()
		}
	}
	return ended, err
}

// consumeTwo drives a binary operator from two input channels; its
// watermark is the minimum of the inputs'.
func (r *runner) consumeTwo(op BinaryOperator, in [2]<-chan Message, st *OpStats, next Output) (bool, error) {
	wms := [2]int64{MinWatermark, MinWatermark}
	ended := [2]bool{}
	open := 2
	var err error
	for open > 0 {
		var m Message
		var ok bool
		side := 0
		select {
		case m, ok = <-in[0]:
			side = 0
		case m, ok = <-in[1]:
			side = 1
		}
		if !ok {
			in[side] = nil
			open--
			continue
		}
		if err != nil {
			if m.Batch != nil {
				m.Batch.Release()
			}
			continue
		}
		switch m.Kind {
		case KindData:
			st.RowsIn += int64(m.Batch.Len())
			err = op.ProcessSide(side, m.Batch, &counter{stats: st, next: next})
		case KindWatermark:
			if m.Watermark > wms[side] {
				wms[side] = m.Watermark
			}
			if wm := min(wms[0], wms[1]); wm > st.Watermark {
				st.Watermark = wm
				if h, ok := op.(WatermarkHandler); ok {
					err = h.OnWatermark(wm, &counter{stats: st, next: next})
				} else {
					err = next.EmitWatermark(wm)
				}
			}
		case KindEnd:
			ended[side] = true
		}
		if err != nil {
			r.cancel()
		}
	}
	return ended[0] && ended[1], err
}
