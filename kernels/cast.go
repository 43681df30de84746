package kernels

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Cast converts e to type to. Supported:
//
//   - numeric → numeric. Integers narrow by wrapping and floats convert to
//     integers by truncation toward zero, saturating at the target's range
//     (NaN → 0), as Java's casts do in Flink's generated code.
//   - DECIMAL ↔ numeric, DECIMAL → DECIMAL: to a DECIMAL exactly or rounded
//     half up to its scale (a float through its shortest decimal form, as
//     BigDecimal.valueOf); DECIMAL to an integer truncates toward zero;
//     DECIMAL to FLOAT/DOUBLE rounds to nearest. A value that does not fit
//     (too many digits, an integer out of range, NaN) fails the evaluation
//     with an error naming it.
//   - BOOLEAN ↔ numeric, DECIMAL: TRUE is 1, FALSE 0; a number is TRUE when
//     it is not zero (NaN is TRUE).
//   - numeric, DECIMAL, BOOLEAN, TIMESTAMP(3) → VARCHAR: integers in
//     decimal, floats as Java's Double.toString ("1.0", "1.0E10"), decimals
//     with exactly their scale's digits ("1.50"), booleans TRUE/FALSE,
//     timestamps "yyyy-MM-dd HH:mm:ss.SSS" (UTC).
//   - VARCHAR → numeric, DECIMAL, BOOLEAN, TIMESTAMP(3): the text is trimmed
//     and parsed; text that does not parse fails the evaluation with an
//     error naming the value (only for live rows). Timestamps are
//     yyyy-MM-dd, optionally with ' ' or 'T' and HH:mm[:ss[.fraction]].
//   - integer ↔ TIMESTAMP(3): epoch milliseconds (BIGINT shares the buffers).
//   - NULL → anything.
//
// A cast of a literal is evaluated once, here.
func Cast(e Expr, to arrow.DataType) (Expr, error) {
	from, tk := scKindOf(e.Type()), scKindOf(to)
	if tk == skUnsupported || tk == skNull {
		return nil, fmt.Errorf("cannot cast %s to %s", SQLTypeName(e.Type()), SQLTypeName(to))
	}
	if from == tk && arrow.TypeEqual(e.Type(), to) {
		return e, nil
	}
	if !scCastable(from, tk) {
		return nil, fmt.Errorf("cannot cast %s to %s", SQLTypeName(e.Type()), SQLTypeName(to))
	}
	c := &castExpr{e: e, from: from, to: tk, typ: to}
	if _, ok := scIsLiteral(e); ok {
		return exprFold(c), nil
	}
	return c, nil
}

func scCastable(from, to scKind) bool {
	num := func(k scKind) bool { return k.isNumeric() || k == skDecimal }
	switch {
	case from == to, from == skNull:
		return true
	case num(from) && num(to):
		return true
	case from == skBool && num(to), to == skBool && num(from):
		return true
	case to == skString:
		return num(from) || from == skBool || from == skTimestamp
	case from == skString:
		return num(to) || to == skBool || to == skTimestamp
	case to == skTimestamp:
		return from.isInt()
	case from == skTimestamp:
		return to == skInt64
	}
	return false
}

type castExpr struct {
	e        Expr
	from, to scKind
	typ      arrow.DataType
}

func (c *castExpr) Type() arrow.DataType { return c.typ }
func (c *castExpr) String() string {
	return "CAST(" + c.e.String() + " AS " + SQLTypeName(c.typ) + ")"
}
func (c *castExpr) exprMayFail() bool {
	return c.from == skString || c.to == skDecimal || c.from == skDecimal && c.to.isInt() || exprMayFail(c.e)
}

func (c *castExpr) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if n == 0 {
		return scEmpty(mem, c.typ), nil
	}
	if c.from == skNull {
		return array.MakeArrayOfNull(mem, c.typ, n), nil
	}
	a, err := c.e.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	sel := b.Sel
	switch {
	case c.to == skDecimal || c.from == skDecimal:
		return c.evalDecimal(mem, a, sel)
	case c.from == skBool && c.to.isNumeric():
		return scCastBoolToNum(mem, a, c.to, c.typ), nil
	case c.to == skBool && c.from.isNumeric():
		return scCastNumToBool(mem, a, c.from, c.typ), nil
	case c.from == c.to,
		c.from == skInt64 && c.to == skTimestamp,
		c.from == skTimestamp && c.to == skInt64:
		return scRetype(a, c.typ), nil
	case c.from.isNumeric() && c.to.isNumeric():
		if !scSparse(sel, n) {
			sel = nil
		}
		return scCastNumeric(mem, a, c.from, c.to, c.typ, sel), nil
	case c.from == skString:
		return scParse(mem, a, c.to, c.typ, sel)
	case c.to == skString:
		return scCastToString(mem, a, c.from, c.typ), nil
	case c.to == skTimestamp && c.from.isInt(): // narrower integer
		if !scSparse(sel, n) {
			sel = nil
		}
		return scCastNumeric(mem, a, c.from, skInt64, c.typ, sel), nil
	}
	return nil, fmt.Errorf("cannot cast %s to %s", SQLTypeName(c.e.Type()), SQLTypeName(c.typ))
}

// scRetype shares a's buffers under type t (same physical layout).
func scRetype(a arrow.Array, t arrow.DataType) arrow.Array {
	d := a.Data()
	nd := array.NewData(t, d.Len(), d.Buffers(), d.Children(), d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd)
}

// ---------------------------------------------------------------------------
// numeric → numeric

func scCastNumeric(mem memory.Allocator, a arrow.Array, from, to scKind, t arrow.DataType, sel []int32) arrow.Array {
	switch from {
	case skInt8:
		return scCastFrom[int8](mem, a, to, t, sel)
	case skInt16:
		return scCastFrom[int16](mem, a, to, t, sel)
	case skInt32:
		return scCastFrom[int32](mem, a, to, t, sel)
	case skInt64, skTimestamp:
		return scCastFrom[int64](mem, a, to, t, sel)
	case skFloat32:
		return scCastFrom[float32](mem, a, to, t, sel)
	default:
		return scCastFrom[float64](mem, a, to, t, sel)
	}
}

func scCastFrom[F scNum](mem memory.Allocator, a arrow.Array, to scKind, t arrow.DataType, sel []int32) arrow.Array {
	switch to {
	case skInt8:
		return scCastTo[F, int8](mem, a, t, sel)
	case skInt16:
		return scCastTo[F, int16](mem, a, t, sel)
	case skInt32:
		return scCastTo[F, int32](mem, a, t, sel)
	case skInt64, skTimestamp:
		return scCastTo[F, int64](mem, a, t, sel)
	case skFloat32:
		return scCastTo[F, float32](mem, a, t, sel)
	default:
		return scCastTo[F, float64](mem, a, t, sel)
	}
}

func scIsFloat[T scNum]() bool {
	var x T = 1
	x /= 2
	return x != 0
}

func scCastTo[F, T scNum](mem memory.Allocator, a arrow.Array, t arrow.DataType, sel []int32) arrow.Array {
	n := a.Len()
	valid, nulls := scShareValidity(mem, a)
	buf, o := scAllocValues[T](mem, n)
	src := scValues[F](a)[:n]
	if scIsFloat[F]() && !scIsFloat[T]() {
		wide := unsafe.Sizeof(T(0)) == 8
		if sel == nil {
			for i := range o {
				o[i] = scF2I[T](float64(src[i]), wide)
			}
		} else {
			for _, i := range sel {
				o[i] = scF2I[T](float64(src[i]), wide)
			}
		}
	} else if sel == nil {
		for i := range o {
			o[i] = T(src[i])
		}
	} else {
		for _, i := range sel {
			o[i] = T(src[i])
		}
	}
	return scMakeArray(t, n, valid, nulls, buf)
}

// scF2I is Java's floating to integral conversion: truncate toward zero,
// NaN to 0, saturate at the long range (64-bit targets) or at the int range
// and then wrap to the narrower type (byte, short).
func scF2I[T scNum](f float64, wide bool) T {
	var r int64
	switch {
	case f != f:
	case wide && f >= 1<<63:
		r = math.MaxInt64
	case wide && f <= -(1<<63):
		r = math.MinInt64
	case wide:
		r = int64(f)
	case f >= math.MaxInt32:
		r = math.MaxInt32
	case f <= math.MinInt32:
		r = math.MinInt32
	default:
		r = int64(int32(f))
	}
	return T(r)
}

// ---------------------------------------------------------------------------
// → VARCHAR. Every valid physical row is formatted (it cannot fail), which
// keeps the output in row order without consulting the selection.

func scCastToString(mem memory.Allocator, a arrow.Array, from scKind, t arrow.DataType) arrow.Array {
	n := a.Len()
	valid, nulls := scShareValidity(mem, a)
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	w := newScStrWriter(mem, n, n*8)
	switch from {
	case skInt8:
		scFormatInts(w, scValues[int8](a), vb)
	case skInt16:
		scFormatInts(w, scValues[int16](a), vb)
	case skInt32:
		scFormatInts(w, scValues[int32](a), vb)
	case skInt64:
		scFormatInts(w, scValues[int64](a), vb)
	case skFloat32:
		scFormatFloats(w, scValues[float32](a), vb, 32)
	case skFloat64:
		scFormatFloats(w, scValues[float64](a), vb, 64)
	case skBool:
		x := scBitmapBytes(a, 1)
		for i := 0; i < n; i++ {
			if vb == nil || bitutil.BitIsSet(vb, i) {
				if bitutil.BitIsSet(x, i) {
					w.appendString("TRUE")
				} else {
					w.appendString("FALSE")
				}
			}
			w.endRow(i)
		}
	case skTimestamp:
		for i, v := range scValues[int64](a) {
			if vb == nil || bitutil.BitIsSet(vb, i) {
				d := scAppendTimestamp(w.reserve(40), v)
				w.n += len(d)
			}
			w.endRow(i)
		}
	}
	return w.finish(t, valid, nulls)
}

func scFormatInts[T scInt](w *scStrWriter, v []T, valid []byte) {
	for i, x := range v {
		if valid == nil || bitutil.BitIsSet(valid, i) {
			d := strconv.AppendInt(w.reserve(20), int64(x), 10)
			w.n += len(d)
		}
		w.endRow(i)
	}
}

func scFormatFloats[T scFloat](w *scStrWriter, v []T, valid []byte, bitSize int) {
	for i, x := range v {
		if valid == nil || bitutil.BitIsSet(valid, i) {
			d := scAppendJavaFloat(w.reserve(32), float64(x), bitSize)
			w.n += len(d)
		}
		w.endRow(i)
	}
}

// scAppendJavaFloat formats f as Java's Double.toString / Float.toString
// (shortest round-trip digits): plain notation with at least one fractional
// digit for 1e-3 <= |f| < 1e7, else d.dddE±n.
func scAppendJavaFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var tmp [40]byte
	s := strconv.AppendFloat(tmp[:0], math.Abs(f), 'e', -1, bitSize) // d[.ddd]e±xx
	if s[1] == 'e' {
		// Java prints at least two digits (d.d) and takes, among the
		// two-digit decimals, the one closest to f: Double.MIN_VALUE is
		// 4.9E-324, not 5.0E-324.
		s = strconv.AppendFloat(tmp[:0], math.Abs(f), 'e', 1, bitSize)
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	var digs [32]byte
	nd := 0
	k := 0
	for ; s[k] != 'e'; k++ {
		if s[k] != '.' {
			digs[nd] = s[k]
			nd++
		}
	}
	for nd > 1 && digs[nd-1] == '0' {
		nd--
	}
	exp := 0
	neg := s[k+1] == '-'
	for _, c := range s[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	d := digs[:nd]
	if abs := math.Abs(f); abs >= 1e-3 && abs < 1e7 {
		if exp < 0 {
			dst = append(dst, '0', '.')
			for z := 0; z < -exp-1; z++ {
				dst = append(dst, '0')
			}
			return append(dst, d...)
		}
		ip := exp + 1
		if ip >= len(d) {
			dst = append(dst, d...)
			for z := len(d); z < ip; z++ {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		}
		dst = append(dst, d[:ip]...)
		dst = append(dst, '.')
		return append(dst, d[ip:]...)
	}
	dst = append(dst, d[0], '.')
	if len(d) > 1 {
		dst = append(dst, d[1:]...)
	} else {
		dst = append(dst, '0')
	}
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// ---------------------------------------------------------------------------
// VARCHAR → numeric, BOOLEAN, TIMESTAMP(3): only live, valid rows are parsed.

func scParse(mem memory.Allocator, a arrow.Array, to scKind, t arrow.DataType, sel []int32) (arrow.Array, error) {
	str := a.(*array.String)
	switch to {
	case skInt8:
		return scParseNum[int8](mem, str, to, t, sel)
	case skInt16:
		return scParseNum[int16](mem, str, to, t, sel)
	case skInt32:
		return scParseNum[int32](mem, str, to, t, sel)
	case skInt64:
		return scParseNum[int64](mem, str, to, t, sel)
	case skFloat32:
		return scParseNum[float32](mem, str, to, t, sel)
	case skFloat64:
		return scParseNum[float64](mem, str, to, t, sel)
	case skTimestamp:
		return scParseNum[int64](mem, str, to, t, sel)
	case skBool:
		n := str.Len()
		valid, nulls := scShareValidity(mem, str)
		buf, out := scAllocBitmap(mem, n)
		clear(out)
		var vb []byte
		if valid != nil {
			vb = valid.Bytes()
		}
		err := scForLive(n, sel, vb, func(i int) error {
			v, ok := scParseBool(strings.TrimSpace(str.Value(i)))
			if !ok {
				return scParseError(str.Value(i), t)
			}
			if v {
				bitutil.SetBit(out, i)
			}
			return nil
		})
		if err != nil {
			buf.Release()
			if valid != nil {
				valid.Release()
			}
			return nil, err
		}
		return scMakeArray(t, n, valid, nulls, buf), nil
	}
	return nil, fmt.Errorf("cannot cast VARCHAR to %s", SQLTypeName(t))
}

func scParseNum[T scNum](mem memory.Allocator, str *array.String, to scKind, t arrow.DataType, sel []int32) (arrow.Array, error) {
	n := str.Len()
	valid, nulls := scShareValidity(mem, str)
	buf, o := scAllocValues[T](mem, n)
	clear(o)
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	bitSize := 64
	if to.isInt() {
		bitSize = 8 << (to - skInt8)
	} else if to == skFloat32 {
		bitSize = 32
	}
	err := scForLive(n, sel, vb, func(i int) error {
		s := strings.TrimSpace(str.Value(i))
		switch {
		case to.isInt():
			v, err := strconv.ParseInt(s, 10, bitSize)
			if err != nil {
				return scParseError(str.Value(i), t)
			}
			o[i] = T(v)
		case to.isFloat():
			v, err := strconv.ParseFloat(s, bitSize)
			if err != nil && !scFloatRangeErr(err) {
				return scParseError(str.Value(i), t)
			}
			o[i] = T(v)
		default: // timestamp
			v, ok := scParseTimestamp(s)
			if !ok {
				return scParseError(str.Value(i), t)
			}
			o[i] = T(v)
		}
		return nil
	})
	if err != nil {
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	return scMakeArray(t, n, valid, nulls, buf), nil
}

// scFloatRangeErr: "1e400" parses to ±Inf as Java's parseDouble does.
func scFloatRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func scParseError(s string, t arrow.DataType) error {
	return fmt.Errorf("cannot cast '%s' to %s", s, SQLTypeName(t))
}

// scForLive calls f for every live row whose validity bit is set, in order.
func scForLive(n int, sel []int32, valid []byte, f func(i int) error) error {
	if sel == nil {
		for i := 0; i < n; i++ {
			if valid == nil || bitutil.BitIsSet(valid, i) {
				if err := f(i); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, i := range sel {
		if valid == nil || bitutil.BitIsSet(valid, int(i)) {
			if err := f(int(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// scParseBool accepts Flink's spellings, case-insensitively.
func scParseBool(s string) (bool, bool) {
	for _, t := range [...]string{"true", "t", "yes", "y", "1"} {
		if strings.EqualFold(s, t) {
			return true, true
		}
	}
	for _, f := range [...]string{"false", "f", "no", "n", "0"} {
		if strings.EqualFold(s, f) {
			return false, true
		}
	}
	return false, false
}
