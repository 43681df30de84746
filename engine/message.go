// Package engine runs a job graph: sources, operator chains and sinks wired
// by in-process channels. It knows nothing of SQL; the planner builds the
// graph from a Substrait plan.
package engine

import (
	"math"

	"github.com/clink-dev/clink/vector"
)

// Kind says what a Message carries.
type Kind uint8

const (
	// KindData carries a batch of rows.
	KindData Kind = iota
	// KindWatermark says no row with a smaller event time than Watermark is
	// still expected from this input (beyond what lateness allows).
	KindWatermark
	// KindBarrier is a checkpoint barrier; it separates the rows before a
	// checkpoint from those after it.
	KindBarrier
	// KindEnd says the input is exhausted.
	KindEnd
	// KindIdle is the input's watermark status turning idle (Flink's
	// WatermarkStatus.IDLE): it expects no rows for now, and a task
	// aligning watermarks over several inputs leaves it out of the
	// minimum until it turns active again. Barriers still pass it.
	KindIdle
	// KindActive is the input's watermark status turning active again; it
	// comes before the rows that end the idleness.
	KindActive
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindWatermark:
		return "watermark"
	case KindBarrier:
		return "barrier"
	case KindEnd:
		return "end"
	case KindIdle:
		return "idle"
	case KindActive:
		return "active"
	}
	return "unknown"
}

// MaxWatermark is the final watermark of a bounded input: every window fires.
const MaxWatermark = int64(math.MaxInt64)

// MinWatermark is the watermark before any row has been seen.
const MinWatermark = int64(math.MinInt64)

// Message is the one envelope on every channel: data, watermark, watermark
// status (idle, active), barrier and end of input travel in order with each
// other.
type Message struct {
	Kind       Kind
	Batch      *vector.Batch
	Watermark  int64
	Checkpoint uint64
}
