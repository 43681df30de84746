package agg

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// TestGroupAggIntSum128 checks that an integer sum is exact past 64 bits:
// AVG divides the 128-bit sum, SUM reports its low 64 bits, and the state
// column holds the exact sum as DECIMAL(38, 0).
func TestGroupAggIntSum128(t *testing.T) {
	a := &gaIntSum[int64]{avg: true}
	a.Grow(1)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{math.MaxInt64, math.MaxInt64, 2}, nil)
	arr := b.NewArray()
	b.Release()
	defer arr.Release()
	a.Step([]int32{0, 0, 0}, arr, []int32{0, 1, 2}, make([]bool, 3))
	if got, want := aggInt128Float(*a.hi.At(0), *a.lo.At(0))/3, math.Ldexp(1, 64)/3; got != want {
		t.Errorf("AVG = %v, want %v", got, want)
	}
	if *a.hi.At(0) != 1 || *a.lo.At(0) != 0 { // 2^64
		t.Errorf("sum hi:lo = %d:%d", *a.hi.At(0), *a.lo.At(0))
	}
	cols := a.StateColumns(mem, []int32{0})
	defer column.ReleaseAll(cols)
	if got := cols[0].(*array.Decimal128).Value(0).ToString(0); got != "18446744073709551616" {
		t.Errorf("state sum = %s", got)
	}
}
