package kernels

import (
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// Math functions: abs, floor, ceil, round, power, sqrt. Integers keep their
// type (abs wraps at the minimum, as Java's Math.abs), floats keep theirs,
// DECIMAL follows Flink's type rules; power and sqrt are DOUBLE.

// scNumArgKind is the kind of a numeric (or DECIMAL) operand; skNull for
// the untyped NULL.
func scNumArgKind(name string, args []Expr, k int) (scKind, error) {
	ak := scKindOf(args[k].Type())
	if !ak.isNumeric() && ak != skDecimal && ak != skNull {
		return skUnsupported, scSigError(name, args)
	}
	return ak, nil
}

// scUnaryNum applies f to every computed row of a numeric operand of type T.
func scUnaryNum[T scNum](name string, a Expr, f func(T) T) (Expr, error) {
	t := a.Type()
	return scBindStrict(name, t, []Expr{a}, false, func(c *scCall) (arrow.Array, error) {
		x := scCallNum[T](c, 0)
		buf, o := scAllocValues[T](c.mem, c.n)
		for _, i := range c.rows {
			o[i] = f(x.at(int(i)))
		}
		return c.result(t, buf), nil
	})
}

// scUnaryByKind instantiates scUnaryNum for an operand's kind; fi handles
// integers (as int64, wrapping back), ff floats.
func scUnaryByKind(name string, a Expr, fi func(int64) int64, ff func(float64) float64) (Expr, error) {
	switch scKindOf(a.Type()) {
	case skInt8:
		return scUnaryNum(name, a, func(x int8) int8 { return int8(fi(int64(x))) })
	case skInt16:
		return scUnaryNum(name, a, func(x int16) int16 { return int16(fi(int64(x))) })
	case skInt32:
		return scUnaryNum(name, a, func(x int32) int32 { return int32(fi(int64(x))) })
	case skInt64:
		return scUnaryNum(name, a, fi)
	case skFloat32:
		return scUnaryNum(name, a, func(x float32) float32 { return float32(ff(float64(x))) })
	}
	return scUnaryNum(name, a, ff)
}

func bindAbs(args []Expr) (Expr, error) {
	k, err := scNumArgKind("abs", args, 0)
	switch {
	case err != nil:
		return nil, err
	case k == skNull:
		return nil, scSigError("abs", args)
	case scIsNullLiteral(args[0]):
		return args[0], nil
	case k == skDecimal:
		return bindDecimalNegate("abs", true, args[0]), nil
	}
	return scUnaryByKind("abs", args[0], func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}, math.Abs)
}

// bindFloorCeil is floor(x) / ceil(x): an integer is returned as is, a
// float keeps its type, DECIMAL(p, s) gives DECIMAL(p, 0).
func bindFloorCeil(name string, ceil bool) func(args []Expr) (Expr, error) {
	return func(args []Expr) (Expr, error) {
		k, err := scNumArgKind(name, args, 0)
		switch {
		case err != nil:
			return nil, err
		case k == skNull:
			return nil, scSigError(name, args)
		case k.isInt():
			return args[0], nil
		case k == skDecimal:
			p, s := scDecPS(args[0].Type())
			if s == 0 {
				return args[0], nil
			}
			rt := scDecType(p, 0)
			return scBindStrict(name, rt, args, false, func(c *scCall) (arrow.Array, error) {
				x := scCallDec(c, 0)
				buf, o := scAllocValues[scDec](c.mem, c.n)
				for _, i := range c.rows {
					m, neg := x.at(int(i)).mag()
					q, r := m.divmod(scPow10[s])
					if !r.isZero() && neg != ceil {
						q, _ = q.add(u256{1})
					}
					o[i] = decFromMag(q, neg && !q.isZero())
				}
				return c.result(rt, buf), nil
			})
		}
		f := math.Floor
		if ceil {
			f = math.Ceil
		}
		return scUnaryByKind(name, args[0], nil, f)
	}
}

// bindRound is round(x [, d]): x rounded half away from zero to d decimal
// places (default 0; negative d rounds to tens, hundreds, ...). Integers
// and floats keep their type; a float is rounded in its shortest decimal
// form, as Flink's BigDecimal.valueOf(x).setScale(d, HALF_UP), so
// round(2.675, 2) is 2.68. For DECIMAL(p, s) d must be a constant and the
// result is DECIMAL(p, s) if d >= s, else DECIMAL(1+p-s+d, d) (d >= 0) or
// DECIMAL(min(38, 1+p-s), 0) (d < 0).
func bindRound(args []Expr) (Expr, error) {
	k, err := scNumArgKind("round", args, 0)
	if err != nil {
		return nil, err
	}
	if k == skNull {
		return nil, scSigError("round", args)
	}
	ops := []Expr{args[0], mustLit(int64(0), scTypeOf(skInt64))}
	if len(args) == 2 {
		dk := scKindOf(args[1].Type())
		if !dk.isInt() && dk != skNull {
			return nil, scSigError("round", args)
		}
		if ops[1], err = scCoerce(args[1], skInt64, scTypeOf(skInt64)); err != nil {
			return nil, err
		}
	}
	dl, dLit := scIsLiteral(ops[1])
	t := args[0].Type()
	if k == skDecimal {
		if !dLit {
			return nil, fmt.Errorf("function round: the number of digits must be a constant for %s", SQLTypeName(t))
		}
		if dl.null || scIsNullLiteral(args[0]) {
			return Literal(nil, t)
		}
		p, s := scDecPS(t)
		d := int(max(min(dl.i, 100), -100))
		rt := scDecRoundType(p, s, d)
		if d >= s {
			return args[0], nil
		}
		rp, _ := scDecPS(rt)
		return scBindStrict("round", rt, ops, rp == scDecMaxPrecision, func(c *scCall) (arrow.Array, error) {
			x := scCallDec(c, 0)
			buf, o := scAllocValues[scDec](c.mem, c.n)
			for _, i := range c.rows {
				v := x.at(int(i))
				m, neg := v.mag()
				m = m.reduceScale(s - d)
				if d < 0 {
					m, _ = m.mulPow10(-d)
				}
				if !m.digitsBelow(rp) {
					buf.Release()
					return nil, scDecOverflowErr("round", rt, decRat(v, s))
				}
				o[i] = decFromMag(m, neg && !m.isZero())
			}
			return c.result(rt, buf), nil
		})
	}
	if dLit && !dl.null && dl.i >= 0 && k.isInt() {
		return args[0], nil
	}
	switch k {
	case skInt8:
		return scRoundNum[int8]("round", t, ops, scRoundInt)
	case skInt16:
		return scRoundNum[int16]("round", t, ops, scRoundInt)
	case skInt32:
		return scRoundNum[int32]("round", t, ops, scRoundInt)
	case skInt64:
		return scRoundNum[int64]("round", t, ops, scRoundInt)
	case skFloat32:
		return scRoundNum[float32]("round", t, ops, func(x float64, d int64) float64 { return scRoundFloat(x, d, 32) })
	}
	return scRoundNum[float64]("round", t, ops, func(x float64, d int64) float64 { return scRoundFloat(x, d, 64) })
}

func mustLit(v any, t arrow.DataType) Expr {
	e, err := Literal(v, t)
	if err != nil {
		panic(err)
	}
	return e
}

func scRoundNum[T scNum, V int64 | float64](name string, t arrow.DataType, ops []Expr, f func(V, int64) V) (Expr, error) {
	return scBindStrict(name, t, ops, false, func(c *scCall) (arrow.Array, error) {
		x, d := scCallNum[T](c, 0), scCallNum[int64](c, 1)
		buf, o := scAllocValues[T](c.mem, c.n)
		for _, i := range c.rows {
			o[i] = T(f(V(x.at(int(i))), d.at(int(i))))
		}
		return c.result(t, buf), nil
	})
}

// scRoundInt rounds x half away from zero to a multiple of 10^-d (d < 0);
// the result wraps to the type's width as Java's BigDecimal.longValue().
func scRoundInt(x int64, d int64) int64 {
	if d >= 0 {
		return x
	}
	if d < -20 {
		return 0
	}
	m, neg := decFromI64(x).mag()
	m = m.reduceScale(int(-d))
	m, _ = m.mulPow10(int(-d))
	if neg {
		return -int64(m[0])
	}
	return int64(m[0])
}

// scRoundFloat rounds x half up in its shortest decimal form to d places.
func scRoundFloat(x float64, d int64, bitSize int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	limit := float64(1 << 52)
	if bitSize == 32 {
		limit = 1 << 23
	}
	if d == 0 && math.Abs(x) < limit {
		return math.Round(x) + 0 // +0: no negative zero, as BigDecimal
	}
	var buf [40]byte
	e := strconv.AppendFloat(buf[:0], x, 'e', -1, bitSize) // [-]d[.ddd]e±xx
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	var digs [20]byte
	nd, k := 0, 0
	for ; e[k] != 'e'; k++ {
		if e[k] != '.' {
			digs[nd] = e[k]
			nd++
		}
	}
	exp, _ := strconv.Atoi(string(e[k+1:]))
	keep := int64(exp) + 1 + d // digits kept
	if keep >= int64(nd) {
		return x
	}
	var m uint64
	for i := int64(0); i < keep; i++ {
		m = m*10 + uint64(digs[i]-'0')
	}
	if keep >= 0 && digs[keep] >= '5' {
		m++
	}
	if m == 0 {
		return 0
	}
	out := strconv.AppendUint(buf[:0], m, 10)
	out = append(out, 'e')
	out = strconv.AppendInt(out, -d, 10)
	f, _ := strconv.ParseFloat(unsafeString(out), bitSize)
	if neg {
		f = -f
	}
	return f
}

// bindPower is power(x, y) → DOUBLE with Java's Math.pow special cases
// (NaN exponent, ±1 to an infinite power: NaN).
func bindPower(args []Expr) (Expr, error) {
	return scBindDouble2("power", args, func(x, y float64) float64 {
		if math.IsNaN(y) || math.IsInf(y, 0) && (x == 1 || x == -1) {
			return math.NaN()
		}
		return math.Pow(x, y)
	})
}

// bindSqrt is sqrt(x) → DOUBLE; NaN for a negative x.
func bindSqrt(args []Expr) (Expr, error) {
	if _, err := scNumArgKind("sqrt", args, 0); err != nil {
		return nil, err
	}
	a, err := scCoerce(args[0], skFloat64, scTypeOf(skFloat64))
	if err != nil {
		return nil, err
	}
	return scUnaryNum("sqrt", a, math.Sqrt)
}

func scBindDouble2(name string, args []Expr, f func(x, y float64) float64) (Expr, error) {
	ops := make([]Expr, len(args))
	for k := range args {
		if _, err := scNumArgKind(name, args, k); err != nil {
			return nil, err
		}
		c, err := scCoerce(args[k], skFloat64, scTypeOf(skFloat64))
		if err != nil {
			return nil, err
		}
		ops[k] = c
	}
	t := scTypeOf(skFloat64)
	return scBindStrict(name, t, ops, false, func(c *scCall) (arrow.Array, error) {
		x, y := scCallNum[float64](c, 0), scCallNum[float64](c, 1)
		buf, o := scAllocValues[float64](c.mem, c.n)
		for _, i := range c.rows {
			o[i] = f(x.at(int(i)), y.at(int(i)))
		}
		return c.result(t, buf), nil
	})
}
