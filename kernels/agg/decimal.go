package agg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// aggDecState aggregates a DECIMAL(p, s) column exactly: SUM is
// DECIMAL(38, s) and AVG DECIMAL(38, max(s, 6)) rounded half up, as in
// Flink; MIN and MAX keep the column's type.
type aggDecState struct {
	dt       *arrow.Decimal128Type
	n        []int64
	sum      []decimal128.Num
	mn, mx   []decimal128.Num
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
	for len(st.n) < n {
		st.n = append(st.n, 0)
		st.sum = append(st.sum, decimal128.Num{})
		st.mn = append(st.mn, decimal128.Num{})
		st.mx = append(st.mx, decimal128.Num{})
	}
}

func (st *aggDecState) Update(gids []int32, arr arrow.Array, rows []int32) {
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
		if st.n[g] == 0 {
			st.mn[g], st.mx[g] = v, v
		} else if st.wantExtr {
			if v.Less(st.mn[g]) {
				st.mn[g] = v
			}
			if st.mx[g].Less(v) {
				st.mx[g] = v
			}
		}
		st.sum[g] = st.sum[g].Add(v)
		st.n[g]++
	}
}

func (st *aggDecState) Merge(dst, src int32) {
	if st.n[src] == 0 {
		return
	}
	if st.n[dst] == 0 {
		st.mn[dst], st.mx[dst] = st.mn[src], st.mx[src]
	} else {
		if st.mn[src].Less(st.mn[dst]) {
			st.mn[dst] = st.mn[src]
		}
		if st.mx[dst].Less(st.mx[src]) {
			st.mx[dst] = st.mx[src]
		}
	}
	st.sum[dst] = st.sum[dst].Add(st.sum[src])
	st.n[dst] += st.n[src]
}

func (st *aggDecState) Reset(gids []int32) {
	for _, g := range gids {
		st.n[g], st.sum[g] = 0, decimal128.Num{}
	}
}

func (st *aggDecState) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	if f == Count {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		for _, g := range gids {
			b.Append(st.n[g])
		}
		return b.NewArray()
	}
	b := array.NewDecimal128Builder(mem, st.OutType(f).(*arrow.Decimal128Type))
	defer b.Release()
	for _, g := range gids {
		if st.n[g] == 0 {
			b.AppendNull()
			continue
		}
		switch f {
		case Sum:
			b.Append(st.sum[g])
		case Min:
			b.Append(st.mn[g])
		case Max:
			b.Append(st.mx[g])
		case Avg:
			b.Append(decAvg(st.sum[g], st.n[g], st.avgScale()-st.dt.Scale))
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
