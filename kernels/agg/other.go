package agg

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// aggCountState is COUNT(*) (star) or COUNT(x) over a column of a type no
// other state handles.
type aggCountState struct {
	star bool
	dt   arrow.DataType
	n    column.Chunked[int64]
	gbuf []int32
	nbuf []bool
}

func (st *aggCountState) Enable(f Func) error {
	if f == CountStar || f == Count {
		return nil
	}
	return errAggType
}

func (st *aggCountState) OutType(Func) arrow.DataType { return arrow.PrimitiveTypes.Int64 }

func (st *aggCountState) Grow(n int) {
	st.n.Grow(n)
}

func (st *aggCountState) Reset(gids []int32) {
	st.unshare(gids)
	for _, g := range gids {
		*st.n.At(g) = 0
	}
}

func (st *aggCountState) Update(gids []int32, arr arrow.Array, rows []int32) {
	st.unshare(gids)
	n := st.n
	if st.star {
		for _, g := range gids {
			(*n.At(g))++
		}
		return
	}
	for _, g := range aggMaskNulls(gids, arr, rows, &st.gbuf, &st.nbuf) {
		if g >= 0 {
			(*n.At(g))++
		}
	}
}

func (st *aggCountState) Merge(dst, src int32) { *st.n.W(dst) += *st.n.At(src) }

func (st *aggCountState) Build(mem memory.Allocator, _ Func, gids []int32) arrow.Array {
	return aggBuildCount(mem, &st.n, gids)
}

// aggBoolEntry: MIN is logical AND, MAX logical OR.
type aggBoolEntry struct {
	n      int64
	mn, mx uint8
}

type aggBoolState struct {
	e    column.Chunked[aggBoolEntry]
	vbuf []uint8
	gbuf []int32
	nbuf []bool
}

func (st *aggBoolState) Enable(f Func) error {
	if f == Sum || f == Avg {
		return errAggType
	}
	return nil
}

func (st *aggBoolState) OutType(f Func) arrow.DataType {
	if f == Count {
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.FixedWidthTypes.Boolean
}

func (st *aggBoolState) Grow(n int) {
	st.e.Grow(n)
}

func (st *aggBoolState) Reset(gids []int32) {
	st.unshare(gids)
	for _, g := range gids {
		*st.e.At(g) = aggBoolEntry{}
	}
}

func (st *aggBoolState) Update(gids []int32, arr arrow.Array, rows []int32) {
	st.unshare(gids)
	vs := column.Grow(st.vbuf, len(gids))
	st.vbuf = vs
	column.BoolsInto(vs, arr, rows)
	gs := aggMaskNulls(gids, arr, rows, &st.gbuf, &st.nbuf)
	e := st.e
	for k, g := range gs {
		if g < 0 {
			continue
		}
		p := e.At(g)
		v := vs[k]
		if p.n == 0 {
			p.mn, p.mx = v, v
		} else {
			p.mn &= v
			p.mx |= v
		}
		p.n++
	}
}

func (st *aggBoolState) Merge(dst, src int32) {
	st.unshare([]int32{dst})
	d, s := st.e.At(dst), st.e.At(src)
	switch {
	case s.n == 0:
	case d.n == 0:
		*d = *s
	default:
		d.mn &= s.mn
		d.mx |= s.mx
		d.n += s.n
	}
}

func (st *aggBoolState) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	if f == Count {
		o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
		for j, g := range gids {
			o.Vals[j] = st.e.At(g).n
		}
		return o.Finish()
	}
	o := column.NewBool(mem, len(gids))
	for j, g := range gids {
		p := st.e.At(g)
		v := p.mx
		if f == Min {
			v = p.mn
		}
		if p.n == 0 {
			o.SetNull(j)
		} else if v != 0 {
			bitutil.SetBit(o.Bits, j)
		}
	}
	return o.Finish()
}

// aggStrState accumulates COUNT/MIN/MAX of a string column. Each group
// keeps its own min and max buffers; they are reused across ids, so an
// update copies bytes only when it changes the extreme, and allocates only
// when a buffer must grow.
type aggStrState struct {
	n                column.Chunked[int64]
	mn, mx           column.Chunked[[]byte]
	wantMin, wantMax bool
	gbuf             []int32
	nbuf             []bool
}

func (st *aggStrState) Enable(f Func) error {
	switch f {
	case Sum, Avg:
		return errAggType
	case Min:
		st.wantMin = true
	case Max:
		st.wantMax = true
	}
	return nil
}

func (st *aggStrState) OutType(f Func) arrow.DataType {
	if f == Count {
		return arrow.PrimitiveTypes.Int64
	}
	return arrow.BinaryTypes.String
}

func (st *aggStrState) Grow(n int) {
	st.n.Grow(n)
	st.mn.Grow(n)
	st.mx.Grow(n)
}

func (st *aggStrState) Reset(gids []int32) {
	for _, g := range gids {
		*st.n.At(g) = 0
		*st.mn.At(g) = (*st.mn.At(g))[:0]
		*st.mx.At(g) = (*st.mx.At(g))[:0]
	}
}

func (st *aggStrState) Update(gids []int32, arr arrow.Array, rows []int32) {
	a := arr.(*array.String)
	offs := a.ValueOffsets()
	var data []byte
	if b := a.Data().Buffers()[2]; b != nil {
		data = b.Bytes()
	}
	gs := aggMaskNulls(gids, arr, rows, &st.gbuf, &st.nbuf)
	n, mn, mx := st.n, st.mn, st.mx
	for k, g := range gs {
		if g < 0 {
			continue
		}
		r := k
		if rows != nil {
			r = int(rows[k])
		}
		v := data[offs[r]:offs[r+1]]
		if st.wantMin && (*n.At(g) == 0 || bytes.Compare(v, *mn.At(g)) < 0) {
			*mn.At(g) = append((*mn.At(g))[:0], v...)
		}
		if st.wantMax && (*n.At(g) == 0 || bytes.Compare(v, *mx.At(g)) > 0) {
			*mx.At(g) = append((*mx.At(g))[:0], v...)
		}
		(*n.At(g))++
	}
}

func (st *aggStrState) Merge(dst, src int32) {
	if *st.n.At(src) == 0 {
		return
	}
	first := *st.n.At(dst) == 0
	if st.wantMin && (first || bytes.Compare(*st.mn.At(src), *st.mn.At(dst)) < 0) {
		*st.mn.At(dst) = append((*st.mn.At(dst))[:0], *st.mn.At(src)...)
	}
	if st.wantMax && (first || bytes.Compare(*st.mx.At(src), *st.mx.At(dst)) > 0) {
		*st.mx.At(dst) = append((*st.mx.At(dst))[:0], *st.mx.At(src)...)
	}
	*st.n.At(dst) += *st.n.At(src)
}

func (st *aggStrState) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	if f == Count {
		return aggBuildCount(mem, &st.n, gids)
	}
	src := st.mx
	if f == Min {
		src = st.mn
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(len(gids))
	for _, g := range gids {
		if *st.n.At(g) == 0 {
			b.AppendNull()
		} else {
			b.BinaryBuilder.Append(*src.At(g))
		}
	}
	return b.NewArray()
}
