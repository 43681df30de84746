package window

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
)

// Kind names a streaming window function (DESIGN §3).
type Kind uint8

const (
	// Tumble is TUMBLE(ts, size): fixed, non-overlapping windows.
	Tumble Kind = iota
	// Hop is HOP(ts, size, slide): windows of Size starting every Slide.
	Hop
	// Session is SESSION(ts, gap): per-key activity windows.
	Session
	// Cumulate is CUMULATE(ts, step, max): windows growing by Step
	// from an aligned base up to Size (= max).
	Cumulate
)

func (k Kind) String() string {
	switch k {
	case Tumble:
		return "TUMBLE"
	case Hop:
		return "HOP"
	case Session:
		return "SESSION"
	case Cumulate:
		return "CUMULATE"
	}
	return fmt.Sprintf("WindowKind(%d)", uint8(k))
}

// Spec describes a window in milliseconds. Windows are [start, end)
// aligned to epoch 0 plus Offset.
//
//	TUMBLE:   Size (, Offset)
//	HOP:      Size, Slide (, Offset); Size need not be a multiple of Slide
//	          (with Size < Slide, rows between windows belong to none)
//	CUMULATE: Step, Size (the max; a multiple of Step) (, Offset)
//	SESSION:  Gap (Offset is ignored)
//
// Alignment uses floor division, so negative times and starts work; times
// within Size (or Gap) of the int64 limits overflow.
type Spec struct {
	Kind   Kind
	Size   int64
	Slide  int64
	Step   int64
	Gap    int64
	Offset int64
}

// Validate reports the first problem with the spec, naming the field.
func (s Spec) Validate() error {
	switch s.Kind {
	case Tumble:
		if s.Size <= 0 {
			return fmt.Errorf("TUMBLE: size must be > 0 ms, got %d", s.Size)
		}
	case Hop:
		if s.Size <= 0 {
			return fmt.Errorf("HOP: size must be > 0 ms, got %d", s.Size)
		}
		if s.Slide <= 0 {
			return fmt.Errorf("HOP: slide must be > 0 ms, got %d", s.Slide)
		}
	case Cumulate:
		if s.Step <= 0 {
			return fmt.Errorf("CUMULATE: step must be > 0 ms, got %d", s.Step)
		}
		if s.Size <= 0 {
			return fmt.Errorf("CUMULATE: max size must be > 0 ms, got %d", s.Size)
		}
		if s.Size%s.Step != 0 {
			return fmt.Errorf("CUMULATE: max size %d ms must be a multiple of step %d ms", s.Size, s.Step)
		}
	case Session:
		if s.Gap <= 0 {
			return fmt.Errorf("SESSION: gap must be > 0 ms, got %d", s.Gap)
		}
	default:
		return fmt.Errorf("unknown window kind %d", uint8(s.Kind))
	}
	return nil
}

// floorDiv is a / b rounded towards -inf, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// Align returns the largest p*k+off <= ts.
func Align(ts, period, off int64) int64 {
	return floorDiv(ts-off, period)*period + off
}

// CheckTimeType reports whether dt may be the event-time column.
func CheckTimeType(dt arrow.DataType) error {
	switch t := dt.(type) {
	case *arrow.Int64Type:
		return nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Millisecond {
			return nil
		}
		return fmt.Errorf("event-time column must be BIGINT epoch-ms or TIMESTAMP(3), got %s", dt)
	}
	return fmt.Errorf("event-time column must be BIGINT epoch-ms or TIMESTAMP(3), got %s", dt)
}

// NoWatermark is the watermark before the first one.
const NoWatermark = math.MinInt64
