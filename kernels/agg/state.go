package agg

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// Snapshots of accumulator states. Every state describes its accumulators
// as typed value columns (StateFields), returns them for a list of groups
// (StateColumns) and sets groups from them (SetState): the columns a
// checkpoint part holds for an aggregate, readable as they are (a sum is a
// number, a minimum has the column's type; NULL where the group saw no
// value). The operators write them into parts; this package knows no
// checkpoint.

// Float states: count, sum and its compensation, min, max.

func (st *aggFloatState[T]) StateFields(p string) []arrow.Field {
	f := []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
	if st.sum {
		f = append(f, arrow.Field{Name: p + "sum", Type: arrow.PrimitiveTypes.Float64},
			arrow.Field{Name: p + "sum_err", Type: arrow.PrimitiveTypes.Float64})
	}
	if st.mm {
		f = append(f, arrow.Field{Name: p + "min", Type: st.dt}, arrow.Field{Name: p + "max", Type: st.dt})
	}
	return f
}

func (st *aggFloatState[T]) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	e := st.e
	n := len(gids)
	cnt := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, n)
	var s, c *column.Fixed[float64]
	var mn, mx *column.Fixed[T]
	if st.sum {
		s = column.NewFixed[float64](mem, arrow.PrimitiveTypes.Float64, n)
		c = column.NewFixed[float64](mem, arrow.PrimitiveTypes.Float64, n)
	}
	if st.mm {
		mn = column.NewFixed[T](mem, st.dt, n)
		mx = column.NewFixed[T](mem, st.dt, n)
	}
	for j, g := range gids { // one pass: each group's entry is read once
		p := e.At(g)
		cnt.Vals[j] = p.n
		if s != nil {
			s.Vals[j], c.Vals[j] = p.s, p.c
		}
		if mn != nil {
			if p.n == 0 {
				mn.SetNull(j)
				mx.SetNull(j)
			} else {
				mn.Vals[j], mx.Vals[j] = p.mn, p.mx
			}
		}
	}
	cols := []arrow.Array{cnt.Finish()}
	if s != nil {
		cols = append(cols, s.Finish(), c.Finish())
	}
	if mn != nil {
		cols = append(cols, mn.Finish(), mx.Finish())
	}
	return cols
}

func (st *aggFloatState[T]) SetState(gids []int32, cols []arrow.Array) error {
	st.unshare(gids)
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	e := st.e
	for j, g := range gids {
		e.At(g).n = n[j]
	}
	i := 1
	if st.sum {
		for _, c := range cols[i : i+2] {
			if err := column.CheckType(c, arrow.PrimitiveTypes.Float64); err != nil {
				return err
			}
		}
		s, c := arrow.GetValues[float64](cols[i].Data(), 1), arrow.GetValues[float64](cols[i+1].Data(), 1)
		for j, g := range gids {
			e.At(g).s, e.At(g).c = s[j], c[j]
		}
		i += 2
	}
	if st.mm {
		for _, c := range cols[i : i+2] {
			if err := column.CheckType(c, st.dt); err != nil {
				return err
			}
		}
		mn, mx := arrow.GetValues[T](cols[i].Data(), 1), arrow.GetValues[T](cols[i+1].Data(), 1)
		for j, g := range gids {
			e.At(g).mn, e.At(g).mx = mn[j], mx[j]
		}
	}
	return nil
}

// Integer states: count, the exact sum as DECIMAL(38, 0), min, max.

var decSumType = &arrow.Decimal128Type{Precision: 38, Scale: 0}

func (st *aggIntState[T]) StateFields(p string) []arrow.Field {
	f := []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
	if st.sum {
		f = append(f, arrow.Field{Name: p + "sum", Type: decSumType})
	}
	if st.mm {
		f = append(f, arrow.Field{Name: p + "min", Type: st.dt}, arrow.Field{Name: p + "max", Type: st.dt})
	}
	return f
}

func (st *aggIntState[T]) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	e := st.e
	cols := []arrow.Array{column.Int64(mem, len(gids), func(j int) int64 { return e.At(gids[j]).n })}
	if st.sum {
		s := column.NewFixed[decimal128.Num](mem, decSumType, len(gids))
		for j, g := range gids {
			s.Vals[j] = decimal128.New(e.At(g).hi, e.At(g).lo)
		}
		cols = append(cols, s.Finish())
	}
	if st.mm {
		mn := column.NewFixed[T](mem, st.dt, len(gids))
		mx := column.NewFixed[T](mem, st.dt, len(gids))
		for j, g := range gids {
			if e.At(g).n == 0 {
				mn.SetNull(j)
				mx.SetNull(j)
				continue
			}
			mn.Vals[j], mx.Vals[j] = e.At(g).mn, e.At(g).mx
		}
		cols = append(cols, mn.Finish(), mx.Finish())
	}
	return cols
}

func (st *aggIntState[T]) SetState(gids []int32, cols []arrow.Array) error {
	st.unshare(gids)
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	e := st.e
	for j, g := range gids {
		e.At(g).n = n[j]
	}
	i := 1
	if st.sum {
		if err := column.CheckType(cols[i], decSumType); err != nil {
			return err
		}
		s := arrow.GetValues[decimal128.Num](cols[i].Data(), 1)
		for j, g := range gids {
			e.At(g).hi, e.At(g).lo = s[j].HighBits(), s[j].LowBits()
		}
		i++
	}
	if st.mm {
		for _, c := range cols[i : i+2] {
			if err := column.CheckType(c, st.dt); err != nil {
				return err
			}
		}
		mn, mx := arrow.GetValues[T](cols[i].Data(), 1), arrow.GetValues[T](cols[i+1].Data(), 1)
		for j, g := range gids {
			e.At(g).mn, e.At(g).mx = mn[j], mx[j]
		}
	}
	return nil
}

// COUNT(*) and COUNT(x): the count.

func (st *aggCountState) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
}

func (st *aggCountState) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	return []arrow.Array{column.Int64(mem, len(gids), func(j int) int64 { return *st.n.At(gids[j]) })}
}

func (st *aggCountState) SetState(gids []int32, cols []arrow.Array) error {
	st.unshare(gids)
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	for j, g := range gids {
		*st.n.At(g) = n[j]
	}
	return nil
}

// Booleans: count, min (AND), max (OR).

func (st *aggBoolState) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: p + "min", Type: arrow.FixedWidthTypes.Boolean}, {Name: p + "max", Type: arrow.FixedWidthTypes.Boolean}}
}

func (st *aggBoolState) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{
		column.Int64(mem, len(gids), func(j int) int64 { return st.e.At(gids[j]).n }),
		st.Build(mem, Min, gids),
		st.Build(mem, Max, gids),
	}
	return cols
}

func (st *aggBoolState) SetState(gids []int32, cols []arrow.Array) error {
	st.unshare(gids)
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	for _, c := range cols[1:3] {
		if err := column.CheckType(c, arrow.FixedWidthTypes.Boolean); err != nil {
			return err
		}
	}
	mn, mx := cols[1].(*array.Boolean), cols[2].(*array.Boolean)
	for j, g := range gids {
		p := st.e.At(g)
		p.n = n[j]
		p.mn, p.mx = 0, 0
		if mn.IsValid(j) && mn.Value(j) {
			p.mn = 1
		}
		if mx.IsValid(j) && mx.Value(j) {
			p.mx = 1
		}
	}
	return nil
}

// Strings: count, min, max.

func (st *aggStrState) StateFields(p string) []arrow.Field {
	f := []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
	if st.wantMin {
		f = append(f, arrow.Field{Name: p + "min", Type: arrow.BinaryTypes.String})
	}
	if st.wantMax {
		f = append(f, arrow.Field{Name: p + "max", Type: arrow.BinaryTypes.String})
	}
	return f
}

func (st *aggStrState) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{aggBuildCount(mem, &st.n, gids)}
	if st.wantMin {
		cols = append(cols, st.Build(mem, Min, gids))
	}
	if st.wantMax {
		cols = append(cols, st.Build(mem, Max, gids))
	}
	return cols
}

func (st *aggStrState) SetState(gids []int32, cols []arrow.Array) error {
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	for _, c := range cols[1:] {
		if err := column.CheckType(c, arrow.BinaryTypes.String); err != nil {
			return err
		}
	}
	i := 1
	set := func(dst *column.Chunked[[]byte]) {
		a := cols[i].(*array.String)
		for j, g := range gids {
			*dst.At(g) = append((*dst.At(g))[:0], a.Value(j)...)
		}
		i++
	}
	for j, g := range gids {
		*st.n.At(g) = n[j]
	}
	if st.wantMin {
		set(&st.mn)
	}
	if st.wantMax {
		set(&st.mx)
	}
	return nil
}

// Decimals: count, the exact sum (DECIMAL(38, s)), min, max.

func (st *aggDecState) sumType() arrow.DataType {
	return &arrow.Decimal128Type{Precision: 38, Scale: st.dt.Scale}
}

func (st *aggDecState) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}, {Name: p + "sum", Type: st.sumType()},
		{Name: p + "min", Type: st.dt}, {Name: p + "max", Type: st.dt}}
}

func (st *aggDecState) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{column.Int64(mem, len(gids), func(j int) int64 { return *st.n.At(gids[j]) })}
	for k, src := range []*column.Chunked[decimal128.Num]{&st.sum, &st.mn, &st.mx} {
		dt := arrow.DataType(st.dt)
		if k == 0 {
			dt = st.sumType()
		}
		o := column.NewFixed[decimal128.Num](mem, dt, len(gids))
		for j, g := range gids {
			if *st.n.At(g) == 0 && k > 0 {
				o.SetNull(j)
				continue
			}
			o.Vals[j] = *src.At(g)
		}
		cols = append(cols, o.Finish())
	}
	return cols
}

func (st *aggDecState) SetState(gids []int32, cols []arrow.Array) error {
	st.unshare(gids)
	n, err := column.ReadInt64(cols[0])
	if err != nil {
		return err
	}
	for k, dst := range []*column.Chunked[decimal128.Num]{&st.sum, &st.mn, &st.mx} {
		dt := arrow.DataType(st.dt)
		if k == 0 {
			dt = st.sumType()
		}
		if err := column.CheckType(cols[k+1], dt); err != nil {
			return err
		}
		v := arrow.GetValues[decimal128.Num](cols[k+1].Data(), 1)
		for j, g := range gids {
			*dst.At(g) = v[j]
		}
	}
	for j, g := range gids {
		*st.n.At(g) = n[j]
	}
	return nil
}

// COUNT(DISTINCT x): the distinct values' texts, sorted.

var distinctListType = arrow.ListOf(arrow.BinaryTypes.String)

func (s *DistinctState) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "values", Type: distinctListType}}
}

func (s *DistinctState) StateColumns(mem memory.Allocator, gids []int32) []arrow.Array {
	b := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	defer b.Release()
	vb := b.ValueBuilder().(*array.StringBuilder)
	var vals []string
	for _, g := range gids {
		b.Append(true)
		vals = vals[:0]
		for v := range *s.sets.At(g) {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		vb.AppendValues(vals, nil)
	}
	return []arrow.Array{b.NewArray()}
}

func (s *DistinctState) SetState(gids []int32, cols []arrow.Array) error {
	if err := column.CheckType(cols[0], distinctListType); err != nil {
		return err
	}
	l := cols[0].(*array.List)
	vals := l.ListValues().(*array.String)
	offs := l.Offsets()
	for j, g := range gids {
		set := map[string]struct{}{}
		for i := offs[j]; i < offs[j+1]; i++ {
			set[vals.Value(int(i))] = struct{}{}
		}
		*s.sets.At(g) = set
	}
	return nil
}
