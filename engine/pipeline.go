package engine

import (
	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// Pipeline is a job graph run embedded: a tree of nodes ending in a sink.
// The simple form is linear (Source, Ops); Root, when set, is a tree whose
// binary nodes (joins, unions) consume two input nodes. Every source runs in
// its own goroutine and every node's chain in another, fed by bounded
// channels, so decoding and operators overlap on several cores.
type Pipeline struct {
	Name   string
	Source Source
	Ops    []Operator
	Names  []string // operator names, for stats
	Root   *Node
	Sink   Sink
	// SinkName names the sink table (state part names, guarantees).
	SinkName string
	// SinkSig is the sink's state signature (checkpoint.Signature): what
	// a restore compares with the checkpoint's.
	SinkSig checkpoint.Signature
	// Subtask and Parallelism place the pipeline in a parallel job
	// (Parallelize sets them; 0 and 0 mean a job of one subtask).
	Subtask, Parallelism int
	// ChannelDepth bounds the batches in flight on each edge.
	ChannelDepth int
	// Live, when set, receives the pipeline's counters while it runs.
	Live *LiveStats
}

// Node is a vertex of a job tree: a source, or a binary operator over two
// input nodes, followed by a chain of single-input operators.
type Node struct {
	Source Source
	Binary BinaryOperator
	Inputs []*Node
	Ops    []Operator
	Names  []string
	// SourceName names the source table (state part names).
	SourceName string
	// State signatures (what shapes the state, checkpoint.Signature) of
	// the source, the binary operator and each stateful operator of Ops
	// (Sigs is parallel to Ops; nil for a stateless one). A restore
	// matches them with the checkpoint's, operator by operator.
	SourceSig, BinarySig checkpoint.Signature
	Sigs                 []checkpoint.Signature
}

// sigOf is the signature of Ops[i].
func (n *Node) sigOf(i int) checkpoint.Signature {
	if i < len(n.Sigs) {
		return n.Sigs[i]
	}
	return nil
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

// stage is one operator of a chain: it counts what enters, hands the
// operator rows, watermarks and barriers, and at a barrier writes the
// operator's state (comp, nil for a stateless operator or without
// checkpoints) before the operator sees it.
type stage struct {
	op    Operator
	stats *OpStats
	next  Output
	ck    *checkpointer
	comp  *component
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

// EmitBarrier is the barrier's step through the operator: its state goes
// into checkpoint id, then the operator forwards the barrier (or the stage
// does).
func (s *stage) EmitBarrier(id uint64) error {
	if s.comp != nil {
		if err := s.ck.snapshot(s.comp, id); err != nil {
			return err
		}
	}
	if h, ok := s.op.(BarrierHandler); ok {
		return h.OnBarrier(id, s.next)
	}
	return s.next.EmitBarrier(id)
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
func (c *counter) EmitBarrier(id uint64) error  { return c.next.EmitBarrier(id) }

type sinkOutput struct {
	sink  Sink
	stats *OpStats
	r     *runner
	comp  *component
}

// EmitBarrier ends the barrier's route through a pipeline: a two-phase
// sink pre-commits, any other sink flushes (a completed checkpoint then
// covers only rows the sink's system holds: at-least-once), then the
// sink's state joins the checkpoint; an exchange passes the barrier to
// every downstream subtask.
func (s *sinkOutput) EmitBarrier(id uint64) error {
	_, exchange := s.sink.(exchangeOut)
	if tp, ok := s.sink.(TwoPhaseSink); ok {
		if err := tp.PreCommit(); err != nil {
			return err
		}
	} else if !exchange {
		if err := s.sink.Flush(); err != nil {
			return err
		}
	}
	if err := s.r.ck.snapshot(s.comp, id); err != nil {
		return err
	}
	if x, ok := s.sink.(exchangeOut); ok {
		return x.barrier(id)
	}
	return nil
}

func (s *sinkOutput) Emit(b *vector.Batch) error {
	s.stats.RowsIn += int64(b.Len())
	if b.Len() == 0 {
		b.Release()
		return nil
	}
	return s.sink.Write(b)
}

// emitStatus passes the watermark status on to an exchange's downstream
// subtasks; any other sink has no use for it.
func (s *sinkOutput) emitStatus(idle bool) error {
	if x, ok := s.sink.(exchangeOut); ok {
		return x.status(idle)
	}
	return nil
}

func (s *sinkOutput) EmitWatermark(wm int64) error {
	if wm <= s.stats.Watermark {
		return nil
	}
	s.stats.Watermark = wm
	if x, ok := s.sink.(exchangeOut); ok && wm != MaxWatermark {
		return x.watermark(wm)
	}
	return nil
}
