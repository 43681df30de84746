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

// Accumulators of the retracting group aggregate (groupagg.Agg over a
// changelog): COUNT, SUM and AVG retract arithmetically (integer and
// decimal sums stay exact; a float sum subtracts with the same compensated
// two-sum as it adds, see gaFloatSum); MIN and MAX keep each group's values
// as a multiset (value → count), so retracting the extreme falls back to
// the next value; COUNT(DISTINCT x) keeps value → count. A retraction a
// group cannot hold fails through Changes.Fail.

// Changes describes the entries of one step over a changelog: neg[k]
// when entry k retracts (a -U or -D row), gone[k] when it retracts its
// group's last row (the accumulators return the group to its initial
// state after the entry). fail reports entry k retracting what, which the
// group does not hold.
type Changes struct {
	Neg, Gone []bool
	Fail      func(k int, what string) error
}

// RetractAcc is an accumulator over a changelog.
type RetractAcc interface {
	Acc
	// StepChanges is InsertAcc.step over a changelog: entries with
	// ch.neg set retract their value. It fails (ch.fail) on a retraction
	// the group cannot hold.
	StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error
}

var (
	_ RetractAcc = (*gaCount)(nil)
	_ RetractAcc = (*gaIntSum[int64])(nil)
	_ RetractAcc = (*gaFloatSum[float64])(nil)
	_ RetractAcc = (*gaDecSum)(nil)
	_ RetractAcc = (*gaMulti[int64])(nil)
	_ RetractAcc = (*gaDistinctCounts)(nil)
)

// NewRetractAcc makes the changelog accumulator of f over in: the same
// functions, types and result types as NewInsertAcc.
func NewRetractAcc(f Func, in arrow.DataType) (RetractAcc, error) {
	switch f {
	case CountDistinct:
		return &gaDistinctCounts{}, nil
	case Min, Max:
		max := f == Max
		switch in.ID() {
		case arrow.INT8:
			return newGAMulti[int8](in, max), nil
		case arrow.INT16:
			return newGAMulti[int16](in, max), nil
		case arrow.INT32:
			return newGAMulti[int32](in, max), nil
		case arrow.INT64:
			return newGAMulti[int64](in, max), nil
		case arrow.FLOAT32:
			return newGAMultiFloat[float32](in, max), nil
		case arrow.FLOAT64:
			return newGAMultiFloat[float64](in, max), nil
		case arrow.DATE32:
			return newGAMulti[arrow.Date32](in, max), nil
		case arrow.DATE64:
			return newGAMulti[arrow.Date64](in, max), nil
		case arrow.TIMESTAMP:
			return newGAMulti[arrow.Timestamp](in, max), nil
		case arrow.STRING:
			m := newGAMulti[string](in, max)
			m.clone = strings.Clone // a value aliases the batch's buffer
			return m, nil
		case arrow.DECIMAL128:
			less := decimal128.Num.Less
			return &gaMulti[decimal128.Num]{t: in, max: max, less: less, find: msFindBy(less), load: gaValues[decimal128.Num], store: gaAppender[decimal128.Num]}, nil
		case arrow.BOOL:
			m := newGAMulti[int8](in, max)
			m.load, m.store = gaBoolLoad, gaBoolStore
			return m, nil
		}
	}
	acc, err := NewInsertAcc(f, in)
	if err != nil {
		return nil, err
	}
	switch a := acc.(type) {
	case *gaCount:
		return a, nil
	case interface {
		RetractAcc
		enableRetract()
	}:
		a.enableRetract()
		return a, nil
	}
	return nil, fmt.Errorf("aggregate %v of %v over a changelog is not supported", f, in)
}

// enableRetract makes a sum's state count its values (a SUM is NULL again
// when all are retracted).
func (a *gaIntSum[T]) enableRetract()   { a.retract = true }
func (a *gaFloatSum[T]) enableRetract() { a.retract = true }
func (a *gaDecSum) enableRetract()      { a.retract = true }

func (a *gaCount) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		a.old[k] = *a.n.At(id)
		if a.star || arr.IsValid(int(r)) {
			switch {
			case !ch.Neg[k]:
				(*a.n.At(id))++
			case *a.n.At(id) == 0:
				return ch.Fail(k, "a non-NULL value from a COUNT of 0")
			default:
				(*a.n.At(id))--
			}
			changed[k] = true
		}
		a.new[k] = *a.n.At(id)
		if ch.Gone[k] {
			*a.n.At(id) = 0
		}
	}
	return nil
}

func (a *gaIntSum[T]) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			v := int64(vals[r])
			if !ch.Neg[k] {
				var carry uint64
				*a.lo.At(id), carry = bits.Add64(*a.lo.At(id), uint64(v), 0)
				*a.hi.At(id) += int64(carry) + v>>63
				(*a.n.At(id))++
			} else {
				if *a.n.At(id) == 0 {
					return ch.Fail(k, "a value from a SUM/AVG of no values")
				}
				var borrow uint64
				*a.lo.At(id), borrow = bits.Sub64(*a.lo.At(id), uint64(v), 0)
				*a.hi.At(id) -= int64(borrow) + v>>63
				(*a.n.At(id))--
			}
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
		if ch.Gone[k] {
			*a.n.At(id), *a.lo.At(id), *a.hi.At(id) = 0, 0, 0
		}
	}
	return nil
}

// gaNonFinite counts the NaN, +Inf and -Inf values (in this order) of a
// float sum over a changelog apart from its finite sum, so that retracting
// them gives back the finite sum (Inf - Inf would be NaN).
type gaNonFinite [3]int64

// value is what the non-finite values make of any finite sum (ok false
// when there are none).
func (f gaNonFinite) value() (float64, bool) {
	switch {
	case f[0] > 0 || (f[1] > 0 && f[2] > 0):
		return math.NaN(), true
	case f[1] > 0:
		return math.Inf(1), true
	case f[2] > 0:
		return math.Inf(-1), true
	}
	return 0, false
}

// add counts x (non-finite) d times more.
func (f *gaNonFinite) add(x float64, d int64) {
	switch {
	case x != x:
		f[0] += d
	case x > 0:
		f[1] += d
	default:
		f[2] += d
	}
}

// StepChanges folds a float column over a changelog. A retracted finite x
// is added as -x with the same two-sum as an accumulated one, so s + c
// stays the exact sum of the values held plus the rounding of c itself:
// the result does not depend on the order in which rows are accumulated
// and retracted except under heavy cancellation (as for inserts only).
// Non-finite values are counted apart (gaNonFinite), and a group whose
// values are all retracted starts again from an exact zero. A sum of
// finite values that overflows stays infinite until the group is emptied.
func (a *gaFloatSum[T]) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	a.img.begin(len(rows))
	vals := arrow.GetValues[T](arr.Data(), 1)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if arr.IsValid(int(r)) {
			x, d := float64(vals[r]), int64(1)
			if ch.Neg[k] {
				if *a.n.At(id) == 0 {
					return ch.Fail(k, "a value from a SUM/AVG of no values")
				}
				d = -1
			}
			if x-x != 0 { // ±Inf or NaN
				a.nf.At(id).add(x, d)
			} else {
				x *= float64(d)
				s := *a.s.At(id)
				t := s + x
				bb := t - s
				*a.c.At(id) += (s - (t - bb)) + (x - bb)
				*a.s.At(id) = t
			}
			if *a.n.At(id) += d; *a.n.At(id) == 0 {
				*a.s.At(id), *a.c.At(id), *a.nf.At(id) = 0, 0, gaNonFinite{}
			}
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
		if ch.Gone[k] {
			*a.n.At(id), *a.s.At(id), *a.c.At(id), *a.nf.At(id) = 0, 0, 0, gaNonFinite{}
		}
	}
	return nil
}

func (a *gaDecSum) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	a.img.begin(len(rows))
	d := arr.(*array.Decimal128)
	for k, r := range rows {
		id := gids[k]
		o, ook := a.out(id)
		if d.IsValid(int(r)) {
			if !ch.Neg[k] {
				*a.sum.At(id) = a.sum.At(id).Add(d.Value(int(r)))
				(*a.n.At(id))++
			} else {
				if *a.n.At(id) == 0 {
					return ch.Fail(k, "a value from a SUM/AVG of no values")
				}
				*a.sum.At(id) = a.sum.At(id).Sub(d.Value(int(r)))
				(*a.n.At(id))--
			}
		}
		nw, nok := a.out(id)
		a.img.put(k, o, ook, nw, nok, changed)
		if ch.Gone[k] {
			*a.n.At(id), *a.sum.At(id) = 0, decimal128.Num{}
		}
	}
	return nil
}

// gaMulti is MIN or MAX over a changelog: each group's values as a
// multiset ordered by less (found by find). Floats are kept as order keys
// (gaFloatKey), which order them totally, so that which of two
// equal-comparing values (-0 and 0) is the result does not depend on row
// order.
type gaMulti[T any] struct {
	t     arrow.DataType
	max   bool
	less  func(a, b T) bool
	find  msFind[T]
	load  func(arr arrow.Array) func(int) T
	store func(b array.Builder) func(T)
	clone func(T) T // nil: values are kept as they are
	sets  column.Chunked[multiset[T]]

	old, new     []T
	oldOK, newOK []bool
}

func newGAMulti[T interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint64 | ~string
}](t arrow.DataType, max bool) *gaMulti[T] {
	return &gaMulti[T]{t: t, max: max, less: cmp.Less[T], find: msFindOrdered[T], load: gaValues[T], store: gaAppender[T]}
}

// newGAMultiFloat is MIN or MAX of a FLOAT or DOUBLE column, kept as
// order keys.
func newGAMultiFloat[F float32 | float64](t arrow.DataType, max bool) *gaMulti[uint64] {
	m := newGAMulti[uint64](t, max)
	m.load = func(arr arrow.Array) func(int) uint64 {
		vals := arrow.GetValues[F](arr.Data(), 1)
		return func(i int) uint64 { return gaFloatKey(float64(vals[i])) }
	}
	m.store = func(b array.Builder) func(uint64) {
		app := b.(interface{ Append(F) }).Append
		return func(k uint64) { app(F(gaKeyFloat(k))) }
	}
	return m
}

// gaFloatKey maps a float to a key whose unsigned order is the order of
// MIN/MAX over a changelog: numbers as usual, -0 below 0, every NaN one
// value above +Inf (as the window aggregate's NaN above every number).
// gaKeyFloat maps it back (NaN as the canonical NaN).
func gaFloatKey(f float64) uint64 {
	if f != f {
		f = math.NaN()
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func gaKeyFloat(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// gaAppender returns the typed Append of a builder of T.
func gaAppender[T any](b array.Builder) func(T) { return b.(interface{ Append(T) }).Append }

// BOOLEAN MIN/MAX keep false as 0 and true as 1.
func gaBoolLoad(arr arrow.Array) func(int) int8 {
	ba := arr.(*array.Boolean)
	return func(i int) int8 {
		if ba.Value(i) {
			return 1
		}
		return 0
	}
}

func gaBoolStore(b array.Builder) func(int8) {
	bb := b.(*array.BooleanBuilder)
	return func(v int8) { bb.Append(v == 1) }
}

func (a *gaMulti[T]) Type() arrow.DataType { return a.t }

func (a *gaMulti[T]) Grow(n int) {
	a.sets.Grow(n)
}

// extreme is the group's result (ok false: no value, NULL).
func (a *gaMulti[T]) extreme(id int32) (v T, ok bool) {
	m := a.sets.At(id)
	switch {
	case m.empty():
		return v, false
	case a.max:
		return m.last(), true
	}
	return m.first(), true
}

// mark sets changed[k] when entry k's images differ (in the order: equal
// values are one multiset entry, hence the same value).
func (a *gaMulti[T]) mark(k int, changed []bool) {
	if a.oldOK[k] != a.newOK[k] || (a.newOK[k] && (a.less(a.old[k], a.new[k]) || a.less(a.new[k], a.old[k]))) {
		changed[k] = true
	}
}

func (a *gaMulti[T]) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	a.oldOK, a.newOK = column.Grow(a.oldOK, n), column.Grow(a.newOK, n)
	get := a.load(arr)
	for k, r := range rows {
		id := gids[k]
		a.old[k], a.oldOK[k] = a.extreme(id)
		if arr.IsValid(int(r)) {
			if !ch.Neg[k] {
				a.sets.At(id).add(get(int(r)), a.find, a.clone)
			} else if held, _ := a.sets.At(id).remove(get(int(r)), a.find); !held {
				return ch.Fail(k, fmt.Sprintf("%s value %s, which the group does not hold", a.what(), arr.ValueStr(int(r))))
			}
		}
		a.new[k], a.newOK[k] = a.extreme(id)
		a.mark(k, changed)
		if ch.Gone[k] {
			*a.sets.At(id) = multiset[T]{}
		}
	}
	return nil
}

func (a *gaMulti[T]) what() string {
	if a.max {
		return "a MAX"
	}
	return "a MIN"
}

func (a *gaMulti[T]) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
	b := array.NewBuilder(mem, a.t)
	defer b.Release()
	b.Reserve(len(idx))
	app := a.store(b)
	for j, k := range idx {
		v, ok := a.new[k], a.newOK[k]
		if old[j] {
			v, ok = a.old[k], a.oldOK[k]
		}
		if ok {
			app(v)
		} else {
			b.AppendNull()
		}
	}
	return b.NewArray()
}

// gaDistinctCounts is COUNT(DISTINCT x) over a changelog: per group, each
// value's text (as distinctKey) and how many rows hold it.
type gaDistinctCounts struct {
	sets     column.Chunked[map[string]int64]
	old, new []int64
}

func (a *gaDistinctCounts) Type() arrow.DataType { return arrow.PrimitiveTypes.Int64 }

func (a *gaDistinctCounts) Grow(n int) {
	a.sets.Grow(n)
}

func (a *gaDistinctCounts) StepChanges(gids []int32, arr arrow.Array, rows []int32, ch *Changes, changed []bool) error {
	n := len(rows)
	a.old, a.new = column.Grow(a.old, n), column.Grow(a.new, n)
	for k, r := range rows {
		id := gids[k]
		set := *a.sets.At(id)
		a.old[k] = int64(len(set))
		if arr.IsValid(int(r)) {
			v := distinctKey(arr, int(r))
			if _, alias := arr.(*array.String); alias {
				// Assigning to a string key stores the key again (Go
				// maps update string keys), so even a count update
				// must not keep the batch's buffer.
				v = strings.Clone(v)
			}
			switch c, ok := set[v]; {
			case !ch.Neg[k] && ok:
				set[v] = c + 1
			case !ch.Neg[k]:
				if set == nil {
					set = map[string]int64{}
					*a.sets.At(id) = set
				}
				set[v] = 1
				changed[k] = true
			case !ok:
				return ch.Fail(k, fmt.Sprintf("a COUNT(DISTINCT) value %s, which the group does not hold", arr.ValueStr(int(r))))
			case c > 1:
				set[v] = c - 1
			default:
				delete(set, v)
				changed[k] = true
			}
		}
		a.new[k] = int64(len(set))
		if ch.Gone[k] {
			*a.sets.At(id) = nil
		}
	}
	return nil
}

func (a *gaDistinctCounts) Build(mem memory.Allocator, idx []int32, old []bool) arrow.Array {
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
