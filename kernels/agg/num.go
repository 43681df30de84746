package agg

import (
	"errors"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

var errAggType = errors.New("unsupported argument type")

// aggFloatEntry is one group's accumulators for a floating column, kept
// together so that one row touches one cache line.
type aggFloatEntry[T float32 | float64] struct {
	n      int64   // non-null values
	s, c   float64 // compensated sum: s plus the rounding errors in c
	mn, mx T
}

// aggFloatState accumulates COUNT/SUM/AVG/MIN/MAX of a float32/float64
// column. Sums are compensated (Kahan–Babuška with Knuth's branch-free
// TwoSum): c collects the exact rounding error of every addition, so s+c
// is the correctly rounded sum unless the data cancels pathologically, and
// the result does not depend on the order rows arrive in — which is what
// lets the engine promise the same output at any parallelism.
type aggFloatState[T float32 | float64] struct {
	dt      arrow.DataType
	e       column.Chunked[aggFloatEntry[T]]
	sum, mm bool
	vbuf    []T
	gbuf    []int32
	nbuf    []bool
}

func (st *aggFloatState[T]) Enable(f Func) error {
	switch f {
	case Sum, Avg:
		st.sum = true
	case Min, Max:
		st.mm = true
	}
	return nil
}

func (st *aggFloatState[T]) OutType(f Func) arrow.DataType {
	switch f {
	case Count:
		return arrow.PrimitiveTypes.Int64
	case Sum, Avg:
		return arrow.PrimitiveTypes.Float64
	}
	return st.dt
}

func (st *aggFloatState[T]) Grow(n int) {
	st.e.Grow(n)
}

func (st *aggFloatState[T]) Reset(gids []int32) {
	st.unshare(gids)
	for _, g := range gids {
		*st.e.At(g) = aggFloatEntry[T]{}
	}
}

func (st *aggFloatState[T]) Update(gids []int32, arr arrow.Array, rows []int32) {
	st.unshare(gids)
	gs, vs := aggGather(arrow.GetValues[T](arr.Data(), 1), rows, gids, arr, &st.vbuf, &st.gbuf, &st.nbuf)
	e := st.e
	vs = vs[:len(gs)]
	switch {
	case st.sum && st.mm:
		for k, g := range gs {
			if g < 0 {
				continue
			}
			p := e.At(g)
			v := vs[k]
			x := float64(v)
			t := p.s + x
			bb := t - p.s
			p.c += (p.s - (t - bb)) + (x - bb)
			p.s = t
			if p.n == 0 {
				p.mn, p.mx = v, v
			} else {
				if v < p.mn || (p.mn != p.mn && v == v) {
					p.mn = v
				}
				if v > p.mx || v != v {
					p.mx = v
				}
			}
			p.n++
		}
	case st.sum:
		for k, g := range gs {
			if g < 0 {
				continue
			}
			p := e.At(g)
			x := float64(vs[k])
			t := p.s + x
			bb := t - p.s
			p.c += (p.s - (t - bb)) + (x - bb)
			p.s = t
			p.n++
		}
	case st.mm:
		for k, g := range gs {
			if g < 0 {
				continue
			}
			p := e.At(g)
			v := vs[k]
			if p.n == 0 {
				p.mn, p.mx = v, v
			} else {
				if v < p.mn || (p.mn != p.mn && v == v) {
					p.mn = v
				}
				if v > p.mx || v != v {
					p.mx = v
				}
			}
			p.n++
		}
	default:
		for _, g := range gs {
			if g >= 0 {
				e.At(g).n++
			}
		}
	}
}

func (st *aggFloatState[T]) Merge(dst, src int32) {
	st.unshare([]int32{dst})
	d, s := st.e.At(dst), st.e.At(src)
	if s.n == 0 {
		return
	}
	if d.n == 0 {
		*d = *s
		return
	}
	t := d.s + s.s
	bb := t - d.s
	d.c += s.c + ((d.s - (t - bb)) + (s.s - bb))
	d.s = t
	if s.mn < d.mn || (d.mn != d.mn && s.mn == s.mn) {
		d.mn = s.mn
	}
	if s.mx > d.mx || s.mx != s.mx {
		d.mx = s.mx
	}
	d.n += s.n
}

func (st *aggFloatState[T]) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	switch f {
	case Count:
		o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
		for j, g := range gids {
			o.Vals[j] = st.e.At(g).n
		}
		return o.Finish()
	case Sum, Avg:
		o := column.NewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(gids))
		for j, g := range gids {
			p := st.e.At(g)
			if p.n == 0 {
				o.SetNull(j)
				continue
			}
			v := p.s + p.c
			if math.IsInf(p.s, 0) || p.s != p.s {
				v = p.s // the error terms of an infinite sum are NaN
			}
			if f == Avg {
				v /= float64(p.n)
			}
			o.Vals[j] = v
		}
		return o.Finish()
	}
	o := column.NewFixed[T](mem, st.dt, len(gids))
	for j, g := range gids {
		p := st.e.At(g)
		switch {
		case p.n == 0:
			o.SetNull(j)
		case f == Min:
			o.Vals[j] = p.mn
		default:
			o.Vals[j] = p.mx
		}
	}
	return o.Finish()
}

// aggIntEntry is one group's accumulators for an integer column. The sum
// is kept in 128 bits (hi:lo): SUM reports its low 64 bits (wrapping like
// BIGINT arithmetic), AVG divides the exact sum.
type aggIntEntry[T int8 | int16 | int32 | int64] struct {
	n      int64
	lo     uint64
	hi     int64
	mn, mx T
}

// aggIntState accumulates COUNT/SUM/AVG/MIN/MAX of an integer column, and
// COUNT/MIN/MAX of temporal columns stored as integers (noSum).
type aggIntState[T int8 | int16 | int32 | int64] struct {
	dt      arrow.DataType
	noSum   bool
	e       column.Chunked[aggIntEntry[T]]
	sum, mm bool
	vbuf    []T
	gbuf    []int32
	nbuf    []bool
}

func (st *aggIntState[T]) Enable(f Func) error {
	switch f {
	case Sum, Avg:
		if st.noSum {
			return errAggType
		}
		st.sum = true
	case Min, Max:
		st.mm = true
	}
	return nil
}

func (st *aggIntState[T]) OutType(f Func) arrow.DataType {
	switch f {
	case Count, Sum:
		return arrow.PrimitiveTypes.Int64
	case Avg:
		return arrow.PrimitiveTypes.Float64
	}
	return st.dt
}

func (st *aggIntState[T]) Grow(n int) {
	st.e.Grow(n)
}

func (st *aggIntState[T]) Reset(gids []int32) {
	st.unshare(gids)
	for _, g := range gids {
		*st.e.At(g) = aggIntEntry[T]{}
	}
}

func (st *aggIntState[T]) Update(gids []int32, arr arrow.Array, rows []int32) {
	st.unshare(gids)
	gs, vs := aggGather(arrow.GetValues[T](arr.Data(), 1), rows, gids, arr, &st.vbuf, &st.gbuf, &st.nbuf)
	e := st.e
	vs = vs[:len(gs)]
	for k, g := range gs {
		if g < 0 {
			continue
		}
		p := e.At(g)
		v := vs[k]
		if st.sum {
			var carry uint64
			p.lo, carry = bits.Add64(p.lo, uint64(int64(v)), 0)
			p.hi += int64(carry) + int64(v)>>63
		}
		if st.mm {
			if p.n == 0 {
				p.mn, p.mx = v, v
			} else {
				p.mn = min(p.mn, v)
				p.mx = max(p.mx, v)
			}
		}
		p.n++
	}
}

func (st *aggIntState[T]) Merge(dst, src int32) {
	st.unshare([]int32{dst})
	d, s := st.e.At(dst), st.e.At(src)
	if s.n == 0 {
		return
	}
	if d.n == 0 {
		*d = *s
		return
	}
	var carry uint64
	d.lo, carry = bits.Add64(d.lo, s.lo, 0)
	d.hi += s.hi + int64(carry)
	d.mn = min(d.mn, s.mn)
	d.mx = max(d.mx, s.mx)
	d.n += s.n
}

// aggInt128Float converts hi:lo to the nearest-ish float64.
func aggInt128Float(hi int64, lo uint64) float64 {
	if hi == int64(lo)>>63 {
		return float64(int64(lo))
	}
	return float64(hi)*(1<<64) + float64(lo)
}

func (st *aggIntState[T]) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	switch f {
	case Count:
		o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
		for j, g := range gids {
			o.Vals[j] = st.e.At(g).n
		}
		return o.Finish()
	case Sum:
		o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
		for j, g := range gids {
			if p := st.e.At(g); p.n == 0 {
				o.SetNull(j)
			} else {
				o.Vals[j] = int64(p.lo)
			}
		}
		return o.Finish()
	case Avg:
		o := column.NewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(gids))
		for j, g := range gids {
			if p := st.e.At(g); p.n == 0 {
				o.SetNull(j)
			} else {
				o.Vals[j] = aggInt128Float(p.hi, p.lo) / float64(p.n)
			}
		}
		return o.Finish()
	}
	o := column.NewFixed[T](mem, st.dt, len(gids))
	for j, g := range gids {
		p := st.e.At(g)
		switch {
		case p.n == 0:
			o.SetNull(j)
		case f == Min:
			o.Vals[j] = p.mn
		default:
			o.Vals[j] = p.mx
		}
	}
	return o.Finish()
}
