package agg

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Snapshots of the changelog accumulators (retract.go). A MIN or
// MAX keeps its group's multiset as two lists of one length: the distinct
// values in ascending order (min_values / max_values, LIST of the
// column's type) and how many rows hold each (min_counts / max_counts,
// LIST<BIGINT>). COUNT(DISTINCT) keeps distinct_values (LIST<STRING>, the
// values' texts, sorted) and distinct_counts (LIST<BIGINT>).

var countListType = arrow.ListOf(arrow.PrimitiveTypes.Int64)

func (a *gaMulti[T]) StateFields(p string) []arrow.Field {
	w := "min"
	if a.max {
		w = "max"
	}
	return []arrow.Field{
		{Name: p + w + "_values", Type: arrow.ListOf(a.t)},
		{Name: p + w + "_counts", Type: countListType},
	}
}

func (a *gaMulti[T]) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	vb, cb := array.NewListBuilder(mem, a.t), array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer vb.Release()
	defer cb.Release()
	app, cnt := a.store(vb.ValueBuilder()), cb.ValueBuilder().(*array.Int64Builder)
	for _, id := range ids {
		vb.Append(true)
		cb.Append(true)
		a.sets.At(id).all(func(v T, n int64) {
			app(v)
			cnt.Append(n)
		})
	}
	return []arrow.Array{vb.NewArray(), cb.NewArray()}
}

func (a *gaMulti[T]) SetState(ids []int32, cols []arrow.Array) error {
	vl, cl := cols[0].(*array.List), cols[1].(*array.List)
	vals, counts := vl.ListValues(), cl.ListValues().(*array.Int64)
	get := a.load(vals)
	vo, co := vl.Offsets(), cl.Offsets()
	for j, id := range ids {
		if vo[j+1]-vo[j] != co[j+1]-co[j] {
			return fmt.Errorf("row %d: %d values but %d counts", j, vo[j+1]-vo[j], co[j+1]-co[j])
		}
		var m multiset[T]
		for i := vo[j]; i < vo[j+1]; i++ {
			c := int(co[j] + i - vo[j])
			if vals.IsNull(int(i)) || counts.IsNull(c) || counts.Value(c) <= 0 {
				return fmt.Errorf("row %d: a NULL value or a count below 1", j)
			}
			v := get(int(i))
			if !m.empty() && !a.less(m.last(), v) {
				return fmt.Errorf("row %d: values not in ascending order", j)
			}
			if a.clone != nil {
				v = a.clone(v) // the record's buffers belong to the checkpoint
			}
			m.appendSorted(v, counts.Value(c))
		}
		*a.sets.At(id) = m
	}
	return nil
}

func (a *gaDistinctCounts) StateFields(p string) []arrow.Field {
	return []arrow.Field{
		{Name: p + "distinct_values", Type: distinctListType},
		{Name: p + "distinct_counts", Type: countListType},
	}
}

func (a *gaDistinctCounts) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	vb, cb := array.NewListBuilder(mem, arrow.BinaryTypes.String), array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer vb.Release()
	defer cb.Release()
	sv, cnt := vb.ValueBuilder().(*array.StringBuilder), cb.ValueBuilder().(*array.Int64Builder)
	var vals []string
	for _, id := range ids {
		vb.Append(true)
		cb.Append(true)
		vals = vals[:0]
		for v := range *a.sets.At(id) {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		for _, v := range vals {
			sv.Append(v)
			cnt.Append((*a.sets.At(id))[v])
		}
	}
	return []arrow.Array{vb.NewArray(), cb.NewArray()}
}

func (a *gaDistinctCounts) SetState(ids []int32, cols []arrow.Array) error {
	vl, cl := cols[0].(*array.List), cols[1].(*array.List)
	vals, counts := vl.ListValues().(*array.String), cl.ListValues().(*array.Int64)
	vo, co := vl.Offsets(), cl.Offsets()
	for j, id := range ids {
		if vo[j+1]-vo[j] != co[j+1]-co[j] {
			return fmt.Errorf("row %d: %d values but %d counts", j, vo[j+1]-vo[j], co[j+1]-co[j])
		}
		if vo[j] == vo[j+1] {
			*a.sets.At(id) = nil
			continue
		}
		set := make(map[string]int64, vo[j+1]-vo[j])
		for i := vo[j]; i < vo[j+1]; i++ {
			c := int(co[j] + i - vo[j])
			if counts.Value(c) <= 0 {
				return fmt.Errorf("row %d: a count below 1", j)
			}
			set[strings.Clone(vals.Value(int(i)))] = counts.Value(c) // the record's buffers belong to the checkpoint
		}
		*a.sets.At(id) = set
	}
	return nil
}
