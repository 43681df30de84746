package agg

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// Accumulator snapshots of the updating aggregate. Each accumulator
// describes its state as typed value columns named prefix+what, writes
// them for a list of groups and sets groups from them; a value is NULL
// where the group has none (the aggregate's result is NULL).

func (a *gaCount) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + "count", Type: arrow.PrimitiveTypes.Int64}}
}

func (a *gaCount) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	return []arrow.Array{column.Int64(mem, len(ids), func(j int) int64 { return *a.n.At(ids[j]) })}
}

func (a *gaCount) SetState(ids []int32, cols []arrow.Array) error {
	n := cols[0].(*array.Int64).Int64Values()
	for j, id := range ids {
		*a.n.At(id) = n[j]
	}
	return nil
}

// SUM keeps its sum (NULL before the first value); AVG its sum as avg_sum
// and the number of values as avg_count. Integer sums are exact
// DECIMAL(38, 0), decimal sums DECIMAL(38, s), float sums DOUBLE with the
// compensation in sum_err (the sum is sum + sum_err). Over a changelog a
// SUM counts its values too (sum_count: it is NULL again when all are
// retracted), and a float sum its non-finite values (sum_nan,
// sum_pos_inf, sum_neg_inf), kept apart from the finite sum.

// gaSumFields names the state columns of a SUM or AVG whose sum columns
// have types sums: the sums, the number of values (AVG, or SUM over a
// changelog), and the non-finite counts of a float sum over a changelog.
func gaSumFields(p string, avg, retract, float bool, sums ...arrow.DataType) []arrow.Field {
	names := []string{"sum", "sum_err"}
	count := "sum_count"
	if avg {
		p += "avg_"
		count = "count"
	}
	var f []arrow.Field
	for i, t := range sums {
		f = append(f, arrow.Field{Name: p + names[i], Type: t})
	}
	if avg || retract {
		f = append(f, arrow.Field{Name: p + count, Type: arrow.PrimitiveTypes.Int64})
	}
	if retract && float {
		for _, w := range []string{"sum_nan", "sum_pos_inf", "sum_neg_inf"} {
			f = append(f, arrow.Field{Name: p + w, Type: arrow.PrimitiveTypes.Int64})
		}
	}
	return f
}

// gaSumSnapshot appends the number of values (when counted) to the sum
// columns.
func gaSumSnapshot(mem memory.Allocator, counted bool, ids []int32, n *column.Chunked[int64], cols ...arrow.Array) []arrow.Array {
	if counted {
		cols = append(cols, column.Int64(mem, len(ids), func(j int) int64 { return *n.At(ids[j]) }))
	}
	return cols
}

// gaSumCounts sets n from the count column cols[at] (when counted) or, for
// an insert-only SUM, to 1 where the sum is not NULL (its count only tells
// whether it has a value).
func gaSumCounts(counted bool, ids []int32, n *column.Chunked[int64], cols []arrow.Array, at int) {
	for j, id := range ids {
		switch {
		case counted:
			*n.At(id) = cols[at].(*array.Int64).Value(j)
		case cols[0].IsValid(j):
			*n.At(id) = 1
		default:
			*n.At(id) = 0
		}
	}
}

func (a *gaIntSum[T]) StateFields(p string) []arrow.Field {
	return gaSumFields(p, a.avg, a.retract, false, decSumType)
}

func (a *gaIntSum[T]) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	o := column.NewFixed[decimal128.Num](mem, decSumType, len(ids))
	for j, id := range ids {
		if *a.n.At(id) == 0 {
			o.SetNull(j)
			continue
		}
		o.Vals[j] = decimal128.New(*a.hi.At(id), *a.lo.At(id))
	}
	return gaSumSnapshot(mem, a.avg || a.retract, ids, &a.n, o.Finish())
}

func (a *gaIntSum[T]) SetState(ids []int32, cols []arrow.Array) error {
	s := cols[0].(*array.Decimal128)
	for j, id := range ids {
		*a.hi.At(id), *a.lo.At(id) = 0, 0
		if s.IsValid(j) {
			v := s.Value(j)
			*a.hi.At(id), *a.lo.At(id) = v.HighBits(), v.LowBits()
		}
	}
	gaSumCounts(a.avg || a.retract, ids, &a.n, cols, 1)
	return nil
}

func (a *gaFloatSum[T]) StateFields(p string) []arrow.Field {
	f64 := arrow.PrimitiveTypes.Float64
	return gaSumFields(p, a.avg, a.retract, true, f64, f64)
}

func (a *gaFloatSum[T]) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	cols := make([]arrow.Array, 2)
	for i, src := range []*column.Chunked[float64]{&a.s, &a.c} {
		o := column.NewFixed[float64](mem, arrow.PrimitiveTypes.Float64, len(ids))
		for j, id := range ids {
			if *a.n.At(id) == 0 {
				o.SetNull(j)
				continue
			}
			o.Vals[j] = *src.At(id)
		}
		cols[i] = o.Finish()
	}
	cols = gaSumSnapshot(mem, a.avg || a.retract, ids, &a.n, cols...)
	if a.retract {
		for w := range len(gaNonFinite{}) {
			cols = append(cols, column.Int64(mem, len(ids), func(j int) int64 { return (*a.nf.At(ids[j]))[w] }))
		}
	}
	return cols
}

func (a *gaFloatSum[T]) SetState(ids []int32, cols []arrow.Array) error {
	for i, dst := range []*column.Chunked[float64]{&a.s, &a.c} {
		c := cols[i].(*array.Float64)
		for j, id := range ids {
			*dst.At(id) = 0
			if c.IsValid(j) {
				*dst.At(id) = c.Value(j)
			}
		}
	}
	gaSumCounts(a.avg || a.retract, ids, &a.n, cols, 2)
	if a.retract {
		for w := range len(gaNonFinite{}) {
			c := cols[3+w].(*array.Int64)
			for j, id := range ids {
				(*a.nf.At(id))[w] = c.Value(j)
			}
		}
	}
	return nil
}

func (a *gaDecSum) StateFields(p string) []arrow.Field {
	return gaSumFields(p, a.avg, a.retract, false, &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale})
}

func (a *gaDecSum) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	o := column.NewFixed[decimal128.Num](mem, &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale}, len(ids))
	for j, id := range ids {
		if *a.n.At(id) == 0 {
			o.SetNull(j)
			continue
		}
		o.Vals[j] = *a.sum.At(id)
	}
	return gaSumSnapshot(mem, a.avg || a.retract, ids, &a.n, o.Finish())
}

func (a *gaDecSum) SetState(ids []int32, cols []arrow.Array) error {
	s := cols[0].(*array.Decimal128)
	for j, id := range ids {
		*a.sum.At(id) = decimal128.Num{}
		if s.IsValid(j) {
			*a.sum.At(id) = s.Value(j)
		}
	}
	gaSumCounts(a.avg || a.retract, ids, &a.n, cols, 1)
	return nil
}

func (a *gaExt[T]) what() string {
	if a.max {
		return "max"
	}
	return "min"
}

func (a *gaExt[T]) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + a.what(), Type: a.t}}
}

func (a *gaExt[T]) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	return []arrow.Array{gaSnapshotOpt(mem, a.t, ids, &a.v, &a.has)}
}

func (a *gaExt[T]) SetState(ids []int32, cols []arrow.Array) error {
	gaRestoreOpt(ids, cols[0], &a.v, &a.has)
	return nil
}

func (a *gaBoolExt) StateFields(p string) []arrow.Field {
	return []arrow.Field{{Name: p + a.what(), Type: arrow.FixedWidthTypes.Boolean}}
}

func (a *gaBoolExt) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	o := column.NewBool(mem, len(ids))
	for j, id := range ids {
		switch {
		case !(*a.has.At(id)):
			o.SetNull(j)
		case *a.v.At(id) == 1:
			o.Bits[j>>3] |= 1 << (j & 7)
		}
	}
	return []arrow.Array{o.Finish()}
}

func (a *gaBoolExt) SetState(ids []int32, cols []arrow.Array) error {
	b := cols[0].(*array.Boolean)
	for j, id := range ids {
		*a.v.At(id), *a.has.At(id) = 0, b.IsValid(j)
		if (*a.has.At(id)) && b.Value(j) {
			*a.v.At(id) = 1
		}
	}
	return nil
}

// COUNT(DISTINCT x) keeps the sets as the window aggregate does: the
// values' texts, sorted, as LIST<STRING>.

func (a *gaDistinct) StateFields(p string) []arrow.Field {
	return (&DistinctState{}).StateFields(p + "distinct_")
}

func (a *gaDistinct) StateColumns(mem memory.Allocator, ids []int32) []arrow.Array {
	return (&DistinctState{sets: a.sets}).StateColumns(mem, ids)
}

func (a *gaDistinct) SetState(ids []int32, cols []arrow.Array) error {
	return (&DistinctState{sets: a.sets}).SetState(ids, cols)
}

// gaSnapshotOpt builds a column of type t from per-group values that are
// NULL where has is false.
func gaSnapshotOpt[T any](mem memory.Allocator, t arrow.DataType, ids []int32, v *column.Chunked[T], has *column.Chunked[bool]) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(len(ids))
	app := b.(interface{ Append(T) })
	for _, id := range ids {
		if *has.At(id) {
			app.Append(*v.At(id))
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaRestoreOpt sets per-group values and has from col (NULL: no value).
// Strings are copied: col's buffers belong to the checkpoint's record.
func gaRestoreOpt[T any](ids []int32, col arrow.Array, v *column.Chunked[T], has *column.Chunked[bool]) {
	get := col.(interface{ Value(int) T })
	var zero T
	for j, id := range ids {
		*v.At(id), *has.At(id) = zero, col.IsValid(j)
		if !*has.At(id) {
			continue
		}
		x := get.Value(j)
		if s, ok := any(x).(string); ok {
			x = any(strings.Clone(s)).(T)
		}
		*v.At(id) = x
	}
}
