package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/clink-dev/clink/vector"
)

// Pipeline is a linear job graph run embedded: one source, a chain of
// operators and a sink. The source runs in its own goroutine; the chain and
// the sink run in another, fed by a bounded channel, so decoding and
// aggregation overlap on two cores.
type Pipeline struct {
	Name   string
	Source Source
	Ops    []Operator
	Names  []string // operator names, for stats
	Sink   Sink
	// ChannelDepth bounds the batches in flight between source and chain.
	ChannelDepth int
}

// OpStats are one operator's counters after (or during) a run.
type OpStats struct {
	Name      string
	RowsIn    int64
	RowsOut   int64
	Watermark int64
	Extra     map[string]int64
}

// Stats is what a run reports.
type Stats struct {
	Ops []OpStats
	// Interrupted is true when the run stopped on cancellation rather than
	// at the end of its input (open windows were not flushed).
	Interrupted bool
}

// Total sums the named extra counter over all operators.
func (s *Stats) Total(key string) int64 {
	var n int64
	for _, o := range s.Ops {
		n += o.Extra[key]
	}
	return n
}

type stage struct {
	op    Operator
	stats *OpStats
	next  Output
}

func (s *stage) Emit(b *vector.Batch) error {
	s.stats.RowsIn += int64(b.Len())
	return s.op.Process(b, s.next)
}

func (s *stage) EmitWatermark(wm int64) error {
	if wm <= s.stats.Watermark {
		return nil
	}
	s.stats.Watermark = wm
	if h, ok := s.op.(WatermarkHandler); ok {
		return h.OnWatermark(wm, s.next)
	}
	return s.next.EmitWatermark(wm)
}

// counter counts what a stage hands to the next one.
type counter struct {
	stats *OpStats
	next  Output
}

func (c *counter) Emit(b *vector.Batch) error {
	c.stats.RowsOut += int64(b.Len())
	return c.next.Emit(b)
}

func (c *counter) EmitWatermark(wm int64) error { return c.next.EmitWatermark(wm) }

type sinkOutput struct {
	sink  Sink
	stats *OpStats
}

func (s *sinkOutput) Emit(b *vector.Batch) error {
	s.stats.RowsIn += int64(b.Len())
	if b.Len() == 0 {
		b.Release()
		return nil
	}
	return s.sink.Write(b)
}

func (s *sinkOutput) EmitWatermark(wm int64) error {
	if wm > s.stats.Watermark {
		s.stats.Watermark = wm
	}
	return nil
}

// Run executes the pipeline until the source's input ends (then the final
// watermark fires every open window and the sink is flushed), ctx is
// cancelled (the sink is flushed, open windows are not), or an error occurs.
func (p *Pipeline) Run(ctx context.Context) (*Stats, error) {
	st := &Stats{Ops: make([]OpStats, len(p.Ops)+2)}
	st.Ops[0].Name = "source"
	for i := range p.Ops {
		name := fmt.Sprintf("op%d", i+1)
		if i < len(p.Names) {
			name = p.Names[i]
		}
		st.Ops[i+1].Name = name
	}
	st.Ops[len(st.Ops)-1].Name = "sink"
	for i := range st.Ops {
		st.Ops[i].Watermark = MinWatermark
	}

	var head Output = &sinkOutput{sink: p.Sink, stats: &st.Ops[len(st.Ops)-1]}
	outs := make([]Output, len(p.Ops))
	for i := len(p.Ops) - 1; i >= 0; i-- {
		s := &st.Ops[i+1]
		outs[i] = &counter{stats: s, next: head}
		head = &stage{op: p.Ops[i], stats: s, next: outs[i]}
	}

	depth := p.ChannelDepth
	if depth <= 0 {
		depth = 4
	}
	ch := make(chan Message, depth)
	srcCtx, cancelSrc := context.WithCancel(ctx)
	defer cancelSrc()

	var srcErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		err := p.Source.Run(srcCtx, func(m Message) error {
			select {
			case ch <- m:
				return nil
			case <-srcCtx.Done():
				if m.Batch != nil {
					m.Batch.Release()
				}
				return srcCtx.Err()
			}
		})
		switch {
		case err == nil:
			select {
			case ch <- Message{Kind: KindWatermark, Watermark: MaxWatermark}:
			case <-srcCtx.Done():
				return
			}
			ch <- Message{Kind: KindEnd}
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			// drained stop: no final watermark
		default:
			srcErr = err
		}
	}()

	srcStats := &st.Ops[0]
	srcStats.Watermark = MinWatermark
	var runErr error
	ended := false
	for m := range ch {
		if runErr != nil {
			if m.Batch != nil {
				m.Batch.Release()
			}
			continue
		}
		switch m.Kind {
		case KindData:
			n := int64(m.Batch.Len())
			srcStats.RowsOut += n
			runErr = head.Emit(m.Batch)
		case KindWatermark:
			if m.Watermark > srcStats.Watermark {
				srcStats.Watermark = m.Watermark
			}
			runErr = head.EmitWatermark(m.Watermark)
		case KindEnd:
			ended = true
		}
		if runErr != nil {
			cancelSrc()
		}
	}
	wg.Wait()
	if runErr == nil {
		runErr = srcErr
	}
	if runErr == nil && ended {
		runErr = p.finish(outs)
	}
	if runErr == nil {
		runErr = p.Sink.Flush()
	}
	for i, op := range p.Ops {
		if r, ok := op.(StatsReporter); ok {
			st.Ops[i+1].Extra = r.Stats()
		}
		if c, ok := op.(Closer); ok {
			if err := c.Close(); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	if r, ok := p.Source.(StatsReporter); ok {
		st.Ops[0].Extra = r.Stats()
	}
	if err := p.Sink.Close(); err != nil && runErr == nil {
		runErr = err
	}
	st.Interrupted = !ended
	return st, runErr
}

// finish lets every operator flush in chain order after the final
// watermark; what it emits flows through the rest of the chain.
func (p *Pipeline) finish(outs []Output) error {
	for i, op := range p.Ops {
		if f, ok := op.(Finisher); ok {
			if err := f.Finish(outs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
