package optest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// CPUTime is the process's user and system CPU time so far: benchmarks
// report rows per CPU-second, which a shared machine does not distort.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FmtFloat formats f as the shortest round-trip decimal of its bit size.
func FmtFloat(f float64, bits int) string { return strconv.FormatFloat(f, 'g', -1, bits) }

// FloorDiv is a / b rounded down, computed plainly (a reference).
func FloorDiv(a, b int64) int64 { return int64(math.Floor(float64(a) / float64(b))) }

// Append appends v (nil: NULL) of the random input's Go types to b.
func Append(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.(int64)))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int8Builder:
		bb.Append(v.(int8))
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	default:
		panic(fmt.Sprintf("Append %T", b))
	}
}

// Batch builds a batch holding rows, optionally hidden among filler rows
// behind a selection vector and behind a slice offset.
func Batch(mem memory.Allocator, schema *arrow.Schema, rows []*Row, rng *rand.Rand, sel bool) *vector.Batch {
	var phys []*Row
	var selv []int32
	lead := 0
	if sel {
		lead = rng.IntN(3)
		for range lead {
			phys = append(phys, &Row{Vals: wtRandomRow(rng, rng.Int64N(1e6), 5, 0), RowWM: rng.Int64()})
		}
		selv = []int32{}
		for _, r := range rows {
			for rng.IntN(3) == 0 {
				phys = append(phys, &Row{Vals: wtRandomRow(rng, rng.Int64N(1e6)-5e5, 5, 0), RowWM: rng.Int64()})
			}
			selv = append(selv, int32(len(phys)-lead))
			phys = append(phys, r)
		}
		for range rng.IntN(3) {
			phys = append(phys, &Row{Vals: wtRandomRow(rng, 0, 5, 0)})
		}
	} else {
		phys = rows
	}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for _, r := range phys {
		for c := range NumCols {
			Append(rb.Field(c), r.Vals[c])
		}
	}
	rec := rb.NewRecordBatch()
	wms := make([]int64, len(phys))
	for i, r := range phys {
		wms[i] = r.RowWM
	}
	if lead > 0 || (sel && rng.IntN(2) == 0) {
		end := int64(len(phys))
		s := rec.NewSlice(int64(lead), end)
		rec.Release()
		rec = s
		wms = wms[lead:]
	}
	return &vector.Batch{Rec: rec, Sel: selv, RowWatermark: wms}
}

// Cell renders value i of arr as the reference renders it.
func Cell(t testing.TB, arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "null"
	}
	switch a := arr.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Float64:
		return FmtFloat(a.Value(i), 64)
	case *array.Float32:
		return FmtFloat(float64(a.Value(i)), 32)
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	}
	t.Fatalf("unexpected output type %s", arr.DataType())
	return ""
}

// Result is an operator's output lines and counters.
type Result struct {
	Lines          []string
	Late, NullTime int64
}

// CountingAlloc is a cheap leak check for test input batches
// (memory.CheckedAllocator records a stack per allocation).
type CountingAlloc struct {
	Mem  memory.Allocator
	Size int
}

func (a *CountingAlloc) Allocate(n int) []byte {
	a.Size += n
	return a.Mem.Allocate(n)
}

func (a *CountingAlloc) Reallocate(n int, b []byte) []byte {
	a.Size += n - len(b)
	return a.Mem.Reallocate(n, b)
}

func (a *CountingAlloc) Free(b []byte) {
	a.Size -= len(b)
	a.Mem.Free(b)
}

// Compare fails at the first difference between got and want.
func Compare(t *testing.T, what string, got, want Result) {
	t.Helper()
	if got.Late != want.Late || got.NullTime != want.NullTime {
		t.Errorf("%s: late=%d nullTime=%d, want late=%d nullTime=%d", what, got.Late, got.NullTime, want.Late, want.NullTime)
	}
	if len(got.Lines) != len(want.Lines) {
		t.Errorf("%s: %d output rows, want %d", what, len(got.Lines), len(want.Lines))
	}
	for i := range min(len(got.Lines), len(want.Lines)) {
		if got.Lines[i] != want.Lines[i] {
			lo := max(0, i-2)
			t.Fatalf("%s: output row %d differs\n got: %q\nwant: %q", what, i,
				got.Lines[lo:min(i+3, len(got.Lines))], want.Lines[lo:min(i+3, len(want.Lines))])
		}
	}
	if len(got.Lines) != len(want.Lines) {
		t.FailNow()
	}
}
