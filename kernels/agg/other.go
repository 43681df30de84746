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
	n    []int64
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
	if n > len(st.n) {
		st.n = append(st.n, make([]int64, n-len(st.n))...)
	}
}

func (st *aggCountState) Reset(gids []int32) {
	for _, g := range gids {
		st.n[g] = 0
	}
}

func (st *aggCountState) Update(gids []int32, arr arrow.Array, rows []int32) {
	n := st.n
	if st.star {
		for _, g := range gids {
			n[g]++
		}
		return
	}
	for _, g := range aggMaskNulls(gids, arr, rows, &st.gbuf, &st.nbuf) {
		if g >= 0 {
			n[g]++
		}
	}
}

func (st *aggCountState) Merge(dst, src int32) { st.n[dst] += st.n[src] }

func (st *aggCountState) Build(mem memory.Allocator, _ Func, gids []int32) arrow.Array {
	return aggBuildCount(mem, st.n, gids)
}

// aggBoolEntry: MIN is logical AND, MAX logical OR.
type aggBoolEntry struct {
	n      int64
	mn, mx uint8
}

type aggBoolState struct {
	e    []aggBoolEntry
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
	if n > len(st.e) {
		st.e = append(st.e, make([]aggBoolEntry, n-len(st.e))...)
	}
}

func (st *aggBoolState) Reset(gids []int32) {
	for _, g := range gids {
		st.e[g] = aggBoolEntry{}
	}
}

func (st *aggBoolState) Update(gids []int32, arr arrow.Array, rows []int32) {
	vs := column.Grow(st.vbuf, len(gids))
	st.vbuf = vs
	column.BoolsInto(vs, arr, rows)
	gs := aggMaskNulls(gids, arr, rows, &st.gbuf, &st.nbuf)
	e := st.e
	for k, g := range gs {
		if g < 0 {
			continue
		}
		p := &e[g]
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
	d, s := &st.e[dst], &st.e[src]
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
			o.Vals[j] = st.e[g].n
		}
		return o.Finish()
	}
	o := column.NewBool(mem, len(gids))
	for j, g := range gids {
		p := &st.e[g]
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
	n                []int64
	mn, mx           [][]byte
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
	for len(st.n) < n {
		st.n = append(st.n, 0)
		st.mn = append(st.mn, nil)
		st.mx = append(st.mx, nil)
	}
}

func (st *aggStrState) Reset(gids []int32) {
	for _, g := range gids {
		st.n[g] = 0
		st.mn[g] = st.mn[g][:0]
		st.mx[g] = st.mx[g][:0]
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
		if st.wantMin && (n[g] == 0 || bytes.Compare(v, mn[g]) < 0) {
			mn[g] = append(mn[g][:0], v...)
		}
		if st.wantMax && (n[g] == 0 || bytes.Compare(v, mx[g]) > 0) {
			mx[g] = append(mx[g][:0], v...)
		}
		n[g]++
	}
}

func (st *aggStrState) Merge(dst, src int32) {
	if st.n[src] == 0 {
		return
	}
	first := st.n[dst] == 0
	if st.wantMin && (first || bytes.Compare(st.mn[src], st.mn[dst]) < 0) {
		st.mn[dst] = append(st.mn[dst][:0], st.mn[src]...)
	}
	if st.wantMax && (first || bytes.Compare(st.mx[src], st.mx[dst]) > 0) {
		st.mx[dst] = append(st.mx[dst][:0], st.mx[src]...)
	}
	st.n[dst] += st.n[src]
}

func (st *aggStrState) Build(mem memory.Allocator, f Func, gids []int32) arrow.Array {
	if f == Count {
		return aggBuildCount(mem, st.n, gids)
	}
	src := st.mx
	if f == Min {
		src = st.mn
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(len(gids))
	for _, g := range gids {
		if st.n[g] == 0 {
			b.AppendNull()
		} else {
			b.BinaryBuilder.Append(src[g])
		}
	}
	return b.NewArray()
}
