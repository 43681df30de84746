package kernels

import (
	"fmt"
	"math/big"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// DECIMAL arithmetic, negation and comparison.

// bindDecimalArith types a + - * / % with a DECIMAL operand (Flink): with
// FLOAT or DOUBLE the decimal converts to DOUBLE; an integer converts to
// DECIMAL(3|5|10|19, 0) exactly; the result type follows
// scDecResultType.
func bindDecimalArith(name string, op scArithOp, args []Expr) (Expr, error) {
	t, ok := scCommonType(args[0].Type(), args[1].Type())
	if !ok || !(scKindOf(t) == skDecimal || scKindOf(t).isFloat()) {
		return nil, scSigError(name, args)
	}
	if scKindOf(t).isFloat() {
		return bindArithKind(name, op, skFloat64, args)
	}
	ops := make([]Expr, 2)
	for k, a := range args {
		switch ak := scKindOf(a.Type()); {
		case ak.isInt():
			c, err := Cast(a, scDecOfInt(ak))
			if err != nil {
				return nil, err
			}
			ops[k] = c
		case ak == skNull:
			ops[k] = nil
		default:
			ops[k] = a
		}
	}
	for k := range ops {
		if ops[k] == nil { // untyped NULL: the other operand's type
			ops[k] = ops[1-k]
		}
	}
	p1, s1 := scDecPS(ops[0].Type())
	p2, s2 := scDecPS(ops[1].Type())
	rt := scDecResultType(op, p1, s1, p2, s2)
	if scIsNullLiteral(args[0]) || scIsNullLiteral(args[1]) {
		return Literal(nil, rt)
	}
	return newDecArith(name, op, rt, ops[0], ops[1]), nil
}

// decArithExpr is a + - * / % over decimals of any scales.
type decArithExpr struct {
	name       string
	op         scArithOp
	typ        arrow.DataType
	l, r       Expr
	ls, rs     scDec
	lLit, rLit bool
	s1, s2     int
	p, s       int // result
	k1, k2     int // add, sub, mod: scale-ups to the common scale
	// safe: the result always fits and needs no rounding, so the kernel
	// is plain 128-bit integer arithmetic over every row.
	safe bool
}

func newDecArith(name string, op scArithOp, rt *arrow.Decimal128Type, l, r Expr) *decArithExpr {
	p1, s1 := scDecPS(l.Type())
	p2, s2 := scDecPS(r.Type())
	e := &decArithExpr{name: name, op: op, typ: rt, l: l, r: r, s1: s1, s2: s2, p: int(rt.Precision), s: int(rt.Scale)}
	if lit, ok := scIsLiteral(l); ok {
		e.ls, e.lLit = lit.d, true
	}
	if lit, ok := scIsLiteral(r); ok {
		e.rs, e.rLit = lit.d, true
	}
	if e.lLit && e.rLit {
		e.lLit = false // folding failed: evaluate so the error surfaces for live rows
	}
	cs := max(s1, s2)
	e.k1, e.k2 = cs-s1, cs-s2
	switch op {
	case scAdd, scSub:
		e.safe = max(p1-s1, p2-s2)+cs+1 <= scDecMaxPrecision
	case scMul:
		e.safe = p1+p2+1 <= scDecMaxPrecision
	}
	return e
}

func (e *decArithExpr) Type() arrow.DataType { return e.typ }
func (e *decArithExpr) String() string {
	return e.name + "(" + e.l.String() + ", " + e.r.String() + ")"
}

func (e *decArithExpr) exprMayFail() bool {
	return !e.safe || exprMayFail(e.l) || exprMayFail(e.r)
}

func (e *decArithExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.typ), nil
	}
	var la, ra arrow.Array
	var err error
	if !e.lLit {
		if la, err = e.l.Eval(b, mem); err != nil {
			return nil, err
		}
		defer la.Release()
	}
	if !e.rLit {
		if ra, err = e.r.Eval(b, mem); err != nil {
			return nil, err
		}
		defer ra.Release()
	}
	x := scNumArg[scDec]{lit: e.ls, isLit: e.lLit}
	if la != nil {
		x.v = scValues[scDec](la)
	}
	y := scNumArg[scDec]{lit: e.rs, isLit: e.rLit}
	if ra != nil {
		y.v = scValues[scDec](ra)
	}
	valid, nulls := scValidity2(mem, n, la, ra)
	buf, o := scAllocValues[scDec](mem, n)
	if e.safe {
		sel := b.Sel
		if !scSparse(sel, n) {
			sel = nil
		}
		e.safeLoop(o, x, y, sel)
		return scMakeArray(e.typ, n, valid, nulls, buf), nil
	}
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	for _, i := range scLiveValid(n, b.Sel, vb) {
		r, st := e.row(x.at(int(i)), y.at(int(i)))
		if st != decOK {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return nil, e.rowErr(st, x.at(int(i)), y.at(int(i)))
		}
		o[i] = r
	}
	return scMakeArray(e.typ, n, valid, nulls, buf), nil
}

// safeLoop: + - * that cannot overflow. sel nil: every row.
func (e *decArithExpr) safeLoop(o []scDec, x, y scNumArg[scDec], sel []int32) {
	if e.op != scMul && e.k1 == 0 && e.k2 == 0 && !x.isLit && !y.isLit && sel == nil {
		a, b := x.v[:len(o)], y.v[:len(o)]
		if e.op == scAdd {
			for i := range o {
				o[i] = decAdd(a[i], b[i])
			}
		} else {
			for i := range o {
				o[i] = decSub(a[i], b[i])
			}
		}
		return
	}
	m1, m2 := scPow10Dec[e.k1], scPow10Dec[e.k2]
	one := func(i int) {
		a, b := x.at(i), y.at(i)
		switch e.op {
		case scAdd:
			o[i] = decAdd(decMulLow(a, m1), decMulLow(b, m2))
		case scSub:
			o[i] = decSub(decMulLow(a, m1), decMulLow(b, m2))
		default:
			o[i] = decMulLow(a, b)
		}
	}
	if sel == nil {
		for i := range o {
			one(i)
		}
		return
	}
	for _, i := range sel {
		one(int(i))
	}
}

// decDivFast is round(a * 10^k / b) when a and b fit 64 bits and the
// scaled dividend fits 128: two hardware divisions instead of the general
// long division. ok false: take the general path.
func decDivFast(a, b u256, k int) (u256, bool) {
	if k < 0 || k >= len(scPow10) || a[1]|a[2]|a[3]|b[1]|b[2]|b[3] != 0 || scPow10[k][2] != 0 {
		return u256{}, false
	}
	p := scPow10[k]
	h0, l0 := bits.Mul64(a[0], p[0])
	h1, l1 := bits.Mul64(a[0], p[1])
	mid, c := bits.Add64(h0, l1, 0)
	if h1+c != 0 {
		return u256{}, false
	}
	d := b[0]
	q1, r1 := bits.Div64(0, mid, d)
	q0, r0 := bits.Div64(r1, l0, d)
	if r0 >= d-r0 { // 2*r0 >= d: round half up
		q0, c = bits.Add64(q0, 1, 0)
		q1 += c
	}
	return u256{q0, q1}, true
}

// decDivZero is the row status of a zero divisor.
const decDivZero = decOverflow + 1

// row computes one result exactly, rounding half up to the result scale.
func (e *decArithExpr) row(x, y scDec) (scDec, int) {
	a, an := x.mag()
	b, bn := y.mag()
	var m u256
	var neg bool
	switch e.op {
	case scAdd, scSub:
		if e.op == scSub {
			bn = !bn
		}
		a, _ = a.mulPow10(e.k1) // < 2^127 * 10^38 < 2^254
		b, _ = b.mulPow10(e.k2)
		switch {
		case an == bn:
			m, _ = a.add(b)
			neg = an
		case a.cmp(b) >= 0:
			m, neg = a.sub(b), an
		default:
			m, neg = b.sub(a), bn
		}
		m = m.reduceScale(max(e.s1, e.s2) - e.s)
	case scMul:
		m, _ = a.mul(b)
		neg = an != bn
		m = m.reduceScale(e.s1 + e.s2 - e.s)
	case scDiv:
		if b.isZero() {
			return scDec{}, decDivZero
		}
		neg = an != bn
		if q, ok := decDivFast(a, b, e.s-e.s1+e.s2); ok {
			m = q
			break
		}
		if k := e.s - e.s1 + e.s2; k >= 0 {
			var of bool
			if a, of = a.mulPow10(k); of {
				return scDec{}, decOverflow
			}
		} else {
			b, _ = b.mulPow10(-k)
		}
		m = a.roundDiv(b)
	case scMod:
		if b.isZero() {
			return scDec{}, decDivZero
		}
		a, _ = a.mulPow10(e.k1)
		b, _ = b.mulPow10(e.k2)
		_, m = a.divmod(b)
		neg = an
	}
	if !m.digitsBelow(e.p) {
		return scDec{}, decOverflow
	}
	return decFromMag(m, neg && !m.isZero()), decOK
}

func (e *decArithExpr) rowErr(st int, x, y scDec) error {
	if st == decDivZero {
		return fmt.Errorf("%s: %w", e, ErrDivisionByZero)
	}
	a, b := decRat(x, e.s1), decRat(y, e.s2)
	v := new(big.Rat)
	switch e.op {
	case scAdd:
		v.Add(a, b)
	case scSub:
		v.Sub(a, b)
	case scMul:
		v.Mul(a, b)
	case scDiv:
		v.Quo(a, b)
	}
	return scDecOverflowErr(e.String(), e.typ, v)
}

// ---------------------------------------------------------------------------
// Comparison

// bindDecimalCompare types a comparison with a DECIMAL operand: against
// FLOAT/DOUBLE in DOUBLE; otherwise both sides exactly, whatever their
// scales (an integer is a DECIMAL of scale 0). A literal that the other
// side's scale holds exactly is converted to it, so the kernel compares
// 128-bit integers.
func bindDecimalCompare(name string, op scCmpOp, args []Expr) (Expr, error) {
	l, r := args[0], args[1]
	t, ok := scCommonType(l.Type(), r.Type())
	if !ok || !(scKindOf(t) == skDecimal || scKindOf(t).isFloat()) {
		return nil, scSigError(name, args)
	}
	if scIsNullLiteral(l) || scIsNullLiteral(r) {
		return Literal(nil, scBool)
	}
	if scKindOf(t).isFloat() {
		var err error
		if l, err = scCoerceTo(l, scTypeOf(skFloat64)); err != nil {
			return nil, err
		}
		if r, err = scCoerceTo(r, scTypeOf(skFloat64)); err != nil {
			return nil, err
		}
		return bindCompare(name, op)([]Expr{l, r})
	}
	toDec := func(e Expr) (Expr, error) {
		if k := scKindOf(e.Type()); k.isInt() {
			return Cast(e, scDecOfInt(k))
		}
		return e, nil
	}
	var err error
	if l, err = toDec(l); err != nil {
		return nil, err
	}
	if r, err = toDec(r); err != nil {
		return nil, err
	}
	fname := name
	if _, lLit := scIsLiteral(l); lLit {
		if _, rLit := scIsLiteral(r); !rLit {
			l, r, op = r, l, op.mirror()
			fname = scCmpNames[op]
		}
	}
	_, ls := scDecPS(l.Type())
	_, rs := scDecPS(r.Type())
	if lit, ok := scIsLiteral(r); ok && rs != ls {
		if v, ok := decRescale(lit.d, rs, scDecMaxPrecision, ls); ok {
			if back, _ := decRescale(v, ls, scDecMaxPrecision, rs); back == lit.d {
				r = &exprLit{typ: scDecType(scDecMaxPrecision, ls), kind: skDecimal, d: v}
				rs = ls
			}
		}
	}
	c := cmpNode{name: fname, op: op, l: l, r: r}
	if lit, ok := scIsLiteral(r); ok {
		c.rLit = lit
	}
	if _, ok := scIsLiteral(l); ok {
		c.rLit = nil
	}
	e := &cmpDecExpr{cmpNode: c, ls: ls, rs: rs}
	if c.rLit != nil {
		e.s = c.rLit.d
	}
	return e, nil
}

type cmpDecExpr struct {
	cmpNode
	ls, rs int // the operands' scales
	s      scDec
}

func (e *cmpDecExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	return e.eval(b, mem, e.words)
}

func (e *cmpDecExpr) words(out []byte, la, ra arrow.Array, sel []int32) {
	a := scValues[scDec](la)
	y := scNumArg[scDec]{lit: e.s, isLit: ra == nil}
	if ra != nil {
		y.v = scValues[scDec](ra)
	}
	cmp := func(i int) bool {
		if e.ls == e.rs {
			return scCmpResult(e.op, decCmp(a[i], y.at(i)))
		}
		return scCmpResult(e.op, decCmpScaled(a[i], e.ls, y.at(i), e.rs))
	}
	if sel != nil {
		for _, i := range sel {
			out[i>>3] |= byte(scBit(cmp(int(i)))) << (i & 7)
		}
		return
	}
	n := la.Len()
	for w := 0; w*64 < n; w++ {
		var word uint64
		lo := w * 64
		hi := min(lo+64, n)
		for i := lo; i < hi; i++ {
			word |= scBit(cmp(i)) << (uint(i-lo) & 63)
		}
		scStoreWord(out, w, word)
	}
}

// decCmpScaled compares x/10^sx with y/10^sy exactly.
func decCmpScaled(x scDec, sx int, y scDec, sy int) int {
	if sx == sy {
		return decCmp(x, y)
	}
	a, an := x.mag()
	b, bn := y.mag()
	if sx < sy {
		a, _ = a.mulPow10(sy - sx)
	} else {
		b, _ = b.mulPow10(sx - sy)
	}
	if a.isZero() {
		an = false
	}
	if b.isZero() {
		bn = false
	}
	switch {
	case an && !bn:
		return -1
	case !an && bn:
		return 1
	case an:
		return b.cmp(a)
	}
	return a.cmp(b)
}

// ---------------------------------------------------------------------------
// negate, abs

func bindDecimalNegate(name string, abs bool, a Expr) Expr {
	return newScFunc(name, a.Type(), []Expr{a}, false, func(c *scCall) (arrow.Array, error) {
		x := scCallDec(c, 0)
		buf, o := scAllocValues[scDec](c.mem, c.n)
		for _, i := range c.rows {
			v := x.at(int(i))
			if !abs || v.isNeg() {
				v = v.neg()
			}
			o[i] = v
		}
		return c.result(a.Type(), buf), nil
	})
}
