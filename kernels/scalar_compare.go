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
	scEq scCmpOp = iota
	scNe
	scLt
	scLte
	scGt
	scGte
)

var scCmpNames = [...]string{"equal", "not_equal", "lt", "lte", "gt", "gte"}

// mirror is the operator with its operands swapped: a < b  ⇔  b > a.
func (op scCmpOp) mirror() scCmpOp {
	switch op {
	case scLt:
		return scGt
	case scLte:
		return scGte
	case scGt:
		return scLt
	case scGte:
		return scLte
	}
	return op
}

func bindCompare(name string, cmp scCmpOp) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		l, r, op, fname := args[0], args[1], cmp, name
		lk, rk := scKindOf(l.Type()), scKindOf(r.Type())
		if lk == skDecimal || rk == skDecimal {
			return bindDecimalCompare(name, cmp, args)
		}
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
func scLitFits(l *exprLit, k scKind) bool {
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
	rLit *exprLit
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
	n8 := n &^ 7
	scCmpBytesVV(op, out[:n8/8], a[:n8], b[:n8])
	if n8 < n {
		var last byte
		for i := n8; i < n; i++ {
			last |= byte(scBit(scCmp1(op, a[i], b[i]))) << (i - n8)
		}
		out[n8/8] = last
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
	n8 := n &^ 7
	scCmpBytesVS(op, out[:n8/8], a[:n8], s)
	if n8 < n {
		var last byte
		for i := n8; i < n; i++ {
			last |= byte(scBit(scCmp1(op, a[i], s))) << (i - n8)
		}
		out[n8/8] = last
	}
}

func scCmp1[T scNum](op scCmpOp, x, y T) bool {
	switch op {
	case scEq:
		return x == y
	case scNe:
		return x != y
	case scLt:
		return x < y
	case scLte:
		return x <= y
	case scGt:
		return x > y
	}
	return x >= y
}

// scPack8 packs eight results into one bitmap byte, first in bit 0.
func scPack8(b0, b1, b2, b3, b4, b5, b6, b7 bool) byte {
	return byte(scBit(b0) | scBit(b1)<<1 | scBit(b2)<<2 | scBit(b3)<<3 |
		scBit(b4)<<4 | scBit(b5)<<5 | scBit(b6)<<6 | scBit(b7)<<7)
}

// scCmpBytesVV compares 8 rows per output byte (len(a) = 8*len(out)). The
// switch is once per call; the eight comparisons of a byte are
// independent and branch-free, which runs about twice as fast as shifting
// one bit at a time into a word.
func scCmpBytesVV[T scNum](op scCmpOp, out []byte, a, b []T) {
	a, b = a[:len(out)*8], b[:len(out)*8]
	switch op {
	case scEq:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] == y[0], x[1] == y[1], x[2] == y[2], x[3] == y[3], x[4] == y[4], x[5] == y[5], x[6] == y[6], x[7] == y[7])
		}
	case scNe:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] != y[0], x[1] != y[1], x[2] != y[2], x[3] != y[3], x[4] != y[4], x[5] != y[5], x[6] != y[6], x[7] != y[7])
		}
	case scLt:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] < y[0], x[1] < y[1], x[2] < y[2], x[3] < y[3], x[4] < y[4], x[5] < y[5], x[6] < y[6], x[7] < y[7])
		}
	case scLte:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] <= y[0], x[1] <= y[1], x[2] <= y[2], x[3] <= y[3], x[4] <= y[4], x[5] <= y[5], x[6] <= y[6], x[7] <= y[7])
		}
	case scGt:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] > y[0], x[1] > y[1], x[2] > y[2], x[3] > y[3], x[4] > y[4], x[5] > y[5], x[6] > y[6], x[7] > y[7])
		}
	case scGte:
		for k := range out {
			x, y := a[k*8:k*8+8:k*8+8], b[k*8:k*8+8:k*8+8]
			out[k] = scPack8(x[0] >= y[0], x[1] >= y[1], x[2] >= y[2], x[3] >= y[3], x[4] >= y[4], x[5] >= y[5], x[6] >= y[6], x[7] >= y[7])
		}
	}
}

func scCmpBytesVS[T scNum](op scCmpOp, out []byte, a []T, s T) {
	a = a[:len(out)*8]
	switch op {
	case scEq:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] == s, x[1] == s, x[2] == s, x[3] == s, x[4] == s, x[5] == s, x[6] == s, x[7] == s)
		}
	case scNe:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] != s, x[1] != s, x[2] != s, x[3] != s, x[4] != s, x[5] != s, x[6] != s, x[7] != s)
		}
	case scLt:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] < s, x[1] < s, x[2] < s, x[3] < s, x[4] < s, x[5] < s, x[6] < s, x[7] < s)
		}
	case scLte:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] <= s, x[1] <= s, x[2] <= s, x[3] <= s, x[4] <= s, x[5] <= s, x[6] <= s, x[7] <= s)
		}
	case scGt:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] > s, x[1] > s, x[2] > s, x[3] > s, x[4] > s, x[5] > s, x[6] > s, x[7] > s)
		}
	case scGte:
		for k := range out {
			x := a[k*8 : k*8+8 : k*8+8]
			out[k] = scPack8(x[0] >= s, x[1] >= s, x[2] >= s, x[3] >= s, x[4] >= s, x[5] >= s, x[6] >= s, x[7] >= s)
		}
	}
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
		case scEq, scNe:
			for i := lo; i < hi; i++ {
				x, yi := ad[ao[i]:ao[i+1]], y(i)
				word |= scBit(len(x) == len(yi) && string(x) == string(yi)) << (uint(i-lo) & 63)
			}
			if e.op == scNe {
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
	case scEq:
		return string(x) == string(y)
	case scNe:
		return string(x) != string(y)
	}
	return scCmpResult(op, bytes.Compare(x, y))
}

func scCmpResult(op scCmpOp, c int) bool {
	switch op {
	case scEq:
		return c == 0
	case scNe:
		return c != 0
	case scLt:
		return c < 0
	case scLte:
		return c <= 0
	case scGt:
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
		case scEq:
			r = ^(x ^ y)
		case scNe:
			r = x ^ y
		case scLt:
			r = ^x & y
		case scLte:
			r = ^x | y
		case scGt:
			r = x &^ y
		case scGte:
			r = x | ^y
		}
		scStoreWord(out, w, r)
	}
}
