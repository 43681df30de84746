package optest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Int64Schema is the schema of Int64Batch: k, ts, v, all BIGINT.
var Int64Schema = Int64Batch(memory.DefaultAllocator, []int64{0}, []int64{0}, []int64{0}).Schema()

// Step is one step of a join test: a batch of one side, or a
// watermark.
type Step struct {
	Side    int
	Rows    []*Row
	Advance bool
	WM      int64
}

// TestAlloc is the operator's allocator in a state test: the
// uninterrupted run checks leaks cheaply, the cut run thoroughly. Call
// the returned function when the run is over.
func TestAlloc(t *testing.T, thorough bool) (memory.Allocator, func()) {
	if thorough {
		c := memory.NewCheckedAllocator(memory.NewGoAllocator())
		return c, func() { c.AssertSize(t, 0) }
	}
	c := &CountingAlloc{Mem: memory.NewGoAllocator()}
	return c, func() {
		if c.Size != 0 {
			t.Errorf("%d bytes not released", c.Size)
		}
	}
}

// Int64Batch makes a batch of Int64Schema from the columns' values.
func Int64Batch(mem memory.Allocator, cols ...[]int64) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	arrs := make([]arrow.Array, len(cols))
	for c := range cols {
		bl := array.NewInt64Builder(mem)
		bl.AppendValues(cols[c], nil)
		arrs[c] = bl.NewArray()
		bl.Release()
	}
	rec := array.NewRecordBatch(schema, arrs, int64(len(cols[0])))
	for _, a := range arrs {
		a.Release()
	}
	return vector.New(rec)
}
