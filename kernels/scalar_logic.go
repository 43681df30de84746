package kernels

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

var scBool = arrow.FixedWidthTypes.Boolean

// scBoolArg types a BOOLEAN operand: an untyped NULL becomes a BOOLEAN NULL.
func scBoolArg(name string, args []Expr, i int) (Expr, error) {
	switch scKindOf(args[i].Type()) {
	case skBool:
		return args[i], nil
	case skNull:
		return scCoerce(args[i], skBool, scBool)
	}
	return nil, scSigError(name, args)
}

// ---------------------------------------------------------------------------
// AND, OR (three-valued)

func bindLogic(name string, and bool) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		ops := make([]Expr, len(args))
		for i := range args {
			a, err := scBoolArg(name, args, i)
			if err != nil {
				return nil, err
			}
			ops[i] = a
		}
		acc := ops[0]
		for _, r := range ops[1:] {
			acc = newLogic(name, and, acc, r)
		}
		return acc, nil
	}
}

// newLogic simplifies literal operands: the absorbing value (FALSE for AND,
// TRUE for OR) wins, the neutral one drops out, and NULL becomes a constant
// operand of the kernel. A literal is moved to the right: the values
// commute, and the expression now on the left is evaluated where it was
// before (a NULL literal decides no row).
func newLogic(name string, and bool, l, r Expr) Expr {
	if _, ok := scIsLiteral(l); ok {
		if _, ok := scIsLiteral(r); !ok {
			l, r = r, l
		}
	}
	e := &logicExpr{name: name, and: and, l: l, r: r}
	if lit, ok := scIsLiteral(r); ok {
		if _, lLit := scIsLiteral(l); lLit {
			return exprFold(e)
		}
		switch {
		case lit.null:
			e.rNull = true
		case lit.b != and: // FALSE for AND, TRUE for OR
			return lit
		default:
			return l
		}
	}
	return e
}

type logicExpr struct {
	name  string
	and   bool
	l, r  Expr
	rNull bool // r is the NULL literal
}

func (e *logicExpr) Type() arrow.DataType { return scBool }
func (e *logicExpr) String() string       { return e.name + "(" + e.l.String() + ", " + e.r.String() + ")" }
func (e *logicExpr) exprMayFail() bool    { return exprMayFail(e.l) || exprMayFail(e.r) }

func (e *logicExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, scBool), nil
	}
	la, err := e.l.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer la.Release()
	var ra arrow.Array
	if !e.rNull {
		rb := b
		if exprMayFail(e.r) {
			// Evaluate r only where l has not decided the result, as
			// Flink's generated code short-circuits.
			sub := scUndecided(la, b, e.and)
			if len(sub) == 0 {
				la.Retain()
				return la, nil
			}
			rb = &vector.Batch{Rec: b.Rec, Sel: sub, RowWatermark: b.RowWatermark}
		}
		if ra, err = e.r.Eval(rb, mem); err != nil {
			return nil, err
		}
		defer ra.Release()
	}
	return scKleene(mem, n, e.and, la, ra), nil
}

// scUndecided lists the live rows where l is not the absorbing value
// (valid FALSE for AND, valid TRUE for OR).
func scUndecided(l arrow.Array, b *vector.Batch, and bool) []int32 {
	v := scBitmapBytes(l, 1)
	var valid []byte
	if l.NullN() > 0 {
		valid = scBitmapBytes(l, 0)
	}
	decided := func(i int) bool {
		if valid != nil && !bitutil.BitIsSet(valid, i) {
			return false
		}
		return bitutil.BitIsSet(v, i) != and
	}
	out := make([]int32, 0, b.Len())
	if b.Sel != nil {
		for _, i := range b.Sel {
			if !decided(int(i)) {
				out = append(out, i)
			}
		}
		return out
	}
	for i := 0; i < b.NumRows(); i++ {
		if !decided(i) {
			out = append(out, int32(i))
		}
	}
	return out
}

// scKleene combines two BOOLEAN arrays word by word with SQL's three-valued
// AND/OR; ra nil is the NULL constant. With x, y the values and vx, vy the
// validities:
//
//	AND: value x&y, valid (vx&vy) | (vx&^x) | (vy&^y)
//	OR:  value x|y, valid (vx&vy) | (vx&x)  | (vy&y)
//
// Values under a NULL are arbitrary; the formulas do not depend on them.
func scKleene(mem memory.Allocator, n int, and bool, la, ra arrow.Array) arrow.Array {
	x := scBitmapBytes(la, 1)
	var xv, y, yv []byte
	if la.NullN() > 0 {
		xv = scBitmapBytes(la, 0)
	}
	yNull := ra == nil
	if !yNull {
		y = scBitmapBytes(ra, 1)
		if ra.NullN() > 0 {
			yv = scBitmapBytes(ra, 0)
		}
	}
	nw := scWords(n)
	buf, out := scAllocBitmap(mem, n)
	if xv == nil && yv == nil && !yNull {
		for w := 0; w < nw; w++ {
			if and {
				scStoreWord(out, w, scLoadWord(x, w)&scLoadWord(y, w))
			} else {
				scStoreWord(out, w, scLoadWord(x, w)|scLoadWord(y, w))
			}
		}
		return scMakeArray(scBool, n, nil, 0, buf)
	}
	vbuf, vout := scAllocBitmap(mem, n)
	all := ^uint64(0)
	nulls := 0
	for w := 0; w < nw; w++ {
		xw, vxw := scLoadWord(x, w), all
		if xv != nil {
			vxw = scLoadWord(xv, w)
		}
		var yw, vyw uint64
		switch {
		case yNull:
			if !and {
				yw = all
			}
		default:
			yw, vyw = scLoadWord(y, w), all
			if yv != nil {
				vyw = scLoadWord(yv, w)
			}
		}
		var val, valid uint64
		if and {
			val = xw & yw
			valid = (vxw & vyw) | (vxw &^ xw) | (vyw &^ yw)
		} else {
			val = xw | yw
			valid = (vxw & vyw) | (vxw & xw) | (vyw & yw)
		}
		if rem := n - w*64; rem < 64 {
			valid &= 1<<uint(rem) - 1
		}
		nulls += 64 - bits.OnesCount64(valid)
		scStoreWord(out, w, val)
		scStoreWord(vout, w, valid)
	}
	nulls -= nw*64 - n
	return scMakeArray(scBool, n, vbuf, nulls, buf)
}

// ---------------------------------------------------------------------------
// NOT

func bindNot(args []Expr) (Expr, error) {
	a, err := scBoolArg("not", args, 0)
	if err != nil {
		return nil, err
	}
	if scIsNullLiteral(a) {
		return a, nil
	}
	return &notExpr{a: a}, nil
}

type notExpr struct{ a Expr }

func (e *notExpr) Type() arrow.DataType { return scBool }
func (e *notExpr) String() string       { return "not(" + e.a.String() + ")" }
func (e *notExpr) exprMayFail() bool    { return exprMayFail(e.a) }

func (e *notExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, scBool), nil
	}
	a, err := e.a.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	valid, nulls := scShareValidity(mem, a)
	x := scBitmapBytes(a, 1)
	buf, out := scAllocBitmap(mem, n)
	for w := 0; w < scWords(n); w++ {
		scStoreWord(out, w, ^scLoadWord(x, w))
	}
	return scMakeArray(scBool, n, valid, nulls, buf), nil
}

// ---------------------------------------------------------------------------
// IS [NOT] NULL / TRUE / FALSE: never NULL.

type scIsOp uint8

const (
	scIsNull scIsOp = iota
	scIsNotNull
	scIsTrue
	scIsFalse
	scIsNotTrue
	scIsNotFalse
)

func bindIs(name string, op scIsOp) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		a := args[0]
		if op >= scIsTrue {
			var err error
			if a, err = scBoolArg(name, args, 0); err != nil {
				return nil, err
			}
		}
		// IS [NOT] NULL needs only validity: any type is accepted.
		return &isExpr{name: name, op: op, a: a}, nil
	}
}

type isExpr struct {
	name string
	op   scIsOp
	a    Expr
}

func (e *isExpr) Type() arrow.DataType { return scBool }
func (e *isExpr) String() string       { return e.name + "(" + e.a.String() + ")" }
func (e *isExpr) exprMayFail() bool    { return exprMayFail(e.a) }

func (e *isExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, scBool), nil
	}
	a, err := e.a.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	all := ^uint64(0)
	var valid, x []byte
	allNull := a.DataType().ID() == arrow.NULL
	if !allNull && a.NullN() > 0 {
		valid = scBitmapBytes(a, 0)
	}
	if e.op >= scIsTrue && !allNull {
		x = scBitmapBytes(a, 1)
	}
	buf, out := scAllocBitmap(mem, n)
	for w := 0; w < scWords(n); w++ {
		v := all
		switch {
		case allNull:
			v = 0
		case valid != nil:
			v = scLoadWord(valid, w)
		}
		var r uint64
		switch e.op {
		case scIsNull:
			r = ^v
		case scIsNotNull:
			r = v
		case scIsTrue:
			r = v & scLoadWord(x, w)
		case scIsFalse:
			r = v &^ scLoadWord(x, w)
		case scIsNotTrue:
			r = ^(v & scLoadWord(x, w))
		case scIsNotFalse:
			r = ^(v &^ scLoadWord(x, w))
		}
		scStoreWord(out, w, r)
	}
	return scMakeArray(scBool, n, nil, 0, buf), nil
}
