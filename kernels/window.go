package kernels

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// WindowKind names a streaming window function (DESIGN §3).
type WindowKind uint8

const (
	// WindowTumble is TUMBLE(ts, size): fixed, non-overlapping windows.
	WindowTumble WindowKind = iota
	// WindowHop is HOP(ts, size, slide): windows of Size starting every Slide.
	WindowHop
	// WindowSession is SESSION(ts, gap): per-key activity windows.
	WindowSession
	// WindowCumulate is CUMULATE(ts, step, max): windows growing by Step
	// from an aligned base up to Size (= max).
	WindowCumulate
)

func (k WindowKind) String() string {
	switch k {
	case WindowTumble:
		return "TUMBLE"
	case WindowHop:
		return "HOP"
	case WindowSession:
		return "SESSION"
	case WindowCumulate:
		return "CUMULATE"
	}
	return fmt.Sprintf("WindowKind(%d)", uint8(k))
}

// WindowSpec describes a window in milliseconds. Windows are [start, end)
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
type WindowSpec struct {
	Kind   WindowKind
	Size   int64
	Slide  int64
	Step   int64
	Gap    int64
	Offset int64
}

// Validate reports the first problem with the spec, naming the field.
func (s WindowSpec) Validate() error {
	switch s.Kind {
	case WindowTumble:
		if s.Size <= 0 {
			return fmt.Errorf("TUMBLE: size must be > 0 ms, got %d", s.Size)
		}
	case WindowHop:
		if s.Size <= 0 {
			return fmt.Errorf("HOP: size must be > 0 ms, got %d", s.Size)
		}
		if s.Slide <= 0 {
			return fmt.Errorf("HOP: slide must be > 0 ms, got %d", s.Slide)
		}
	case WindowCumulate:
		if s.Step <= 0 {
			return fmt.Errorf("CUMULATE: step must be > 0 ms, got %d", s.Step)
		}
		if s.Size <= 0 {
			return fmt.Errorf("CUMULATE: max size must be > 0 ms, got %d", s.Size)
		}
		if s.Size%s.Step != 0 {
			return fmt.Errorf("CUMULATE: max size %d ms must be a multiple of step %d ms", s.Size, s.Step)
		}
	case WindowSession:
		if s.Gap <= 0 {
			return fmt.Errorf("SESSION: gap must be > 0 ms, got %d", s.Gap)
		}
	default:
		return fmt.Errorf("unknown window kind %d", uint8(s.Kind))
	}
	return nil
}

// winFloorDiv is a / b rounded towards -inf, for b > 0.
func winFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// winAlign returns the largest p*k+off <= ts.
func winAlign(ts, period, off int64) int64 {
	return winFloorDiv(ts-off, period)*period + off
}

// winNulls writes, for each entry k, whether arr is null at row rows[k]
// (rows nil: row k) into dst, and returns dst; nil if arr has no nulls.
func winNulls(dst []bool, arr arrow.Array, rows []int32, n int) []bool {
	if arr.NullN() == 0 {
		return nil
	}
	if cap(dst) < n {
		dst = make([]bool, n)
	}
	dst = dst[:n]
	bm := arr.NullBitmapBytes()
	off := arr.Data().Offset()
	if rows == nil {
		for k := range dst {
			dst[k] = !bitutil.BitIsSet(bm, off+k)
		}
		return dst
	}
	for k, r := range rows[:n] {
		dst[k] = !bitutil.BitIsSet(bm, off+int(r))
	}
	return dst
}

// winBoolsInto reads the bit-packed boolean values of entries as 0/1.
func winBoolsInto(dst []uint8, arr arrow.Array, rows []int32) {
	vb := arr.Data().Buffers()[1]
	if vb == nil {
		clear(dst)
		return
	}
	bm := vb.Bytes()
	off := arr.Data().Offset()
	if rows == nil {
		for k := range dst {
			i := off + k
			dst[k] = (bm[i>>3] >> (i & 7)) & 1
		}
		return
	}
	for k, r := range rows[:len(dst)] {
		i := off + int(r)
		dst[k] = (bm[i>>3] >> (i & 7)) & 1
	}
}

// winGrow returns s resized to n, reusing its capacity.
func winGrow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// winTimeType reports whether dt may be the event-time column.
func winTimeType(dt arrow.DataType) error {
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

const winNoWatermark = math.MinInt64
