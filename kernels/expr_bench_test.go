package kernels

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
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

	// LIKE 'ga%' (the prefix fast path) against bytes.HasPrefix per row.
	like := mustCall("like", s, mustLit("ga%", etString))
	b.Run("like_prefix", func(b *testing.B) { etBenchEval(b, like, dense) })
	b.Run("like_prefix/sel=half", func(b *testing.B) { etBenchEval(b, like, sel) })
	b.Run("like_prefix/hand", func(b *testing.B) {
		str := dense.Column(6).(*array.String)
		out := make([]byte, etBenchRows/8)
		for i := 0; i < b.N; i++ {
			clear(out)
			for j := 0; j < etBenchRows; j++ {
				if strings.HasPrefix(str.Value(j), "ga") {
					out[j>>3] |= 1 << (j & 7)
				}
			}
			etSinkBytes = out
		}
		etReportRows(b)
	})
	upper := mustCall("upper", s)
	b.Run("upper", func(b *testing.B) { etBenchEval(b, upper, dense) })
	b.Run("upper/hand", func(b *testing.B) {
		str := dense.Column(6).(*array.String)
		out := make([]byte, 0, etBenchRows*8)
		offs := make([]int32, etBenchRows+1)
		for i := 0; i < b.N; i++ {
			out = out[:0]
			for j := 0; j < etBenchRows; j++ {
				for _, c := range []byte(str.Value(j)) {
					if c >= 'a' && c <= 'z' {
						c -= 32
					}
					out = append(out, c)
				}
				offs[j+1] = int32(len(out))
			}
			etSinkBytes = out
		}
		etReportRows(b)
	})

	// CASE WHEN d < 100 THEN a WHEN d < 500 THEN b ELSE a + b END.
	case3, err := Case([]Expr{mustCall("lt", d, mustLit(100, etInt32)), mustCall("lt", d, mustLit(500, etInt32))},
		[]Expr{a, bb}, mustCall("add", a, bb))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("case3", func(b *testing.B) { etBenchEval(b, case3, dense) })
	b.Run("case3/sel=half", func(b *testing.B) { etBenchEval(b, case3, sel) })
	b.Run("case3/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, case3, dense, &etBenchPool{free: map[int][][]byte{}}) })
	b.Run("case3/hand", func(b *testing.B) {
		x, y := dense.Column(0).(*array.Int64).Int64Values(), dense.Column(1).(*array.Int64).Int64Values()
		dv := dense.Column(5).(*array.Int32).Int32Values()
		out := make([]int64, etBenchRows)
		for i := 0; i < b.N; i++ {
			for j := range out {
				switch {
				case dv[j] < 100:
					out[j] = x[j]
				case dv[j] < 500:
					out[j] = y[j]
				default:
					out[j] = x[j] + y[j]
				}
			}
			etSinkInt64s = out
		}
		etReportRows(b)
	})

	// DECIMAL(18, 2) + DECIMAL(18, 2) against a loop of decimal128.Num.Add.
	decBatch := etBenchDecimalBatch()
	defer decBatch.Release()
	dt := scDecType(18, 2)
	decAdd := mustCall("add", ColRef(0, dt, "x"), ColRef(1, dt, "y"))
	b.Run("decimal_add", func(b *testing.B) { etBenchEval(b, decAdd, decBatch) })
	b.Run("decimal_add/alloc=pool", func(b *testing.B) { etBenchEvalMem(b, decAdd, decBatch, &etBenchPool{free: map[int][][]byte{}}) })
	b.Run("decimal_add/hand", func(b *testing.B) {
		x, y := decBatch.Column(0).(*array.Decimal128).Values(), decBatch.Column(1).(*array.Decimal128).Values()
		out := make([]decimal128.Num, etBenchRows)
		for i := 0; i < b.N; i++ {
			for j := range out {
				out[j] = x[j].Add(y[j])
			}
			etSinkDecs = out
		}
		etReportRows(b)
	})
	decMul := mustCall("multiply", ColRef(0, dt, "x"), ColRef(1, dt, "y"))
	b.Run("decimal_multiply", func(b *testing.B) { etBenchEval(b, decMul, decBatch) })
	decDiv := mustCall("divide", ColRef(0, dt, "x"), ColRef(1, dt, "y"))
	b.Run("decimal_divide", func(b *testing.B) { etBenchEval(b, decDiv, decBatch) })

	// d IN (16 constants): an open-addressing hash set against a scan and a Go map.
	var items []Expr
	var consts []int32
	for k := 0; k < 16; k++ {
		items = append(items, mustLit(int64(k*61), etInt32))
		consts = append(consts, int32(k*61))
	}
	in16, err := InList(d, items)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("in_list16", func(b *testing.B) { etBenchEval(b, in16, dense) })
	b.Run("in_list16/hand_scan", func(b *testing.B) {
		dv := dense.Column(5).(*array.Int32).Int32Values()
		out := make([]byte, etBenchRows/8)
		for i := 0; i < b.N; i++ {
			clear(out)
			for j, v := range dv {
				for _, c := range consts {
					if v == c {
						out[j>>3] |= 1 << (j & 7)
						break
					}
				}
			}
			etSinkBytes = out
		}
		etReportRows(b)
	})
	b.Run("in_list16/hand_map", func(b *testing.B) {
		dv := dense.Column(5).(*array.Int32).Int32Values()
		m := map[int32]struct{}{}
		for _, c := range consts {
			m[c] = struct{}{}
		}
		out := make([]byte, etBenchRows/8)
		for i := 0; i < b.N; i++ {
			clear(out)
			for j, v := range dv {
				if _, ok := m[v]; ok {
					out[j>>3] |= 1 << (j & 7)
				}
			}
			etSinkBytes = out
		}
		etReportRows(b)
	})
	extract := mustCall("extract", mustLit("DAY", etString), mustCall("to_timestamp_ltz", a))
	b.Run("extract_day", func(b *testing.B) { etBenchEval(b, extract, dense) })
	substr := mustCall("substring", s, mustLit(2, etInt32), mustLit(3, etInt32))
	b.Run("substring", func(b *testing.B) { etBenchEval(b, substr, dense) })
}

var etSinkDecs []decimal128.Num

// etBenchDecimalBatch has two DECIMAL(18, 2) columns x, y (y never zero).
func etBenchDecimalBatch() *vector.Batch {
	r := rand.New(rand.NewSource(3))
	mem := memory.NewGoAllocator()
	t := scDecType(18, 2)
	x, y := array.NewDecimal128Builder(mem, t), array.NewDecimal128Builder(mem, t)
	for i := 0; i < etBenchRows; i++ {
		x.Append(decimal128.FromI64(r.Int63n(1e15) - 5e14))
		y.Append(decimal128.FromI64(r.Int63n(1e12) + 1))
	}
	cols := []arrow.Array{x.NewArray(), y.NewArray()}
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "x", Type: t}, {Name: "y", Type: t}}, nil), cols, etBenchRows)
	for _, c := range cols {
		c.Release()
	}
	return vector.New(rec)
}
