package kernels

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Snapshots of accumulator states. Every state describes its accumulators
// as typed value columns (stateFields), writes them for a list of groups
// (snapshot) and sets groups from them (restore): the columns a checkpoint
// part holds for an aggregate, readable as they are (a sum is a number, a
// minimum has the column's type; NULL where the group saw no value).

func int64Col(mem memory.Allocator, n int, at func(j int) int64) arrow.Array {
	o := winNewFixed[int64](mem, arrow.PrimitiveTypes.Int64, n)
	for j := range n {
		o.vals[j] = at(j)
	}
	return o.finish()
}

func readInt64(a arrow.Array) ([]int64, error) {
	if a == nil || a.DataType().ID() != arrow.INT64 {
		return nil, fmt.Errorf("state column is %v, want int64", typeOf(a))
	}
	return a.(*array.Int64).Int64Values(), nil
}

func typeOf(a arrow.Array) any {
	if a == nil {
		return "missing"
	}
	return a.DataType()
}

func checkType(a arrow.Array, dt arrow.DataType) error {
	if a == nil || !arrow.TypeEqual(a.DataType(), dt) {
		return fmt.Errorf("state column is %v, want %s", typeOf(a), dt)
	}
	return nil
}

// Float states: count, sum and its compensation, min, max.

func (st *aggFloatState[T]) stateFields(p string) []arrow.Field {
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

func (st *aggFloatState[T]) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	e := st.e
	cols := []arrow.Array{int64Col(mem, len(gids), func(j int) int64 { return e[gids[j]].n })}
	if st.sum {
		s := winNewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(gids))
		c := winNewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(gids))
		for j, g := range gids {
			s.vals[j], c.vals[j] = e[g].s, e[g].c
		}
		cols = append(cols, s.finish(), c.finish())
	}
	if st.mm {
		mn := winNewFixed[T](mem, st.dt, len(gids))
		mx := winNewFixed[T](mem, st.dt, len(gids))
		for j, g := range gids {
			if e[g].n == 0 {
				mn.setNull(j)
				mx.setNull(j)
				continue
			}
			mn.vals[j], mx.vals[j] = e[g].mn, e[g].mx
		}
		cols = append(cols, mn.finish(), mx.finish())
	}
	return cols
}

func (st *aggFloatState[T]) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	e := st.e
	for j, g := range gids {
		e[g].n = n[j]
	}
	i := 1
	if st.sum {
		for _, c := range cols[i : i+2] {
			if err := checkType(c, arrow.PrimitiveTypes.Float64); err != nil {
				return err
			}
		}
		s, c := arrow.GetValues[float64](cols[i].Data(), 1), arrow.GetValues[float64](cols[i+1].Data(), 1)
		for j, g := range gids {
			e[g].s, e[g].c = s[j], c[j]
		}
		i += 2
	}
	if st.mm {
		for _, c := range cols[i : i+2] {
			if err := checkType(c, st.dt); err != nil {
				return err
			}
		}
		mn, mx := arrow.GetValues[T](cols[i].Data(), 1), arrow.GetValues[T](cols[i+1].Data(), 1)
		for j, g := range gids {
			e[g].mn, e[g].mx = mn[j], mx[j]
		}
	}
	return nil
}

// Integer states: count, the exact sum as DECIMAL(38, 0), min, max.

var decSumType = &arrow.Decimal128Type{Precision: 38, Scale: 0}

func (st *aggIntState[T]) stateFields(p string) []arrow.Field {
	f := []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
	if st.sum {
		f = append(f, arrow.Field{Name: p + "sum", Type: decSumType})
	}
	if st.mm {
		f = append(f, arrow.Field{Name: p + "min", Type: st.dt}, arrow.Field{Name: p + "max", Type: st.dt})
	}
	return f
}

func (st *aggIntState[T]) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	e := st.e
	cols := []arrow.Array{int64Col(mem, len(gids), func(j int) int64 { return e[gids[j]].n })}
	if st.sum {
		s := winNewFixed[decimal128.Num](mem, decSumType, len(gids))
		for j, g := range gids {
			s.vals[j] = decimal128.New(e[g].hi, e[g].lo)
		}
		cols = append(cols, s.finish())
	}
	if st.mm {
		mn := winNewFixed[T](mem, st.dt, len(gids))
		mx := winNewFixed[T](mem, st.dt, len(gids))
		for j, g := range gids {
			if e[g].n == 0 {
				mn.setNull(j)
				mx.setNull(j)
				continue
			}
			mn.vals[j], mx.vals[j] = e[g].mn, e[g].mx
		}
		cols = append(cols, mn.finish(), mx.finish())
	}
	return cols
}

func (st *aggIntState[T]) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	e := st.e
	for j, g := range gids {
		e[g].n = n[j]
	}
	i := 1
	if st.sum {
		if err := checkType(cols[i], decSumType); err != nil {
			return err
		}
		s := arrow.GetValues[decimal128.Num](cols[i].Data(), 1)
		for j, g := range gids {
			e[g].hi, e[g].lo = s[j].HighBits(), s[j].LowBits()
		}
		i++
	}
	if st.mm {
		for _, c := range cols[i : i+2] {
			if err := checkType(c, st.dt); err != nil {
				return err
			}
		}
		mn, mx := arrow.GetValues[T](cols[i].Data(), 1), arrow.GetValues[T](cols[i+1].Data(), 1)
		for j, g := range gids {
			e[g].mn, e[g].mx = mn[j], mx[j]
		}
	}
	return nil
}

// COUNT(*) and COUNT(x): the count.

func (st *aggCountState) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
}

func (st *aggCountState) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	return []arrow.Array{int64Col(mem, len(gids), func(j int) int64 { return st.n[gids[j]] })}
}

func (st *aggCountState) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	for j, g := range gids {
		st.n[g] = n[j]
	}
	return nil
}

// Booleans: count, min (AND), max (OR).

func (st *aggBoolState) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: p + "min", Type: arrow.FixedWidthTypes.Boolean}, {Name: p + "max", Type: arrow.FixedWidthTypes.Boolean}}
}

func (st *aggBoolState) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{
		int64Col(mem, len(gids), func(j int) int64 { return st.e[gids[j]].n }),
		st.build(mem, AggMin, gids),
		st.build(mem, AggMax, gids),
	}
	return cols
}

func (st *aggBoolState) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	for _, c := range cols[1:3] {
		if err := checkType(c, arrow.FixedWidthTypes.Boolean); err != nil {
			return err
		}
	}
	mn, mx := cols[1].(*array.Boolean), cols[2].(*array.Boolean)
	for j, g := range gids {
		p := &st.e[g]
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

func (st *aggStrState) stateFields(p string) []arrow.Field {
	f := []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
	if st.wantMin {
		f = append(f, arrow.Field{Name: p + "min", Type: arrow.BinaryTypes.String})
	}
	if st.wantMax {
		f = append(f, arrow.Field{Name: p + "max", Type: arrow.BinaryTypes.String})
	}
	return f
}

func (st *aggStrState) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{aggBuildCount(mem, st.n, gids)}
	if st.wantMin {
		cols = append(cols, st.build(mem, AggMin, gids))
	}
	if st.wantMax {
		cols = append(cols, st.build(mem, AggMax, gids))
	}
	return cols
}

func (st *aggStrState) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	for _, c := range cols[1:] {
		if err := checkType(c, arrow.BinaryTypes.String); err != nil {
			return err
		}
	}
	i := 1
	set := func(dst [][]byte) {
		a := cols[i].(*array.String)
		for j, g := range gids {
			dst[g] = append(dst[g][:0], a.Value(j)...)
		}
		i++
	}
	for j, g := range gids {
		st.n[g] = n[j]
	}
	if st.wantMin {
		set(st.mn)
	}
	if st.wantMax {
		set(st.mx)
	}
	return nil
}

// Decimals: count, the exact sum (DECIMAL(38, s)), min, max.

func (st *aggDecState) sumType() arrow.DataType {
	return &arrow.Decimal128Type{Precision: 38, Scale: st.dt.Scale}
}

func (st *aggDecState) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}, {Name: p + "sum", Type: st.sumType()},
		{Name: p + "min", Type: st.dt}, {Name: p + "max", Type: st.dt}}
}

func (st *aggDecState) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	cols := []arrow.Array{int64Col(mem, len(gids), func(j int) int64 { return st.n[gids[j]] })}
	for k, src := range [][]decimal128.Num{st.sum, st.mn, st.mx} {
		dt := arrow.DataType(st.dt)
		if k == 0 {
			dt = st.sumType()
		}
		o := winNewFixed[decimal128.Num](mem, dt, len(gids))
		for j, g := range gids {
			if st.n[g] == 0 && k > 0 {
				o.setNull(j)
				continue
			}
			o.vals[j] = src[g]
		}
		cols = append(cols, o.finish())
	}
	return cols
}

func (st *aggDecState) restore(gids []int32, cols []arrow.Array) error {
	n, err := readInt64(cols[0])
	if err != nil {
		return err
	}
	for k, dst := range [][]decimal128.Num{st.sum, st.mn, st.mx} {
		dt := arrow.DataType(st.dt)
		if k == 0 {
			dt = st.sumType()
		}
		if err := checkType(cols[k+1], dt); err != nil {
			return err
		}
		v := arrow.GetValues[decimal128.Num](cols[k+1].Data(), 1)
		for j, g := range gids {
			dst[g] = v[j]
		}
	}
	for j, g := range gids {
		st.n[g] = n[j]
	}
	return nil
}

// COUNT(DISTINCT x): the distinct values' texts, sorted.

var distinctListType = arrow.ListOf(arrow.BinaryTypes.String)

func (s *aggDistinctState) stateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "values", Type: distinctListType}}
}

func (s *aggDistinctState) snapshot(mem memory.Allocator, gids []int32) []arrow.Array {
	b := array.NewListBuilder(mem, arrow.BinaryTypes.String)
	defer b.Release()
	vb := b.ValueBuilder().(*array.StringBuilder)
	var vals []string
	for _, g := range gids {
		b.Append(true)
		vals = vals[:0]
		for v := range s.sets[g] {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		vb.AppendValues(vals, nil)
	}
	return []arrow.Array{b.NewArray()}
}

func (s *aggDistinctState) restore(gids []int32, cols []arrow.Array) error {
	if err := checkType(cols[0], distinctListType); err != nil {
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
		s.sets[g] = set
	}
	return nil
}
