package optest

import (
	"math/rand/v2"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Interval join and Top-N throughput against hand-written Go loops over the
// same data (issue #3). Rows: int64 key (1000 distinct), int64 ts rising
// 1 ms per row per side, int64 value.

// BenchKeys is the number of distinct keys of BenchBatch.
const BenchKeys = 1000

// BenchBatch is n rows from time t0 on, with their columns' values.
func BenchBatch(mem memory.Allocator, r *rand.Rand, n int, t0 int64) (*vector.Batch, []int64, []int64, []int64) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ks, ts, vs := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range ks {
		ks[i] = r.Int64N(BenchKeys)
		ts[i] = t0 + int64(i)
		vs[i] = r.Int64N(1_000_000)
	}
	cols := make([]arrow.Array, 3)
	for c, vals := range [][]int64{ks, ts, vs} {
		b := array.NewInt64Builder(mem)
		b.AppendValues(vals, nil)
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return vector.New(rec), ks, ts, vs
}
