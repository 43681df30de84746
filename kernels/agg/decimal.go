package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// aggDecState aggregates a DECIMAL(p, s) column exactly: SUM is
// DECIMAL(38, s) and AVG DECIMAL(38, max(s, 6)) rounded half up, as in
// Flink; MIN and MAX keep the column's type.
type aggDecState struct {
	dt       *arrow.Decimal128Type
	n        column.Chunked[int64]
	sum      column.Chunked[decimal128.Num]
	mn, mx   column.Chunked[decimal128.Num]
	wantExtr bool
}

func (st *aggDecState) Enable(f Func) error {
	if f == Min || f == Max {
		st.wantExtr = true
	}
	return nil
}

func (st *aggDecState) avgScale() int32 { return max(st.dt.Scale, 6) }

func (st *aggDecState) OutType(f Func) arrow.DataType {
	switch f {
	case Count:
		return arrow.PrimitiveTypes.Int64
	case Sum:
		return &arrow.Decimal128Type{Precision: 38, Scale: st.dt.Scale}
	case Avg:
		return &arrow.Decimal128Type{Precision: 38, Scale: st.avgScale()}
	}
	return st.dt
}

func (st *aggDecState) Grow(n int) {
	st.n.Grow(n)
	st.sum.Grow(n)
	st.mn.Grow(n)
	st.mx.Grow(n)
}

func (st *aggDecState) Update(gids []int32, arr arrow.Array, rows []int32) {
	st.unshare(gids)
	a := arr.(*array.Decimal128)
	for k, g := range gids {
		r := k
		if rows != nil {
			r = int(rows[k])
		}
		if a.IsNull(r) {
			continue
		}
		v := a.Value(r)
		if *st.n.At(g) == 0 {
			*st.mn.At(g), *st.mx.At(g) = v, v
		} else if st.wantExtr {
			if v.Less(*st.mn.At(g)) {
				*st.mn.At(g) = v
			}
			if st.mx.At(g).Less(v) {
				*st.mx.At(g) = v
			}
		}
		*st.sum.At(g) = st.sum.At(g).Add(v)
		(*st.n.At(g))++
	}
}

func (st *aggDecState) Merge(dst, src int32) {
	st.unshare([]int32{dst})
	if *st.n.At(src) == 0 {
		return
	}
	if *st.n.At(dst) == 0 {
		*st.mn.At(dst), *st.mx.At(dst) = *st.mn.At(src), *st.mx.At(src)
	} else {
		if st.mn.At(src).Less(*st.mn.At(dst)) {
			*st.mn.At(dst) = *st.mn.At(src)
		}
		if st.mx.At(dst).Less(*st.mx.At(src)) {
			*st.mx.At(dst) = *st.mx.At(src)
		}
	}
	*st.sum.At(dst) = st.sum.At(dst).Add(*st.sum.At(src))
	*st.n.At(dst) += *st.n.At(src)
}

func (st *aggDecState) Reset(gids []int32) {
	st.unshare(gids)
	for _, g := range gids {
		*st.n.At(g), *st.sum.At(g) = 0, decimal128.Num{}
	}
}

func (st *aggDecState) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	if f == Count {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for _, g := range gids {
			b.Append(*st.n.At(g))
		}
		return b.NewArray()
	}
	b := array.NewDecimal128Builder(mem, st.OutType(f).(*arrow.Decimal128Type))
	defer b.Release()
	for _, g := range gids {
		if *st.n.At(g) == 0 {
			b.AppendNull()
			continue
		}
		switch f {
		case Sum:
			b.Append(*st.sum.At(g))
		case Min:
			b.Append(*st.mn.At(g))
		case Max:
			b.Append(*st.mx.At(g))
		case Avg:
			b.Append(decAvg(*st.sum.At(g), *st.n.At(g), st.avgScale()-st.dt.Scale))
		}
	}
	return b.NewArray()
}

// decAvg is sum/n with d more fraction digits, rounded half away from zero.
func decAvg(sum decimal128.Num, n int64, d int32) decimal128.Num {
	scaled := sum.IncreaseScaleBy(d)
	q, r := scaled.Div(decimal128.FromI64(n))
	// Round half up on the magnitude of the remainder.
	if r.Abs().Mul(decimal128.FromI64(2)).Cmp(decimal128.FromI64(n)) >= 0 {
		if scaled.Sign() < 0 {
			q = q.Sub(decimal128.FromI64(1))
		} else {
			q = q.Add(decimal128.FromI64(1))
		}
	}
	return q
}
