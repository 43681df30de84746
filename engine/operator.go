package engine

import (
	"context"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/vector"
)

// The operator contract lives with the operators (engine/op, a lower
// layer); the engine names it here for its callers.
type (
	Output           = op.Output
	Operator         = op.Operator
	WatermarkHandler = op.WatermarkHandler
	BarrierHandler   = op.BarrierHandler
	Finisher         = op.Finisher
	Closer           = op.Closer
	StatsReporter    = op.StatsReporter
	BinaryOperator   = op.BinaryOperator
)

// Sink is the end of a chain.
type Sink interface {
	Write(b *vector.Batch) error
	// Flush is called at end of input and on a drained stop; the sink makes
	// everything written so far durable/visible.
	Flush() error
	Close() error
}

// Source produces the messages of one input. Run sends data and watermark
// messages to emit until its input is exhausted (it then returns nil, and
// the runtime sends the final watermark and end of input) or ctx is done.
type Source interface {
	Run(ctx context.Context, emit func(Message) error) error
}
