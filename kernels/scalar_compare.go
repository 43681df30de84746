package kernels

import (
	"bytes"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

type scCmpOp uint8

const (
	cmpEq scCmpOp = iota
	cmpNe
	cmpLt
	cmpLte
	cmpGt
	cmpGte
)

var scCmpNames = [...]string{"equal", "not_equal", "lt", "lte", "gt", "gte"}

// mirror is the operator with its operands swapped: a < b  ⇔  b > a.
func (op scCmpOp) mirror() scCmpOp {
	switch op {
	case cmpLt:
		return cmpGt
	case cmpLte:
		return cmpGte
	case cmpGt:
		return cmpLt
	case cmpGte:
		return cmpLte
	}
	return op
}

func bindCompare(name string, cmp scCmpOp) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		l, r, op, fname := args[0], args[1], cmp, name
		lk, rk := scKindOf(l.Type()), scKindOf(r.Type())
		k, ok := scCommonKind(lk, rk)
		if !ok || k == skNull {
			return nil, scSigError(name, args)
		}
		if scIsNullLiteral(l) || scIsNullLiteral(r) {
			return Literal(nil, arrow.FixedWidthTypes.Boolean)
		}
		// A numeric literal that the other operand's type holds exactly is
		// converted to that type instead of widening the column:
		// int_col > 5 compares INTs, not BIGINTs.
		if k.isNumeric() {
			if lit, ok := scIsLiteral(r); ok && lk.isNumeric() && scLitFits(lit, lk) {
				k = lk
			} else if lit, ok := scIsLiteral(l); ok && rk.isNumeric() && scLitFits(lit, rk) {
				k = rk
			}
		}
		t := scTypeFor(k, l, r)
		var err error
		if l, err = scCoerce(l, k, t); err != nil {
			return nil, err
		}
		if r, err = scCoerce(r, k, t); err != nil {
			return nil, err
		}
		if _, lLit := scIsLiteral(l); lLit {
			if _, rLit := scIsLiteral(r); !rLit {
				l, r, op = r, l, op.mirror()
				fname = scCmpNames[op]
			}
		}
		c := cmpNode{name: fname, op: op, l: l, r: r}
		if lit, ok := scIsLiteral(r); ok {
			c.rLit = lit
		}
		if _, ok := scIsLiteral(l); ok {
			c.rLit = nil // both literals: folded by Call
		}
		switch k {
		case skInt8:
			return newCmpNum[int8](c), nil
		case skInt16:
			return newCmpNum[int16](c), nil
		case skInt32:
			return newCmpNum[int32](c), nil
		case skInt64, skTimestamp:
			return newCmpNum[int64](c), nil
		case skFloat32:
			return newCmpNum[float32](c), nil
		case skFloat64:
			return newCmpNum[float64](c), nil
		case skString:
			e := &cmpStrExpr{cmpNode: c}
			if c.rLit != nil {
				e.s = []byte(c.rLit.s)
			}
			return e, nil
		case skBool:
			return &cmpBoolExpr{cmpNode: c}, nil
		}
		return nil, scSigError(name, args)
	}
}

// scLitFits reports whether literal l converts to kind k exactly.
func scLitFits(l *literal, k scKind) bool {
	switch {
	case l.null:
		return true
	case k.isInt():
		lo, hi := k.intRange()
		if l.kind.isFloat() {
			return l.f == math.Trunc(l.f) && l.f >= float64(lo) && l.f <= float64(hi) && l.f < 1<<63
		}
		return l.i >= lo && l.i <= hi
	case k == skFloat64:
		if l.kind.isFloat() {
			return true
		}
		return int64(float64(l.i)) == l.i && float64(l.i) < 1<<63
	case k == skFloat32:
		if l.kind.isFloat() {
			return float64(float32(l.f)) == l.f
		}
		f := float32(l.i)
		return float64(f) < 1<<63 && int64(f) == l.i
	}
	return false
}

// cmpNode is what every comparison kernel shares. After binding, a literal
// operand is always on the right (rLit).
type cmpNode struct {
	name string
	op   scCmpOp
	l, r Expr
	rLit *literal
}

func (c *cmpNode) Type() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (c *cmpNode) String() string       { return c.name + "(" + c.l.String() + ", " + c.r.String() + ")" }
func (c *cmpNode) exprMayFail() bool    { return exprMayFail(c.l) || exprMayFail(c.r) }

// operands evaluates the left operand and, unless it is a literal, the right.
func (c *cmpNode) operands(b *vector.Batch, mem memory.Allocator) (la, ra arrow.Array, err error) {
	if la, err = c.l.Eval(b, mem); err != nil {
		return nil, nil, err
	}
	if c.rLit == nil {
		if ra, err = c.r.Eval(b, mem); err != nil {
			la.Release()
			return nil, nil, err
		}
	}
	return la, ra, nil
}

// eval runs a comparison kernel: words computes the bit-packed result into
// out (whole 64-bit words, every row when sel is nil, else only the rows in
// sel with the other bits zero).
func (c *cmpNode) eval(b *vector.Batch, mem memory.Allocator, words func(out []byte, la, ra arrow.Array, sel []int32)) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, c.Type()), nil
	}
	la, ra, err := c.operands(b, mem)
	if err != nil {
		return nil, err
	}
	defer la.Release()
	if ra != nil {
		defer ra.Release()
	}
	valid, nulls := scValidity2(mem, n, la, ra)
	buf, out := scAllocBitmap(mem, n)
	sel := b.Sel
	if !scSparse(sel, n) {
		sel = nil
	} else {
		clear(out)
	}
	words(out, la, ra, sel)
	return scMakeArray(c.Type(), n, valid, nulls, buf), nil
}

// ---------------------------------------------------------------------------
// Numbers and timestamps

type cmpNumExpr[T scNum] struct {
	cmpNode
	s T
}

func newCmpNum[T scNum](c cmpNode) *cmpNumExpr[T] {
	e := &cmpNumExpr[T]{cmpNode: c}
	if c.rLit != nil {
		e.s = scLitNum[T](c.rLit)
	}
	return e
}

func (e *cmpNumExpr[T]) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	return e.eval(b, mem, e.words)
}

func (e *cmpNumExpr[T]) words(out []byte, la, ra arrow.Array, sel []int32) {
	a := scValues[T](la)
	if ra == nil {
		scCmpVS(e.op, out, a, e.s, sel)
	} else {
		scCmpVV(e.op, out, a, scValues[T](ra), sel)
	}
}

func scCmpVV[T scNum](op scCmpOp, out []byte, a, b []T, sel []int32) {
	if sel != nil {
		for _, i := range sel {
			out[i>>3] |= byte(scBit(scCmp1(op, a[i], b[i]))) << (i & 7)
		}
		return
	}
	n := len(a)
	b = b[:n]
	for w := 0; w*64 < n; w++ {
		lo := w * 64
		hi := min(lo+64, n)
		scStoreWord(out, w, scCmpWordVV(op, a[lo:hi], b[lo:hi]))
	}
}

func scCmpVS[T scNum](op scCmpOp, out []byte, a []T, s T, sel []int32) {
	if sel != nil {
		for _, i := range sel {
			out[i>>3] |= byte(scBit(scCmp1(op, a[i], s))) << (i & 7)
		}
		return
	}
	n := len(a)
	for w := 0; w*64 < n; w++ {
		lo := w * 64
		hi := min(lo+64, n)
		scStoreWord(out, w, scCmpWordVS(op, a[lo:hi], s))
	}
}

func scCmp1[T scNum](op scCmpOp, x, y T) bool {
	switch op {
	case cmpEq:
		return x == y
	case cmpNe:
		return x != y
	case cmpLt:
		return x < y
	case cmpLte:
		return x <= y
	case cmpGt:
		return x > y
	}
	return x >= y
}

// scCmpWordVV compares up to 64 rows into one word; the switch is per word,
// the loops are branch-free.
func scCmpWordVV[T scNum](op scCmpOp, a, b []T) uint64 {
	var w uint64
	b = b[:len(a)]
	switch op {
	case cmpEq:
		for j := range a {
			w |= scBit(a[j] == b[j]) << (uint(j) & 63)
		}
	case cmpNe:
		for j := range a {
			w |= scBit(a[j] != b[j]) << (uint(j) & 63)
		}
	case cmpLt:
		for j := range a {
			w |= scBit(a[j] < b[j]) << (uint(j) & 63)
		}
	case cmpLte:
		for j := range a {
			w |= scBit(a[j] <= b[j]) << (uint(j) & 63)
		}
	case cmpGt:
		for j := range a {
			w |= scBit(a[j] > b[j]) << (uint(j) & 63)
		}
	case cmpGte:
		for j := range a {
			w |= scBit(a[j] >= b[j]) << (uint(j) & 63)
		}
	}
	return w
}

func scCmpWordVS[T scNum](op scCmpOp, a []T, s T) uint64 {
	var w uint64
	switch op {
	case cmpEq:
		for j := range a {
			w |= scBit(a[j] == s) << (uint(j) & 63)
		}
	case cmpNe:
		for j := range a {
			w |= scBit(a[j] != s) << (uint(j) & 63)
		}
	case cmpLt:
		for j := range a {
			w |= scBit(a[j] < s) << (uint(j) & 63)
		}
	case cmpLte:
		for j := range a {
			w |= scBit(a[j] <= s) << (uint(j) & 63)
		}
	case cmpGt:
		for j := range a {
			w |= scBit(a[j] > s) << (uint(j) & 63)
		}
	case cmpGte:
		for j := range a {
			w |= scBit(a[j] >= s) << (uint(j) & 63)
		}
	}
	return w
}

// ---------------------------------------------------------------------------
// Strings: byte-wise order (Go string comparison).

type cmpStrExpr struct {
	cmpNode
	s []byte // the literal operand
}

func (e *cmpStrExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	return e.eval(b, mem, e.words)
}

func (e *cmpStrExpr) words(out []byte, la, ra arrow.Array, sel []int32) {
	ao, ad := scStrings(la)
	var bo []int32
	var bd []byte
	if ra != nil {
		bo, bd = scStrings(ra)
	}
	// y returns the right operand of row i.
	y := func(i int) []byte {
		if bo == nil {
			return e.s
		}
		return bd[bo[i]:bo[i+1]]
	}
	if sel != nil {
		for _, i := range sel {
			out[i>>3] |= byte(scBit(scStrCmp1(e.op, ad[ao[i]:ao[i+1]], y(int(i))))) << (i & 7)
		}
		return
	}
	n := la.Len()
	for w := 0; w*64 < n; w++ {
		var word uint64
		lo := w * 64
		hi := min(lo+64, n)
		switch e.op {
		case cmpEq, cmpNe:
			for i := lo; i < hi; i++ {
				x, yi := ad[ao[i]:ao[i+1]], y(i)
				word |= scBit(len(x) == len(yi) && string(x) == string(yi)) << (uint(i-lo) & 63)
			}
			if e.op == cmpNe {
				word = ^word
			}
		default:
			for i := lo; i < hi; i++ {
				word |= scBit(scCmpResult(e.op, bytes.Compare(ad[ao[i]:ao[i+1]], y(i)))) << (uint(i-lo) & 63)
			}
		}
		scStoreWord(out, w, word)
	}
}

func scStrCmp1(op scCmpOp, x, y []byte) bool {
	switch op {
	case cmpEq:
		return string(x) == string(y)
	case cmpNe:
		return string(x) != string(y)
	}
	return scCmpResult(op, bytes.Compare(x, y))
}

func scCmpResult(op scCmpOp, c int) bool {
	switch op {
	case cmpEq:
		return c == 0
	case cmpNe:
		return c != 0
	case cmpLt:
		return c < 0
	case cmpLte:
		return c <= 0
	case cmpGt:
		return c > 0
	}
	return c >= 0
}

// ---------------------------------------------------------------------------
// Booleans (FALSE < TRUE): whole words at a time.

type cmpBoolExpr struct{ cmpNode }

func (e *cmpBoolExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	return e.eval(b, mem, e.words)
}

func (e *cmpBoolExpr) words(out []byte, la, ra arrow.Array, _ []int32) {
	n := la.Len()
	a := scBitmapBytes(la, 1)
	var bb []byte
	var s uint64
	if ra == nil {
		if e.rLit.b {
			s = ^uint64(0)
		}
	} else {
		bb = scBitmapBytes(ra, 1)
	}
	for w := 0; w < scWords(n); w++ {
		x := scLoadWord(a, w)
		y := s
		if bb != nil {
			y = scLoadWord(bb, w)
		}
		var r uint64
		switch e.op {
		case cmpEq:
			r = ^(x ^ y)
		case cmpNe:
			r = x ^ y
		case cmpLt:
			r = ^x & y
		case cmpLte:
			r = ^x | y
		case cmpGt:
			r = x &^ y
		case cmpGte:
			r = x | ^y
		}
		scStoreWord(out, w, r)
	}
}
