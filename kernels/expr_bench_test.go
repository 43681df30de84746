package kernels

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

const benchRows = 8192

// Hand-written baselines store their output here so the compiler cannot
// drop the loops.
var (
	sinkInt64s []int64
	sinkWords  []uint64
	sinkBools  []bool
	sinkBytes  []byte
)

// benchBatch has int64 columns a, b, float64 c, bool p, q, int32 d and
// string s, 8192 rows; nullFrac of a and p are NULL.
func benchBatch(nullFrac float64) *vector.Batch {
	r := rand.New(rand.NewSource(1))
	mem := memory.NewGoAllocator()
	a, b := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	c, d := array.NewFloat64Builder(mem), array.NewInt32Builder(mem)
	p, q := array.NewBooleanBuilder(mem), array.NewBooleanBuilder(mem)
	s := array.NewStringBuilder(mem)
	for i := 0; i < benchRows; i++ {
		null := r.Float64() < nullFrac
		if null {
			a.AppendNull()
			p.AppendNull()
		} else {
			a.Append(r.Int63n(1 << 40))
			p.Append(r.Intn(2) == 0)
		}
		b.Append(r.Int63n(1<<40) + 1)
		c.Append(r.Float64() * 100)
		d.Append(int32(r.Intn(1000)))
		q.Append(r.Intn(2) == 0)
		s.Append([]string{"alpha", "beta", "gamma", "delta"}[r.Intn(4)])
	}
	cols := []arrow.Array{a.NewArray(), b.NewArray(), c.NewArray(), p.NewArray(), q.NewArray(), d.NewArray(), s.NewArray()}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: tInt64, Nullable: true}, {Name: "b", Type: tInt64}, {Name: "c", Type: tDouble},
		{Name: "p", Type: tBool, Nullable: true}, {Name: "q", Type: tBool}, {Name: "d", Type: tInt32}, {Name: "s", Type: tString},
	}, nil)
	rec := array.NewRecordBatch(schema, cols, benchRows)
	for _, col := range cols {
		col.Release()
	}
	return vector.New(rec)
}

func halfSel() []int32 {
	sel := make([]int32, 0, benchRows/2)
	r := rand.New(rand.NewSource(2))
	for i := 0; i < benchRows; i++ {
		if r.Intn(2) == 0 {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func reportRows(b *testing.B) {
	b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "rows/s")
}

func benchEval(b *testing.B, e Expr, batch *vector.Batch) {
	mem := memory.NewGoAllocator()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Eval(batch, mem)
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
	reportRows(b)
}

func BenchmarkExpr(b *testing.B) {
	reg := newTestRegistry()
	mustCall := func(name string, args ...Expr) Expr {
		e, err := reg.Call(name, args)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	mustLit := func(v any, t arrow.DataType) Expr {
		e, err := Literal(v, t)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	dense, nulls := benchBatch(0), benchBatch(0.1)
	defer dense.Release()
	defer nulls.Release()
	sel := &vector.Batch{Rec: dense.Rec, Sel: halfSel()}
	sparse := &vector.Batch{Rec: dense.Rec, Sel: halfSel()[:benchRows/20]}
	a, bb := ColRef(0, tInt64, "a"), ColRef(1, tInt64, "b")
	c, d := ColRef(2, tDouble, "c"), ColRef(5, tInt32, "d")
	p, q := ColRef(3, tBool, "p"), ColRef(4, tBool, "q")
	s := ColRef(6, tString, "s")

	add := mustCall("add", a, bb)
	b.Run("add_int64", func(b *testing.B) { benchEval(b, add, dense) })
	b.Run("add_int64/nulls", func(b *testing.B) { benchEval(b, add, nulls) })
	b.Run("add_int64/sel=half", func(b *testing.B) { benchEval(b, add, sel) })
	b.Run("add_int64/sel=5%", func(b *testing.B) { benchEval(b, add, sparse) })
	b.Run("add_int64/hand", func(b *testing.B) {
		x, y := dense.Column(0).(*array.Int64).Int64Values(), dense.Column(1).(*array.Int64).Int64Values()
		out := make([]int64, benchRows)
		for i := 0; i < b.N; i++ {
			for j := range out {
				out[j] = x[j] + y[j]
			}
			sinkInt64s = out
		}
		reportRows(b)
	})
	b.Run("add_int64/hand_alloc", func(b *testing.B) {
		x, y := dense.Column(0).(*array.Int64).Int64Values(), dense.Column(1).(*array.Int64).Int64Values()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			out := make([]int64, benchRows)
			for j := range out {
				out[j] = x[j] + y[j]
			}
			sinkInt64s = out
		}
		reportRows(b)
	})
	addLit := mustCall("add", a, mustLit(int64(7), tInt64))
	b.Run("add_int64_lit", func(b *testing.B) { benchEval(b, addLit, dense) })
	div := mustCall("divide", a, bb)
	b.Run("divide_int64", func(b *testing.B) { benchEval(b, div, dense) })
	addPromote := mustCall("add", d, a)
	b.Run("add_int32_int64", func(b *testing.B) { benchEval(b, addPromote, dense) })

	gt := mustCall("gt", c, mustLit(50.0, tDouble))
	b.Run("gt_float64_lit", func(b *testing.B) { benchEval(b, gt, dense) })
	b.Run("gt_float64_lit/sel=half", func(b *testing.B) { benchEval(b, gt, sel) })
	b.Run("gt_float64_lit/hand", func(b *testing.B) {
		x := dense.Column(2).(*array.Float64).Float64Values()
		out := make([]uint64, benchRows/64)
		for i := 0; i < b.N; i++ {
			for w := range out {
				var word uint64
				for j, v := range x[w*64 : w*64+64] {
					if v > 50 {
						word |= 1 << uint(j)
					}
				}
				out[w] = word
			}
			sinkWords = out
		}
		reportRows(b)
	})
	b.Run("gt_float64_lit/hand_bool", func(b *testing.B) {
		x := dense.Column(2).(*array.Float64).Float64Values()
		out := make([]bool, benchRows)
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				out[j] = v > 50
			}
			sinkBools = out
		}
		reportRows(b)
	})
	lt := mustCall("lt", a, bb)
	b.Run("lt_int64", func(b *testing.B) { benchEval(b, lt, dense) })
	eqs := mustCall("equal", s, mustLit("gamma", tString))
	b.Run("equal_string_lit", func(b *testing.B) { benchEval(b, eqs, dense) })

	and := mustCall("and", p, q)
	b.Run("and", func(b *testing.B) { benchEval(b, and, dense) })
	b.Run("and/nulls", func(b *testing.B) { benchEval(b, and, nulls) })
	b.Run("and/hand", func(b *testing.B) {
		x := dense.Column(3).(*array.Boolean).Data().Buffers()[1].Bytes()
		y := dense.Column(4).(*array.Boolean).Data().Buffers()[1].Bytes()
		out := make([]byte, benchRows/8)
		for i := 0; i < b.N; i++ {
			for j := range out {
				out[j] = x[j] & y[j]
			}
			sinkBytes = out
		}
		reportRows(b)
	})
	filter := mustCall("and", gt, mustCall("is_not_null", a))
	b.Run("filter/gt_and_not_null+select", func(b *testing.B) {
		mem := memory.NewGoAllocator()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			res, err := filter.Eval(nulls, mem)
			if err != nil {
				b.Fatal(err)
			}
			_ = SelectTrue(res, nulls)
			res.Release()
		}
		reportRows(b)
	})
	cast := mustCall("add", mustCall("multiply", d, mustLit(int64(2), tInt32)), mustLit(1.5, tDouble))
	b.Run("cast_int32_arith_double", func(b *testing.B) { benchEval(b, cast, dense) })
	co := mustCall("coalesce", a, bb)
	b.Run("coalesce_int64/nulls", func(b *testing.B) { benchEval(b, co, nulls) })
}
