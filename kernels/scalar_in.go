package kernels

import (
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// InList is x IN (list...) with SQL's NULL rules: NULL if x is NULL; TRUE
// if x equals an item; otherwise NULL if an item is NULL, else FALSE. x and
// the items compare in their common type (as equal does). Literal items
// are tested together against a typed set built once (a hash set beyond 8
// items); other items add x = item terms ORed in (three-valued OR gives
// exactly the rules above).
func InList(x Expr, list []Expr) (Expr, error) {
	if x == nil || len(list) == 0 {
		return nil, fmt.Errorf("IN: empty list")
	}
	all := append([]Expr{x}, list...)
	t, ok := scCommonTypes(all)
	if !ok || scKindOf(t) == skNull {
		names := make([]string, len(list))
		for i, a := range list {
			names[i] = SQLTypeName(a.Type())
		}
		return nil, fmt.Errorf("IN: cannot compare %s with (%s)", SQLTypeName(x.Type()), strings.Join(names, ", "))
	}
	if scIsNullLiteral(x) {
		return Literal(nil, scBool)
	}
	var lits []*exprLit
	var others []Expr
	hasNull := false
	for _, it := range list {
		if l, ok := scIsLiteral(it); ok {
			if l.null {
				hasNull = true
			} else {
				lits = append(lits, l)
			}
			continue
		}
		others = append(others, it)
	}
	// Compare in x's own type when every literal converts to it exactly
	// (int_col IN (1, 2, 3) tests INTs), else in the common type.
	st := t
	if xk := scKindOf(x.Type()); xk.isNumeric() || xk == skDecimal {
		fits := true
		for _, l := range lits {
			fits = fits && scLitConvertsExactly(l, x.Type())
		}
		if fits {
			st = x.Type()
		}
	}
	var terms []Expr
	switch {
	case len(lits) > 0:
		xs, err := scCoerceTo(x, st)
		if err != nil {
			return nil, err
		}
		vals := make([]*exprLit, len(lits))
		for i, l := range lits {
			c, err := Cast(l, st)
			if err != nil {
				return nil, err
			}
			lc, ok := scIsLiteral(c)
			if !ok {
				return nil, fmt.Errorf("IN: item %s is not a valid %s", l, SQLTypeName(st))
			}
			vals[i] = lc
		}
		in, err := newInSet(xs, vals, hasNull)
		if err != nil {
			return nil, err
		}
		terms = append(terms, in)
	case hasNull:
		terms = append(terms, mustLit(nil, scBool))
	}
	for _, o := range others {
		eq, err := bindCompare("equal", scEq)([]Expr{x, o})
		if err != nil {
			return nil, err
		}
		terms = append(terms, eq)
	}
	if len(terms) == 1 {
		if _, ok := scIsLiteral(x); ok {
			if _, ok := terms[0].(*inSetExpr); ok {
				return exprFold(terms[0]), nil
			}
		}
		return terms[0], nil
	}
	return bindLogic("or", false)(terms)
}

// scLitConvertsExactly reports whether literal l is exactly a value of
// type t (numeric or DECIMAL).
func scLitConvertsExactly(l *exprLit, t arrow.DataType) bool {
	k := scKindOf(t)
	lk := scKindOf(l.typ)
	switch {
	case k == skDecimal && lk == skDecimal:
		_, ls := scDecPS(l.typ)
		p, s := scDecPS(t)
		v, ok := decRescale(l.d, ls, p, s)
		if !ok {
			return false
		}
		back, _ := decRescale(v, s, scDecMaxPrecision, ls)
		return back == l.d
	case k == skDecimal && lk.isInt():
		p, s := scDecPS(t)
		_, ok := decRescale(decFromI64(l.i), 0, p, s)
		return ok
	case k.isNumeric() && lk.isNumeric():
		return scLitFits(l, k)
	}
	return false
}

// inSetExpr is x IN (constants) over x's evaluated column.
type inSetExpr struct {
	x       Expr
	vals    []*exprLit
	hasNull bool
	// lookup sets the bit of every row in rows whose value is in the set.
	lookup func(a arrow.Array, rows []int32, out []byte)
}

func newInSet(x Expr, vals []*exprLit, hasNull bool) (*inSetExpr, error) {
	e := &inSetExpr{x: x, vals: vals, hasNull: hasNull}
	switch scKindOf(x.Type()) {
	case skInt8:
		e.lookup = scInFixed[int8](vals)
	case skInt16:
		e.lookup = scInFixed[int16](vals)
	case skInt32:
		e.lookup = scInFixed[int32](vals)
	case skInt64, skTimestamp:
		e.lookup = scInFixed[int64](vals)
	case skFloat32:
		e.lookup = scInFixed[float32](vals)
	case skFloat64:
		e.lookup = scInFixed[float64](vals)
	case skDecimal:
		e.lookup = scInDecimal(vals)
	case skString:
		e.lookup = scInString(vals)
	case skBool:
		e.lookup = scInBool(vals)
	default:
		return nil, fmt.Errorf("IN: %s is not supported", SQLTypeName(x.Type()))
	}
	return e, nil
}

func (e *inSetExpr) Type() arrow.DataType { return scBool }
func (e *inSetExpr) exprMayFail() bool    { return exprMayFail(e.x) }

func (e *inSetExpr) String() string {
	s := make([]string, 0, len(e.vals)+1)
	for _, v := range e.vals {
		s = append(s, v.String())
	}
	if e.hasNull {
		s = append(s, "NULL")
	}
	return "in(" + e.x.String() + ", " + strings.Join(s, ", ") + ")"
}

func (e *inSetExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, scBool), nil
	}
	a, err := e.x.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if a.DataType().ID() == arrow.NULL {
		return array.MakeArrayOfNull(mem, scBool, n), nil
	}
	buf, out := scAllocBitmap(mem, n)
	clear(out)
	// Lookups cannot fail: visit every row unless the selection is sparse.
	sel := b.Sel
	if !scSparse(sel, n) {
		sel = nil
	}
	rows := sel
	if rows == nil {
		rows = scIota(n)
	}
	e.lookup(a, rows, out)
	if !e.hasNull {
		valid, nulls := scShareValidity(mem, a)
		return scMakeArray(scBool, n, valid, nulls, buf), nil
	}
	// Not found with a NULL in the list: NULL.
	vbuf, vbits := scAllocBitmap(mem, n)
	var av []byte
	if a.NullN() > 0 {
		av = scBitmapBytes(a, 0)
	}
	nulls := 0
	for w := range scWords(n) {
		v := scLoadWord(out, w)
		if av != nil {
			v &= scLoadWord(av, w)
		}
		if rem := n - w*64; rem < 64 {
			v &= 1<<uint(rem) - 1
			nulls += rem - bits.OnesCount64(v)
		} else {
			nulls += 64 - bits.OnesCount64(v)
		}
		scStoreWord(vbits, w, v)
	}
	return scMakeArray(scBool, n, vbuf, nulls, buf), nil
}

// scInFixed tests numbers: a scan of up to 8 values, else an open-addressing
// hash set of their bit patterns.
func scInFixed[T scNum](vals []*exprLit) func(a arrow.Array, rows []int32, out []byte) {
	var set []T
	for _, l := range vals {
		v := scLitFixed[T](l)
		if v != v { // NaN equals nothing
			continue
		}
		dup := false
		for _, s := range set {
			dup = dup || s == v
		}
		if !dup {
			set = append(set, v)
		}
	}
	if len(set) <= 8 {
		return func(a arrow.Array, rows []int32, out []byte) {
			x := scValues[T](a)
			for _, i := range rows {
				v, hit := x[i], false
				for _, s := range set {
					hit = hit || v == s
				}
				out[i>>3] |= byte(scBit(hit)) << (i & 7)
			}
		}
	}
	keys := make([]uint64, len(set))
	for i, v := range set {
		keys[i] = scKey(v)
	}
	h := newScU64Set(keys)
	return func(a arrow.Array, rows []int32, out []byte) {
		x := scValues[T](a)
		for _, i := range rows {
			v := x[i]
			out[i>>3] |= byte(scBit(v == v && h.has(scKey(v)))) << (i & 7)
		}
	}
}

// scKey is a number's bit pattern for hashing (-0 as 0; integers
// sign-extended).
func scKey[T scNum](v T) uint64 {
	switch x := any(v).(type) {
	case float64:
		if x == 0 {
			return 0
		}
		return math.Float64bits(x)
	case float32:
		if x == 0 {
			return 0
		}
		return uint64(math.Float32bits(x))
	}
	return uint64(int64(v))
}

// scU64Set is an open-addressing set of uint64 keys with linear probing;
// empty slots hold a key known to be absent.
type scU64Set struct {
	slots []uint64
	mask  uint64
	shift uint
	empty uint64
}

func newScU64Set(keys []uint64) *scU64Set {
	size := 16
	for size < 4*len(keys) {
		size *= 2
	}
	s := &scU64Set{slots: make([]uint64, size), mask: uint64(size - 1), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	in := func(k uint64) bool {
		for _, x := range keys {
			if x == k {
				return true
			}
		}
		return false
	}
	for in(s.empty) {
		s.empty++
	}
	for i := range s.slots {
		s.slots[i] = s.empty
	}
	for _, k := range keys {
		i := (k * 0x9E3779B97F4A7C15) >> s.shift
		for s.slots[i] != s.empty && s.slots[i] != k {
			i = (i + 1) & s.mask
		}
		s.slots[i] = k
	}
	return s
}

func (s *scU64Set) has(k uint64) bool {
	if k == s.empty {
		return false
	}
	i := (k * 0x9E3779B97F4A7C15) >> s.shift
	for {
		v := s.slots[i]
		if v == k {
			return true
		}
		if v == s.empty {
			return false
		}
		i = (i + 1) & s.mask
	}
}

func scInDecimal(vals []*exprLit) func(a arrow.Array, rows []int32, out []byte) {
	set := map[scDec]struct{}{}
	var list []scDec
	for _, l := range vals {
		if _, ok := set[l.d]; !ok {
			set[l.d] = struct{}{}
			list = append(list, l.d)
		}
	}
	return func(a arrow.Array, rows []int32, out []byte) {
		x := scValues[scDec](a)
		for _, i := range rows {
			v := x[i]
			var hit bool
			if len(list) <= 8 {
				for _, s := range list {
					hit = hit || v == s
				}
			} else {
				_, hit = set[v]
			}
			out[i>>3] |= byte(scBit(hit)) << (i & 7)
		}
	}
}

func scInString(vals []*exprLit) func(a arrow.Array, rows []int32, out []byte) {
	set := map[string]struct{}{}
	var list []string
	for _, l := range vals {
		if _, ok := set[l.s]; !ok {
			set[l.s] = struct{}{}
			list = append(list, l.s)
		}
	}
	return func(a arrow.Array, rows []int32, out []byte) {
		offs, data := scStrings(a)
		for _, i := range rows {
			v := data[offs[i]:offs[i+1]]
			var hit bool
			if len(list) <= 8 {
				for _, s := range list {
					hit = hit || string(v) == s
				}
			} else {
				_, hit = set[string(v)]
			}
			out[i>>3] |= byte(scBit(hit)) << (i & 7)
		}
	}
}

func scInBool(vals []*exprLit) func(a arrow.Array, rows []int32, out []byte) {
	var t, f bool
	for _, l := range vals {
		t, f = t || l.b, f || !l.b
	}
	return func(a arrow.Array, rows []int32, out []byte) {
		x := scBitmapBytes(a, 1)
		for _, i := range rows {
			v := bitutil.BitIsSet(x, int(i))
			out[i>>3] |= byte(scBit(v && t || !v && f)) << (i & 7)
		}
	}
}
