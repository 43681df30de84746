package kernels

import (
	"fmt"
	"math/big"
	"math/bits"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Casts to and from DECIMAL, and BOOLEAN ↔ numeric.

// evalDecimal casts a (the evaluated operand) when either side is a
// DECIMAL. Only live, valid rows are converted where a row can fail.
func (c *castExpr) evalDecimal(mem memory.Allocator, a arrow.Array, sel []int32) (arrow.Array, error) {
	n := a.Len()
	valid, nulls := scShareValidity(mem, a)
	var vb []byte
	if valid != nil {
		vb = valid.Bytes()
	}
	rows := scLiveValid(n, sel, vb)
	fail := func(buf *memory.Buffer, err error) (arrow.Array, error) {
		buf.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	if c.from == skDecimal && c.to == skString {
		_, s := scDecPS(c.e.Type())
		src := scValues[scDec](a)
		w := newScStrWriter(mem, n, n*8)
		for i, v := range src {
			if vb == nil || bitutil.BitIsSet(vb, i) {
				d := decAppend(w.reserve(48), v, s)
				w.n += len(d)
			}
			w.endRow(i)
		}
		return w.finish(c.typ, valid, nulls), nil
	}
	if c.from == skDecimal && c.to == skBool {
		src := scValues[scDec](a)
		buf, out := scAllocBitmap(mem, n)
		for w := range scWords(n) {
			var word uint64
			for k := w * 64; k < min(n, w*64+64); k++ {
				word |= scBit(!src[k].isZero()) << uint(k-w*64)
			}
			scStoreWord(out, w, word)
		}
		return scMakeArray(c.typ, n, valid, nulls, buf), nil
	}
	if c.from == skDecimal && c.to.isFloat() {
		_, s := scDecPS(c.e.Type())
		src := scValues[scDec](a)
		if c.to == skFloat32 {
			buf, o := scAllocValues[float32](mem, n)
			for _, i := range rows {
				o[i] = float32(decToFloat(src[i], s))
			}
			return scMakeArray(c.typ, n, valid, nulls, buf), nil
		}
		buf, o := scAllocValues[float64](mem, n)
		for _, i := range rows {
			o[i] = decToFloat(src[i], s)
		}
		return scMakeArray(c.typ, n, valid, nulls, buf), nil
	}
	if c.from == skDecimal && c.to.isInt() {
		_, s := scDecPS(c.e.Type())
		src := scValues[scDec](a)
		lo, hi := c.to.intRange()
		buf, o := scAllocValues[int64](mem, n)
		for _, i := range rows {
			v, ok := decTrunc(src[i], s)
			if !ok || v < lo || v > hi {
				return fail(buf, fmt.Errorf("%s: value %s out of range for %s", c, decString(src[i], s), SQLTypeName(c.typ)))
			}
			o[i] = v
		}
		if c.to == skInt64 {
			return scMakeArray(c.typ, n, valid, nulls, buf), nil
		}
		wide := scMakeArray(scTypeOf(skInt64), n, valid, nulls, buf)
		defer wide.Release()
		return scCastNumeric(mem, wide, skInt64, c.to, c.typ, nil), nil
	}

	// → DECIMAL(p, s)
	p, s := scDecPS(c.typ)
	buf, o := scAllocValues[scDec](mem, n)
	overflow := func(v *big.Rat) (arrow.Array, error) {
		return fail(buf, scDecOverflowErr(c.String(), c.typ, v))
	}
	switch {
	case c.from == skDecimal:
		p1, s1 := scDecPS(c.e.Type())
		src := scValues[scDec](a)
		if s >= s1 && p-s >= p1-s1 { // widening: exact, cannot overflow
			m := scPow10Dec[s-s1]
			for _, i := range rows {
				o[i] = decMulLow(src[i], m)
			}
			break
		}
		for _, i := range rows {
			v, ok := decRescale(src[i], s1, p, s)
			if !ok {
				return overflow(decRat(src[i], s1))
			}
			o[i] = v
		}
	case c.from.isInt():
		var src []int64
		if c.from == skInt64 {
			src = scValues[int64](a)
		} else {
			wide := scCastNumeric(mem, a, c.from, skInt64, scTypeOf(skInt64), nil)
			defer wide.Release()
			src = scValues[int64](wide)
		}
		m := scPow10Dec[s]
		safe := int(scDecOfInt(c.from).Precision)+s <= p
		for _, i := range rows {
			if safe {
				o[i] = decMulLow(decFromI64(src[i]), m)
				continue
			}
			v, ok := decRescale(decFromI64(src[i]), 0, p, s)
			if !ok {
				return overflow(new(big.Rat).SetInt64(src[i]))
			}
			o[i] = v
		}
	case c.from.isFloat():
		bitSize := c.from.floatBits()
		var get func(i int32) float64
		if c.from == skFloat32 {
			v := scValues[float32](a)
			get = func(i int32) float64 { return float64(v[i]) }
		} else {
			v := scValues[float64](a)
			get = func(i int32) float64 { return v[i] }
		}
		for _, i := range rows {
			f := get(i)
			v, st := decFromFloat(f, bitSize, p, s)
			switch st {
			case decSyntax:
				return fail(buf, fmt.Errorf("%s: cannot cast %s to %s", c, string(scAppendJavaFloat(nil, f, bitSize)), SQLTypeName(c.typ)))
			case decOverflow:
				r, _ := new(big.Rat).SetString(string(scAppendJavaFloat(nil, f, bitSize)))
				if r == nil {
					r = new(big.Rat).SetFloat64(f)
				}
				return overflow(r)
			}
			o[i] = v
		}
	case c.from == skString:
		str := a.(*array.String)
		for _, i := range rows {
			t := strings.TrimSpace(str.Value(int(i)))
			v, st := decParse([]byte(t), p, s)
			switch st {
			case decSyntax:
				return fail(buf, scParseError(str.Value(int(i)), c.typ))
			case decOverflow:
				r, ok := new(big.Rat).SetString(t)
				if !ok {
					return fail(buf, scParseError(str.Value(int(i)), c.typ))
				}
				return overflow(r)
			}
			o[i] = v
		}
	case c.from == skBool:
		if p-s < 1 {
			for _, i := range rows {
				if a.(*array.Boolean).Value(int(i)) {
					return overflow(big.NewRat(1, 1))
				}
			}
		}
		one := scPow10Dec[s]
		x := scBitmapBytes(a, 1)
		for _, i := range rows {
			o[i] = scDec{}
			if bitutil.BitIsSet(x, int(i)) {
				o[i] = one
			}
		}
	}
	return scMakeArray(c.typ, n, valid, nulls, buf), nil
}

// decTrunc is the integer part of v/10^s (toward zero), if it fits an int64.
func decTrunc(v scDec, s int) (int64, bool) {
	m, neg := v.mag()
	if s > 0 {
		if s <= 19 && m[2]|m[3] == 0 {
			d := scPow10[s][0]
			var rem uint64
			m[1], rem = bits.Div64(0, m[1], d)
			m[0], _ = bits.Div64(rem, m[0], d)
		} else {
			m, _ = m.divmod(scPow10[s])
		}
	}
	if m[1]|m[2]|m[3] != 0 || m[0] > 1<<63 || m[0] == 1<<63 && !neg {
		return 0, false
	}
	if neg {
		return -int64(m[0]), true
	}
	return int64(m[0]), true
}

// scCastBoolToNum is TRUE → 1, FALSE → 0.
func scCastBoolToNum(mem memory.Allocator, a arrow.Array, to scKind, t arrow.DataType) arrow.Array {
	switch to {
	case skInt8:
		return scBoolToNum[int8](mem, a, t)
	case skInt16:
		return scBoolToNum[int16](mem, a, t)
	case skInt32:
		return scBoolToNum[int32](mem, a, t)
	case skInt64:
		return scBoolToNum[int64](mem, a, t)
	case skFloat32:
		return scBoolToNum[float32](mem, a, t)
	}
	return scBoolToNum[float64](mem, a, t)
}

func scBoolToNum[T scNum](mem memory.Allocator, a arrow.Array, t arrow.DataType) arrow.Array {
	n := a.Len()
	valid, nulls := scShareValidity(mem, a)
	buf, o := scAllocValues[T](mem, n)
	x := scBitmapBytes(a, 1)
	for i := range o {
		o[i] = T(scBit(bitutil.BitIsSet(x, i)))
	}
	return scMakeArray(t, n, valid, nulls, buf)
}

// scCastNumToBool is x <> 0 (NaN is TRUE, as Java's d != 0).
func scCastNumToBool(mem memory.Allocator, a arrow.Array, from scKind, t arrow.DataType) arrow.Array {
	switch from {
	case skInt8:
		return scNumToBool[int8](mem, a, t)
	case skInt16:
		return scNumToBool[int16](mem, a, t)
	case skInt32:
		return scNumToBool[int32](mem, a, t)
	case skInt64:
		return scNumToBool[int64](mem, a, t)
	case skFloat32:
		return scNumToBool[float32](mem, a, t)
	}
	return scNumToBool[float64](mem, a, t)
}

func scNumToBool[T scNum](mem memory.Allocator, a arrow.Array, t arrow.DataType) arrow.Array {
	n := a.Len()
	valid, nulls := scShareValidity(mem, a)
	buf, out := scAllocBitmap(mem, n)
	src := scValues[T](a)
	n8 := n &^ 7
	scCmpBytesVS(scNe, out[:n8/8], src[:n8], 0)
	if n8 < n {
		var last byte
		for i := n8; i < n; i++ {
			last |= byte(scBit(src[i] != 0)) << (i - n8)
		}
		out[n8/8] = last
	}
	return scMakeArray(t, n, valid, nulls, buf)
}
