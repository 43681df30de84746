package kernels

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

const etBenchRows = 8192

// Hand-written baselines store their output here so the compiler cannot
// drop the loops.
var (
	etSinkInt64s []int64
	etSinkWords  []uint64
	etSinkBools  []bool
	etSinkBytes  []byte
)

// etBenchBatch has int64 columns a, b, float64 c, bool p, q, int32 d and
// string s, 8192 rows; nullFrac of a and p are NULL.
func etBenchBatch(nullFrac float64) *vector.Batch {
	r := rand.New(rand.NewSource(1))
	mem := memory.NewGoAllocator()
	a, b := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	c, d := array.NewFloat64Builder(mem), array.NewInt32Builder(mem)
	p, q := array.NewBooleanBuilder(mem), array.NewBooleanBuilder(mem)
	s := array.NewStringBuilder(mem)
	for i := 0; i < etBenchRows; i++ {
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
		{Name: "a", Type: etInt64, Nullable: true}, {Name: "b", Type: etInt64}, {Name: "c", Type: etDouble},
		{Name: "p", Type: etBool, Nullable: true}, {Name: "q", Type: etBool}, {Name: "d", Type: etInt32}, {Name: "s", Type: etString},
	}, nil)
	rec := array.NewRecordBatch(schema, cols, etBenchRows)
	for _, col := range cols {
		col.Release()
	}
	return vector.New(rec)
}

func etHalfSel() []int32 {
	sel := make([]int32, 0, etBenchRows/2)
	r := rand.New(rand.NewSource(2))
	for i := 0; i < etBenchRows; i++ {
		if r.Intn(2) == 0 {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func etReportRows(b *testing.B) {
	b.ReportMetric(float64(b.N)*etBenchRows/b.Elapsed().Seconds(), "rows/s")
}

// etBenchPool recycles buffers by size, as a batch-buffer pool would: it
// shows the kernels' cost without the Go heap's allocation and GC of a
// fresh 64 KiB slice per batch (compare add_int64/hand and hand_alloc).
type etBenchPool struct{ free map[int][][]byte }

func (p *etBenchPool) Allocate(size int) []byte {
	if l := p.free[size]; len(l) > 0 {
		p.free[size] = l[:len(l)-1]
		return l[len(l)-1]
	}
	return make([]byte, size)
}

func (p *etBenchPool) Reallocate(size int, b []byte) []byte {
	n := p.Allocate(size)
	copy(n, b)
	p.Free(b)
	return n
}

func (p *etBenchPool) Free(b []byte) { p.free[cap(b)] = append(p.free[cap(b)], b[:cap(b)]) }

func etBenchEval(b *testing.B, e Expr, batch *vector.Batch) {
	etBenchEvalMem(b, e, batch, memory.NewGoAllocator())
}

func etBenchEvalMem(b *testing.B, e Expr, batch *vector.Batch, mem memory.Allocator) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Eval(batch, mem)
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
	etReportRows(b)
}

func BenchmarkExpr(b *testing.B) {
	reg := etNewTestRegistry()
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
	dense, nulls := etBenchBatch(0), etBenchBatch(0.1)
	defer dense.Release()
	defer nulls.Release()
	sel := &vector.Batch{Rec: dense.Rec, Sel: etHalfSel()}
	sparse := &vector.Batch{Rec: dense.Rec, Sel: etHalfSel()[:etBenchRows/20]}
	a, bb := ColRef(0, etInt64, "a"), ColRef(1, etInt64, "b")
	c, d := ColRef(2, etDouble, "c"), ColRef(5, etInt32, "d")
	p, q := ColRef(3, etBool, "p"), ColRef(4, etBool, "q")
	s := ColRef(6, etString, "s")

	add := mustCall("add", a, bb)
	b.Run("add_int64", func(b *testing.B) { etBenchEval(b, add, dense) })
	b.Run("add_int64/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, add, dense, &etBenchPool{free: map[int][][]byte{}}) })
	b.Run("add_int64/nulls", func(b *testing.B) { etBenchEval(b, add, nulls) })
	b.Run("add_int64/sel=half", func(b *testing.B) { etBenchEval(b, add, sel) })
	b.Run("add_int64/sel=5%", func(b *testing.B) { etBenchEval(b, add, sparse) })
	b.Run("add_int64/hand", func(b *testing.B) {
		x, y := dense.Column(0).(*array.Int64).Int64Values(), dense.Column(1).(*array.Int64).Int64Values()
		out := make([]int64, etBenchRows)
		for i := 0; i < b.N; i++ {
			for j := range out {
				out[j] = x[j] + y[j]
			}
			etSinkInt64s = out
		}
		etReportRows(b)
	})
	b.Run("add_int64/hand_alloc", func(b *testing.B) {
		x, y := dense.Column(0).(*array.Int64).Int64Values(), dense.Column(1).(*array.Int64).Int64Values()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			out := make([]int64, etBenchRows)
			for j := range out {
				out[j] = x[j] + y[j]
			}
			etSinkInt64s = out
		}
		etReportRows(b)
	})
	addLit := mustCall("add", a, mustLit(int64(7), etInt64))
	b.Run("add_int64_lit", func(b *testing.B) { etBenchEval(b, addLit, dense) })
	b.Run("add_int64_lit/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, addLit, dense, &etBenchPool{free: map[int][][]byte{}}) })
	div := mustCall("divide", a, bb)
	b.Run("divide_int64", func(b *testing.B) { etBenchEval(b, div, dense) })
	b.Run("divide_int64/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, div, dense, &etBenchPool{free: map[int][][]byte{}}) })
	addPromote := mustCall("add", d, a)
	b.Run("add_int32_int64", func(b *testing.B) { etBenchEval(b, addPromote, dense) })

	gt := mustCall("gt", c, mustLit(50.0, etDouble))
	b.Run("gt_float64_lit", func(b *testing.B) { etBenchEval(b, gt, dense) })
	b.Run("gt_float64_lit/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, gt, dense, &etBenchPool{free: map[int][][]byte{}}) })
	b.Run("gt_float64_lit/sel=half", func(b *testing.B) { etBenchEval(b, gt, sel) })
	b.Run("gt_float64_lit/hand", func(b *testing.B) {
		x := dense.Column(2).(*array.Float64).Float64Values()
		out := make([]uint64, etBenchRows/64)
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
			etSinkWords = out
		}
		etReportRows(b)
	})
	b.Run("gt_float64_lit/hand_bool", func(b *testing.B) {
		x := dense.Column(2).(*array.Float64).Float64Values()
		out := make([]bool, etBenchRows)
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				out[j] = v > 50
			}
			etSinkBools = out
		}
		etReportRows(b)
	})
	lt := mustCall("lt", a, bb)
	b.Run("lt_int64", func(b *testing.B) { etBenchEval(b, lt, dense) })
	eqs := mustCall("equal", s, mustLit("gamma", etString))
	b.Run("equal_string_lit", func(b *testing.B) { etBenchEval(b, eqs, dense) })

	and := mustCall("and", p, q)
	b.Run("and", func(b *testing.B) { etBenchEval(b, and, dense) })
	b.Run("and/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, and, dense, &etBenchPool{free: map[int][][]byte{}}) })
	b.Run("and/nulls", func(b *testing.B) { etBenchEval(b, and, nulls) })
	b.Run("and/hand", func(b *testing.B) {
		x := dense.Column(3).(*array.Boolean).Data().Buffers()[1].Bytes()
		y := dense.Column(4).(*array.Boolean).Data().Buffers()[1].Bytes()
		out := make([]byte, etBenchRows/8)
		for i := 0; i < b.N; i++ {
			for j := range out {
				out[j] = x[j] & y[j]
			}
			etSinkBytes = out
		}
		etReportRows(b)
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
		etReportRows(b)
	})
	cast := mustCall("add", mustCall("multiply", d, mustLit(int64(2), etInt32)), mustLit(1.5, etDouble))
	b.Run("cast_int32_arith_double", func(b *testing.B) { etBenchEval(b, cast, dense) })
	co := mustCall("coalesce", a, bb)
	b.Run("coalesce_int64/nulls", func(b *testing.B) { etBenchEval(b, co, nulls) })
}
