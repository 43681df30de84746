package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// ErrDivisionByZero is returned (wrapped) by integer division and modulus
// when a live row has a zero divisor.
var ErrDivisionByZero = errors.New("division by zero")

type scArithOp uint8

const (
	scAdd scArithOp = iota
	scSub
	scMul
	scDiv
	scMod
)

// scShape says which operands are arrays (V) and which scalars (S).
type scShape uint8

const (
	scVV scShape = iota
	scVS
	scSV
)

func bindArith(name string, op scArithOp) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		lk, rk := scKindOf(args[0].Type()), scKindOf(args[1].Type())
		switch {
		case lk == skDecimal || rk == skDecimal:
			return bindDecimalArith(name, op, args)
		case lk == skTimestamp || rk == skTimestamp:
			return bindTimestampArith(name, op, args)
		}
		k, ok := scCommonKind(lk, rk)
		if !ok || !k.isNumeric() {
			return nil, scSigError(name, args)
		}
		return bindArithKind(name, op, k, args)
	}
}

// bindArithKind compiles a binary operator over numeric kind k, converting
// both operands to it.
func bindArithKind(name string, op scArithOp, k scKind, args []Expr) (Expr, error) {
	t := scTypeOf(k)
	if scIsNullLiteral(args[0]) || scIsNullLiteral(args[1]) {
		return Literal(nil, t)
	}
	l, err := scCoerce(args[0], k, t)
	if err != nil {
		return nil, err
	}
	r, err := scCoerce(args[1], k, t)
	if err != nil {
		return nil, err
	}
	switch k {
	case skInt8:
		return newArithInt[int8](name, op, t, l, r), nil
	case skInt16:
		return newArithInt[int16](name, op, t, l, r), nil
	case skInt32:
		return newArithInt[int32](name, op, t, l, r), nil
	case skInt64:
		return newArithInt[int64](name, op, t, l, r), nil
	case skFloat32:
		return newArith[float32](name, op, t, l, r), nil
	default:
		return newArith[float64](name, op, t, l, r), nil
	}
}

// bindTimestampArith is TIMESTAMP ± an interval: add(ts, n), add(n, ts) and
// subtract(ts, n) with n an integer number of milliseconds (an INTERVAL is
// its length in ms) give a TIMESTAMP(3); the sum wraps like BIGINT.
func bindTimestampArith(name string, op scArithOp, args []Expr) (Expr, error) {
	lk, rk := scKindOf(args[0].Type()), scKindOf(args[1].Type())
	tsLeft := lk == skTimestamp && (rk.isInt() || rk == skNull)
	tsRight := rk == skTimestamp && (lk.isInt() || lk == skNull)
	if !(op == scAdd && (tsLeft || tsRight) || op == scSub && tsLeft) {
		return nil, scSigError(name, args)
	}
	t := args[0].Type()
	if !tsLeft {
		t = args[1].Type()
	}
	if scIsNullLiteral(args[0]) || scIsNullLiteral(args[1]) {
		return Literal(nil, t)
	}
	ops := make([]Expr, 2)
	for i, a := range args {
		if scKindOf(a.Type()) == skTimestamp {
			ops[i] = a
			continue
		}
		c, err := scCoerce(a, skInt64, scTypeOf(skInt64))
		if err != nil {
			return nil, err
		}
		ops[i] = c
	}
	return newArith[int64](name, op, t, ops[0], ops[1]), nil
}

// arithExpr is a binary arithmetic operator over T. A literal operand is
// kept as a scalar of type T.
type arithExpr[T scNum] struct {
	name   string
	op     scArithOp
	typ    arrow.DataType
	l, r   Expr
	ls, rs T
	lLit   bool
	rLit   bool
	// checked is the kernel of integer / and %: it visits only live rows and
	// reports a zero divisor on a valid row.
	checked func(op scArithOp, shape scShape, o, a, b []T, as, bs T, sel []int32, valid []byte) bool
}

func newArith[T scNum](name string, op scArithOp, t arrow.DataType, l, r Expr) *arithExpr[T] {
	e := &arithExpr[T]{name: name, op: op, typ: t, l: l, r: r}
	if lit, ok := scIsLiteral(l); ok {
		e.ls, e.lLit = scLitNum[T](lit), true
	}
	if lit, ok := scIsLiteral(r); ok {
		e.rs, e.rLit = scLitNum[T](lit), true
	}
	if e.lLit && e.rLit {
		// Only reached when folding failed (1/0): evaluate the left side
		// as an array so the error surfaces for live rows.
		e.lLit = false
	}
	return e
}

func newArithInt[T scInt](name string, op scArithOp, t arrow.DataType, l, r Expr) *arithExpr[T] {
	e := newArith[T](name, op, t, l, r)
	if op == scDiv || op == scMod {
		e.checked = scDivInt[T]
	}
	return e
}

func (e *arithExpr[T]) Type() arrow.DataType { return e.typ }
func (e *arithExpr[T]) String() string {
	return e.name + "(" + e.l.String() + ", " + e.r.String() + ")"
}

func (e *arithExpr[T]) exprMayFail() bool {
	return e.checked != nil || exprMayFail(e.l) || exprMayFail(e.r)
}

func (e *arithExpr[T]) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
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
	var a, bv []T
	shape := scVV
	switch {
	case e.rLit:
		a, shape = scValues[T](la), scVS
	case e.lLit:
		bv, shape = scValues[T](ra), scSV
	default:
		a, bv = scValues[T](la), scValues[T](ra)
	}
	valid, nulls := scValidity2(mem, n, la, ra)
	buf, o := scAllocValues[T](mem, n)
	if e.checked != nil {
		var vb []byte
		if valid != nil {
			vb = valid.Bytes()
		}
		if e.checked(e.op, shape, o, a, bv, e.ls, e.rs, b.Sel, vb) {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return nil, fmt.Errorf("%s: %w", e, ErrDivisionByZero)
		}
	} else {
		sel := b.Sel
		if !scSparse(sel, n) {
			sel = nil
		}
		switch shape {
		case scVV:
			scArithVV(e.op, o, a, bv, sel)
		case scVS:
			scArithVS(e.op, o, a, e.rs, sel)
		case scSV:
			scArithSV(e.op, o, e.ls, bv, sel)
		}
	}
	return scMakeArray(e.typ, n, valid, nulls, buf), nil
}

// The unchecked kernels: +, -, * for every numeric type, / and % for
// floats (Java semantics: x/0 is ±Inf or NaN, % has the dividend's sign).
// sel nil means every physical row, which is cheaper than following a dense
// selection and harmless: these operators never fail.

func scFmod[T scNum](a, b T) T { return T(math.Mod(float64(a), float64(b))) }

func scArithVV[T scNum](op scArithOp, o, a, b []T, sel []int32) {
	a, b = a[:len(o)], b[:len(o)]
	if sel == nil {
		switch op {
		case scAdd:
			for i := range o {
				o[i] = a[i] + b[i]
			}
		case scSub:
			for i := range o {
				o[i] = a[i] - b[i]
			}
		case scMul:
			for i := range o {
				o[i] = a[i] * b[i]
			}
		case scDiv:
			for i := range o {
				o[i] = a[i] / b[i]
			}
		case scMod:
			for i := range o {
				o[i] = scFmod(a[i], b[i])
			}
		}
		return
	}
	switch op {
	case scAdd:
		for _, i := range sel {
			o[i] = a[i] + b[i]
		}
	case scSub:
		for _, i := range sel {
			o[i] = a[i] - b[i]
		}
	case scMul:
		for _, i := range sel {
			o[i] = a[i] * b[i]
		}
	case scDiv:
		for _, i := range sel {
			o[i] = a[i] / b[i]
		}
	case scMod:
		for _, i := range sel {
			o[i] = scFmod(a[i], b[i])
		}
	}
}

func scArithVS[T scNum](op scArithOp, o, a []T, s T, sel []int32) {
	a = a[:len(o)]
	if sel == nil {
		switch op {
		case scAdd:
			for i := range o {
				o[i] = a[i] + s
			}
		case scSub:
			for i := range o {
				o[i] = a[i] - s
			}
		case scMul:
			for i := range o {
				o[i] = a[i] * s
			}
		case scDiv:
			for i := range o {
				o[i] = a[i] / s
			}
		case scMod:
			for i := range o {
				o[i] = scFmod(a[i], s)
			}
		}
		return
	}
	switch op {
	case scAdd:
		for _, i := range sel {
			o[i] = a[i] + s
		}
	case scSub:
		for _, i := range sel {
			o[i] = a[i] - s
		}
	case scMul:
		for _, i := range sel {
			o[i] = a[i] * s
		}
	case scDiv:
		for _, i := range sel {
			o[i] = a[i] / s
		}
	case scMod:
		for _, i := range sel {
			o[i] = scFmod(a[i], s)
		}
	}
}

func scArithSV[T scNum](op scArithOp, o []T, s T, b []T, sel []int32) {
	b = b[:len(o)]
	if sel == nil {
		switch op {
		case scAdd:
			for i := range o {
				o[i] = s + b[i]
			}
		case scSub:
			for i := range o {
				o[i] = s - b[i]
			}
		case scMul:
			for i := range o {
				o[i] = s * b[i]
			}
		case scDiv:
			for i := range o {
				o[i] = s / b[i]
			}
		case scMod:
			for i := range o {
				o[i] = scFmod(s, b[i])
			}
		}
		return
	}
	switch op {
	case scAdd:
		for _, i := range sel {
			o[i] = s + b[i]
		}
	case scSub:
		for _, i := range sel {
			o[i] = s - b[i]
		}
	case scMul:
		for _, i := range sel {
			o[i] = s * b[i]
		}
	case scDiv:
		for _, i := range sel {
			o[i] = s / b[i]
		}
	case scMod:
		for _, i := range sel {
			o[i] = scFmod(s, b[i])
		}
	}
}

// scDivInt is integer / or % (Java: truncation toward zero, remainder with
// the dividend's sign, MIN / -1 = MIN). It visits only live rows; a zero
// divisor on a valid live row returns true (division by zero), on a NULL row
// it yields 0.
func scDivInt[T scInt](op scArithOp, shape scShape, o, a, b []T, as, bs T, sel []int32, valid []byte) bool {
	mod := op == scMod
	if shape == scVS {
		if bs == 0 {
			return scAnyLiveValid(len(o), sel, valid)
		}
		// The divisor is a non-zero constant: no checks, every row.
		a = a[:len(o)]
		if mod {
			for i := range o {
				o[i] = a[i] % bs
			}
		} else {
			for i := range o {
				o[i] = a[i] / bs
			}
		}
		return false
	}
	zero := func(i int) bool { // false: the row is NULL, carry on
		o[i] = 0
		return valid == nil || bitutil.BitIsSet(valid, i)
	}
	if sel == nil {
		b = b[:len(o)]
		if shape == scSV {
			for i := range o {
				y := b[i]
				if y == 0 {
					if zero(i) {
						return true
					}
					continue
				}
				if mod {
					o[i] = as % y
				} else {
					o[i] = as / y
				}
			}
			return false
		}
		a = a[:len(o)]
		if mod {
			for i := range o {
				y := b[i]
				if y == 0 {
					if zero(i) {
						return true
					}
					continue
				}
				o[i] = a[i] % y
			}
		} else {
			for i := range o {
				y := b[i]
				if y == 0 {
					if zero(i) {
						return true
					}
					continue
				}
				o[i] = a[i] / y
			}
		}
		return false
	}
	for _, i := range sel {
		y := b[i]
		if y == 0 {
			if zero(int(i)) {
				return true
			}
			continue
		}
		x := as
		if shape == scVV {
			x = a[i]
		}
		if mod {
			o[i] = x % y
		} else {
			o[i] = x / y
		}
	}
	return false
}

func scAnyLiveValid(n int, sel []int32, valid []byte) bool {
	if valid == nil {
		return sel == nil || len(sel) > 0
	}
	if sel == nil {
		return bitutil.CountSetBits(valid, 0, n) > 0
	}
	for _, i := range sel {
		if bitutil.BitIsSet(valid, int(i)) {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// negate

func bindNegate(args []Expr) (Expr, error) {
	k := scKindOf(args[0].Type())
	if k == skDecimal {
		if scIsNullLiteral(args[0]) {
			return Literal(nil, args[0].Type())
		}
		return bindDecimalNegate("negate", false, args[0]), nil
	}
	if !k.isNumeric() {
		return nil, scSigError("negate", args)
	}
	if scIsNullLiteral(args[0]) {
		return Literal(nil, args[0].Type())
	}
	switch k {
	case skInt8:
		return &negateExpr[int8]{a: args[0]}, nil
	case skInt16:
		return &negateExpr[int16]{a: args[0]}, nil
	case skInt32:
		return &negateExpr[int32]{a: args[0]}, nil
	case skInt64:
		return &negateExpr[int64]{a: args[0]}, nil
	case skFloat32:
		return &negateExpr[float32]{a: args[0]}, nil
	default:
		return &negateExpr[float64]{a: args[0]}, nil
	}
}

type negateExpr[T scNum] struct{ a Expr }

func (e *negateExpr[T]) Type() arrow.DataType { return e.a.Type() }
func (e *negateExpr[T]) String() string       { return "negate(" + e.a.String() + ")" }
func (e *negateExpr[T]) exprMayFail() bool    { return exprMayFail(e.a) }

func (e *negateExpr[T]) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, e.Type()), nil
	}
	a, err := e.a.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	valid, nulls := scShareValidity(mem, a)
	buf, o := scAllocValues[T](mem, n)
	src := scValues[T](a)[:n]
	for i := range o {
		o[i] = -src[i]
	}
	return scMakeArray(e.Type(), n, valid, nulls, buf), nil
}
