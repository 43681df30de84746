package op

import "github.com/clink-dev/clink/vector"

// Output receives what an operator produces. The batch passed to Emit is
// owned by the callee afterwards.
type Output interface {
	Emit(b *vector.Batch) error
	EmitWatermark(wm int64) error
}

// Operator is the one interface every operator implements. Process owns b:
// it passes it on or releases it.
type Operator interface {
	Process(b *vector.Batch, out Output) error
}

// WatermarkHandler is implemented by operators that act on watermarks
// (window aggregates fire). Without it the watermark is forwarded. A
// handler forwards the watermark itself (out.EmitWatermark) after emitting
// what it released.
type WatermarkHandler interface {
	OnWatermark(wm int64, out Output) error
}

// Finisher is implemented by operators that flush at end of input. It runs
// after the final watermark has been delivered.
type Finisher interface {
	Finish(out Output) error
}

// Closer releases an operator's resources when the job stops, finished or not.
type Closer interface {
	Close() error
}

// StatsReporter exposes an operator's counters (late rows, groups, ...).
type StatsReporter interface {
	Stats() map[string]int64
}
