package agg

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// Acc is one aggregate's state of the unwindowed (updating) aggregate,
// indexed by group id. Its step (InsertAcc.Step, or RetractAcc.StepChanges
// over a changelog) folds entries in order, remembering each entry's old
// and new value and marking entries whose value changed; Build makes an
// output column from entries (old or new image). StateFields, StateColumns
// and SetState are its part of a checkpoint (group_state.go).
type Acc interface {
	Grow(n int)
	Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array
	Type() arrow.DataType
	StateFields(prefix string) []arrow.Field
	StateColumns(mem memory.Allocator, ids []int32) []arrow.Array
	SetState(ids []int32, cols []arrow.Array) error
}

// InsertAcc is an accumulator over an insert-only input.
type InsertAcc interface {
	Acc
	Step(gids []int32, arr arrow.Array, rows []int32, changed []bool)
}

// NewInsertAcc makes the accumulator of f over in. It supports what the
// window aggregate does (NewState), with the same result types and
// values: SUM of integers is BIGINT (the low 64 bits of an exact 128-bit
// sum), AVG of integers and SUM/AVG of floats DOUBLE (compensated float
// sums), SUM/AVG of DECIMAL(p, s) DECIMAL(38, s) / DECIMAL(38, max(s, 6)),
// MIN/MAX the argument's type.
func NewInsertAcc(f Func, in arrow.DataType) (InsertAcc, error) {
	switch f {
	case CountStar, Count:
		return &gaCount{star: f == CountStar}, nil
	case CountDistinct:
		return &gaDistinct{}, nil
	case Sum, Avg:
		avg := f == Avg
		switch in.ID() {
		case arrow.INT8:
			return &gaIntSum[int8]{avg: avg}, nil
		case arrow.INT16:
			return &gaIntSum[int16]{avg: avg}, nil
		case arrow.INT32:
			return &gaIntSum[int32]{avg: avg}, nil
		case arrow.INT64:
			return &gaIntSum[int64]{avg: avg}, nil
		case arrow.FLOAT32:
			return &gaFloatSum[float32]{avg: avg}, nil
		case arrow.FLOAT64:
			return &gaFloatSum[float64]{avg: avg}, nil
		case arrow.DECIMAL128:
			return &gaDecSum{dt: in.(*arrow.Decimal128Type), avg: avg}, nil
		}
	case Min, Max:
		max := f == Max
		switch in.ID() {
		case arrow.INT8:
			return newGAExt[int8](in, max), nil
		case arrow.INT16:
			return newGAExt[int16](in, max), nil
		case arrow.INT32:
			return newGAExt[int32](in, max), nil
		case arrow.INT64:
			return newGAExt[int64](in, max), nil
		case arrow.FLOAT32:
			return &gaExt[float32]{t: in, max: max, less: gaFloatLess[float32]}, nil
		case arrow.FLOAT64:
			return &gaExt[float64]{t: in, max: max, less: gaFloatLess[float64]}, nil
		case arrow.DATE32:
			return newGAExt[arrow.Date32](in, max), nil
		case arrow.DATE64:
			return newGAExt[arrow.Date64](in, max), nil
		case arrow.TIMESTAMP:
			return newGAExt[arrow.Timestamp](in, max), nil
		case arrow.STRING:
			return newGAExt[string](in, max), nil
		case arrow.DECIMAL128:
			return &gaExt[decimal128.Num]{t: in, max: max, less: decimal128.Num.Less}, nil
		case arrow.BOOL:
			return &gaBoolExt{gaExt[int8]{max: max, less: cmp.Less[int8]}}, nil
		}
	}
	return nil, fmt.Errorf("aggregate %v of %v is not supported by the updating aggregate", f, in)
}

// gaCount is COUNT(*) and COUNT(x).
type gaCount struct {
	star     bool
	n        column.Chunked[int64]
	old, new []int64
}

func (a *gaCount) Type() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (a *gaCount) Grow(n int)           { a.n.Grow(n) }

func (a *gaCount) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		a.old[k] = *a.n.At(id)
		if a.star || arr.IsValid(int(r)) {
			(*a.n.At(id))++
			changed[k] = true
		}
		a.new[k] = *a.n.At(id)
	}
}

func (a *gaCount) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(len(idx))
	for j, k := range idx {
		if old[j] {
			b.UnsafeAppend(a.old[k])
		} else {
			b.UnsafeAppend(a.new[k])
		}
	}
	return b.NewArray()
}

// gaImg holds the old and new result images of the entries of one step;
// an entry whose images differ (bit for bit) changed the group's result.
type gaImg[O comparable] struct {
	old, new     []O
	oldOK, newOK []bool
}

func (m *gaImg[O]) begin(n int) {
	m.old, m.new = column.Grow(m.old, n), column.Grow(m.new, n)
	m.oldOK, m.newOK = column.Grow(m.oldOK, n), column.Grow(m.newOK, n)
}

// put records entry k's images and marks k changed when they differ.
func (m *gaImg[O]) put(k int, o O, ook bool, nw O, nok bool, changed []bool) {
	m.old[k], m.oldOK[k], m.new[k], m.newOK[k] = o, ook, nw, nok
	if ook != nok || (nok && o != nw) {
		changed[k] = true
	}
}

// gaBuildBits builds a BIGINT or DOUBLE column (float) from images kept
// as bits.
func gaBuildBits(mem memory.Allocator, m *gaImg[uint64], float bool, idx []int32, old []bool) arrow.Array {
	t := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if float {
		t = arrow.PrimitiveTypes.Float64
	}
	o := column.NewFixed[uint64](mem, t, len(idx))
	for j, k := range idx {
		v, ok := m.new[k], m.newOK[k]
		if old[j] {
			v, ok = m.old[k], m.oldOK[k]
		}
		if ok {
			o.Vals[j] = v
		} else {
			o.SetNull(j)
		}
	}
	return o.Finish()
}

// gaIntSum is SUM (BIGINT) or AVG (DOUBLE) of an integer column. As in the
// window aggregate (aggIntState) the sum is exact in 128 bits (hi:lo): SUM
// reports its low 64 bits, wrapping like BIGINT arithmetic, AVG divides
// the exact sum. Images are kept as bits (int64 or float64).
type gaIntSum[T int8 | int16 | int32 | int64] struct {
	avg     bool
	retract bool // over a changelog: the state counts SUM's values too
	n       column.Chunked[int64]
	lo      column.Chunked[uint64]
	hi      column.Chunked[int64]
	img     gaImg[uint64]
}

func (a *gaIntSum[T]) Type() arrow.DataType {
	if a.avg {
		return arrow.PrimitiveTypes.Float64
	}
	return arrow.PrimitiveTypes.Int64
}

func (a *gaIntSum[T]) Grow(n int) {
	a.n.Grow(n)
	a.lo.Grow(n)
	a.hi.Grow(n)
}

func (a *gaIntSum[T]) out(id int32) (uint64, bool) {
	switch {
	case *a.n.At(id) == 0:
		return 0, false
	case a.avg:
		return math.Float64bits(aggInt128Float(*a.hi.At(id), *a.lo.At(id)) / float64(*a.n.At(id))), true
	}
	return *a.lo.At(id), true
}

func (a *gaIntSum[T]) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			v := int64(vals[r])
			var carry uint64
			*a.lo.At(id), carry = bits.Add64(*a.lo.At(id), uint64(v), 0)
			*a.hi.At(id) += int64(carry) + v>>63
			(*a.n.At(id))++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaIntSum[T]) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuildBits(mem, &a.img, a.avg, idx, old)
}

// gaFloatSum is SUM or AVG (DOUBLE) of a FLOAT or DOUBLE column, with the
// window aggregate's compensated sum (aggFloatState): s plus the rounding
// errors collected in c.
type gaFloatSum[T float32 | float64] struct {
	avg  bool
	n    column.Chunked[int64]
	s, c column.Chunked[float64]
	img  gaImg[uint64]
	// Over a changelog, non-finite values are counted apart in nf
	// (StepChanges).
	retract bool
	nf      column.Chunked[gaNonFinite]
}

func (a *gaFloatSum[T]) Type() arrow.DataType { return arrow.PrimitiveTypes.Float64 }

func (a *gaFloatSum[T]) Grow(n int) {
	a.n.Grow(n)
	a.s.Grow(n)
	a.c.Grow(n)
	if a.retract {
		a.nf.Grow(n)
	}
}

func (a *gaFloatSum[T]) out(id int32) (uint64, bool) {
	if *a.n.At(id) == 0 {
		return 0, false
	}
	s := *a.s.At(id)
	v := s + (*a.c.At(id))
	if math.IsInf(s, 0) || s != s {
		v = s // the error terms of an infinite sum are NaN
	}
	if a.retract {
		if f, ok := a.nf.At(id).value(); ok {
			v += f
		}
	}
	if a.avg {
		v /= float64(*a.n.At(id))
	}
	return math.Float64bits(v), true
}

func (a *gaFloatSum[T]) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			x, s := float64(vals[r]), *a.s.At(id)
			t := s + x
			bb := t - s
			*a.c.At(id) += (s - (t - bb)) + (x - bb)
			*a.s.At(id) = t
			(*a.n.At(id))++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaFloatSum[T]) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuildBits(mem, &a.img, true, idx, old)
}

// gaDecSum is SUM or AVG of a DECIMAL(p, s) column, exact as the window
// aggregate's (aggDecState): SUM is DECIMAL(38, s), AVG DECIMAL(38,
// max(s, 6)) rounded half up.
type gaDecSum struct {
	dt      *arrow.Decimal128Type
	avg     bool
	retract bool // over a changelog: the state counts SUM's values too
	n       column.Chunked[int64]
	sum     column.Chunked[decimal128.Num]
	img     gaImg[decimal128.Num]
}

func (a *gaDecSum) Type() arrow.DataType {
	if a.avg {
		return &arrow.Decimal128Type{Precision: 38, Scale: max(a.dt.Scale, 6)}
	}
	return &arrow.Decimal128Type{Precision: 38, Scale: a.dt.Scale}
}

func (a *gaDecSum) Grow(n int) {
	a.n.Grow(n)
	a.sum.Grow(n)
}

func (a *gaDecSum) out(id int32) (decimal128.Num, bool) {
	switch {
	case *a.n.At(id) == 0:
		return decimal128.Num{}, false
	case a.avg:
		return decAvg(*a.sum.At(id), *a.n.At(id), max(a.dt.Scale, 6)-a.dt.Scale), true
	}
	return *a.sum.At(id), true
}

func (a *gaDecSum) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	a.img.begin(len(rows))
	d := arr.(*array.Decimal128)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if d.IsValid(int(r)) {
			*a.sum.At(id) = a.sum.At(id).Add(d.Value(int(r)))
			(*a.n.At(id))++
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
	}
}

func (a *gaDecSum) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, a.Type(), idx, old, a.img.old, a.img.new, a.img.oldOK, a.img.newOK)
}

// gaExt is MIN or MAX over a type ordered by less.
type gaExt[T any] struct {
	t            arrow.DataType
	max          bool
	less         func(a, b T) bool
	v            column.Chunked[T]
	has          column.Chunked[bool]
	old, new     []T
	oldOK, newOK []bool
}

func (a *gaExt[T]) Type() arrow.DataType { return a.t }
func (a *gaExt[T]) Grow(n int) {
	a.v.Grow(n)
	a.has.Grow(n)
}

func (a *gaExt[T]) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	a.oldOK, a.newOK = column.Grow(a.oldOK, n), column.Grow(a.newOK, n)
	get := gaValues[T](arr)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = *a.v.At(id), (*a.has.At(id))
		if arr.IsValid(int(r)) {
			v := get(int(r))
			if !(*a.has.At(id)) || (a.max && a.less(*a.v.At(id), v)) || (!a.max && a.less(v, *a.v.At(id))) {
				// A string Value aliases the batch's buffer: keep a copy.
				if s, ok := any(v).(string); ok {
					v = any(strings.Clone(s)).(T)
				}
				*a.v.At(id), *a.has.At(id) = v, true
				changed[k] = true
			}
		}
		a.new[k], a.newOK[k] = *a.v.At(id), (*a.has.At(id))
	}
}

func (a *gaExt[T]) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	return gaBuild(mem, a.t, idx, old, a.old, a.new, a.oldOK, a.newOK)
}

// gaBoolExt is MIN/MAX over BOOLEAN (false < true).
type gaBoolExt struct{ gaExt[int8] }

func (a *gaBoolExt) Type() arrow.DataType { return arrow.FixedWidthTypes.Boolean }

func (a *gaBoolExt) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	a.oldOK, a.newOK = column.Grow(a.oldOK, n), column.Grow(a.newOK, n)
	ba := arr.(*array.Boolean)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = *a.v.At(id), (*a.has.At(id))
		if arr.IsValid(int(r)) {
			var v int8
			if ba.Value(int(r)) {
				v = 1
			}
			if !(*a.has.At(id)) || (a.max && v > *a.v.At(id)) || (!a.max && v < *a.v.At(id)) {
				*a.v.At(id), *a.has.At(id) = v, true
				changed[k] = true
			}
		}
		a.new[k], a.newOK[k] = *a.v.At(id), (*a.has.At(id))
	}
}

func (a *gaBoolExt) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	for j, k := range idx {
		v, ok := a.new[k], a.newOK[k]
		if old[j] {
			v, ok = a.old[k], a.oldOK[k]
		}
		if ok {
			b.Append(v == 1)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

func newGAExt[T cmp.Ordered](t arrow.DataType, max bool) *gaExt[T] {
	return &gaExt[T]{t: t, max: max, less: cmp.Less[T]}
}

// gaFloatLess orders floats as the window aggregate does: NaN above every
// other value.
func gaFloatLess[T float32 | float64](a, b T) bool { return a < b || (a == a && b != b) }

// gaValues returns arr's typed Value method.
func gaValues[T any](arr arrow.Array) func(int) T {
	if v, ok := arr.(interface{ Value(int) T }); ok {
		return v.Value
	}
	panic(fmt.Sprintf("gaValues: %s", arr.DataType()))
}

// gaBuild builds an output column from old/new images.
func gaBuild[T any](mem memory.Allocator, t arrow.DataType, idx []int32, old []bool, ov, nv []T, ook, nok []bool) arrow.Array {
	b := array.NewBuilder(mem, t)
	defer b.Release()
	app := b.(interface{ Append(T) })
	for j, k := range idx {
		v, ok := nv[k], nok[k]
		if old[j] {
			v, ok = ov[k], ook[k]
		}
		if ok {
			app.Append(v)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaDistinct is COUNT(DISTINCT x): a set of values per group.
type gaDistinct struct {
	sets     column.Chunked[map[string]struct{}]
	old, new []int64
}

func (a *gaDistinct) Type() arrow.DataType { return arrow.PrimitiveTypes.Int64 }
func (a *gaDistinct) Grow(n int) {
	a.sets.Grow(n)
}

func (a *gaDistinct) Step(gids []int32, arr arrow.Array, rows []int32, changed []bool) {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		set := *a.sets.At(id)
		a.old[k] = int64(len(set))
		if arr.IsValid(int(r)) {
			if set == nil {
				set = map[string]struct{}{}
				*a.sets.At(id) = set
			}
			if addDistinct(set, arr, int(r)) {
				changed[k] = true
			}
		}
		a.new[k] = int64(len(set))
	}
}

func (a *gaDistinct) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for j, k := range idx {
		if old[j] {
			b.Append(a.old[k])
		} else {
			b.Append(a.new[k])
		}
	}
	return b.NewArray()
}
