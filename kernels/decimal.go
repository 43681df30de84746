package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Exact DECIMAL(p, s) arithmetic on Arrow decimal128 values, without
// math/big on the hot path: values are 128-bit two's complement integers
// (scDec); intermediate results that need more room (a product, a dividend
// scaled up for division) are 256-bit magnitudes (u256). Rounding is
// HALF_UP (half away from zero), as Java's BigDecimal.ROUND_HALF_UP in
// Flink.

// scDecMaxPrecision is the largest DECIMAL precision (Flink's and Arrow
// decimal128's).
const scDecMaxPrecision = 38

// scDecMinAdjustedScale is the smallest scale Flink keeps when a result
// type's precision exceeds 38 (LogicalTypeMerging.MINIMUM_ADJUSTED_SCALE).
const scDecMinAdjustedScale = 6

// scDec is a DECIMAL's unscaled value as Arrow stores it: a 128-bit two's
// complement integer, low word first (the layout of decimal128.Num).
type scDec struct {
	lo uint64
	hi int64
}

func decFromI64(v int64) scDec { return scDec{lo: uint64(v), hi: v >> 63} }

func (a scDec) neg() scDec {
	lo := ^a.lo + 1
	hi := ^a.hi
	if lo == 0 {
		hi++
	}
	return scDec{lo: lo, hi: hi}
}

func (a scDec) isNeg() bool  { return a.hi < 0 }
func (a scDec) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a scDec) sign() int {
	switch {
	case a.hi < 0:
		return -1
	case a.isZero():
		return 0
	}
	return 1
}

func decAdd(a, b scDec) scDec {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return scDec{lo: lo, hi: a.hi + b.hi + int64(c)}
}

func decSub(a, b scDec) scDec {
	lo, br := bits.Sub64(a.lo, b.lo, 0)
	return scDec{lo: lo, hi: a.hi - b.hi - int64(br)}
}

// decMulLow is the low 128 bits of a*b: the exact product whenever it fits.
func decMulLow(a, b scDec) scDec {
	hi, lo := bits.Mul64(a.lo, b.lo)
	hi += uint64(a.hi)*b.lo + a.lo*uint64(b.hi)
	return scDec{lo: lo, hi: int64(hi)}
}

func decCmp(a, b scDec) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// mag is |a| as a 256-bit magnitude, and whether a is negative.
func (a scDec) mag() (u256, bool) {
	if a.hi < 0 {
		n := a.neg() // MIN negates to itself; as unsigned it is 2^127, right
		return u256{n.lo, uint64(n.hi)}, true
	}
	return u256{a.lo, uint64(a.hi)}, false
}

// decFromMag is ±m; m must be below 2^127.
func decFromMag(m u256, neg bool) scDec {
	d := scDec{lo: m[0], hi: int64(m[1])}
	if neg {
		return d.neg()
	}
	return d
}

// ---------------------------------------------------------------------------
// 256-bit magnitudes, little-endian 64-bit limbs.

type u256 [4]uint64

// scPow10 holds 10^0 .. 10^77 (10^77 < 2^256).
var scPow10 = func() (t [78]u256) {
	t[0] = u256{1}
	for i := 1; i < len(t); i++ {
		t[i], _ = t[i-1].mul64(10)
	}
	return t
}()

// scPow10Dec holds 10^0 .. 10^38 as decimals.
var scPow10Dec = func() (t [39]scDec) {
	for i := range t {
		t[i] = decFromMag(scPow10[i], false)
	}
	return t
}()

func (a u256) isZero() bool { return a[0]|a[1]|a[2]|a[3] == 0 }

func (a u256) cmp(b u256) int {
	for i := 3; i >= 0; i-- {
		switch {
		case a[i] < b[i]:
			return -1
		case a[i] > b[i]:
			return 1
		}
	}
	return 0
}

func (a u256) add(b u256) (u256, bool) {
	var c uint64
	a[0], c = bits.Add64(a[0], b[0], 0)
	a[1], c = bits.Add64(a[1], b[1], c)
	a[2], c = bits.Add64(a[2], b[2], c)
	a[3], c = bits.Add64(a[3], b[3], c)
	return a, c != 0
}

// sub is a-b for a >= b.
func (a u256) sub(b u256) u256 {
	var c uint64
	a[0], c = bits.Sub64(a[0], b[0], 0)
	a[1], c = bits.Sub64(a[1], b[1], c)
	a[2], c = bits.Sub64(a[2], b[2], c)
	a[3], _ = bits.Sub64(a[3], b[3], c)
	return a
}

func (a u256) mul64(m uint64) (u256, bool) {
	var out u256
	var carry uint64
	for i := 0; i < 4; i++ {
		hi, lo := bits.Mul64(a[i], m)
		var c uint64
		out[i], c = bits.Add64(lo, carry, 0)
		carry = hi + c
	}
	return out, carry != 0
}

// mul is a*b and whether it overflowed 256 bits.
func (a u256) mul(b u256) (u256, bool) {
	if a[2]|a[3]|b[2]|b[3] == 0 && a[1]|b[1] == 0 {
		hi, lo := bits.Mul64(a[0], b[0])
		return u256{lo, hi}, false
	}
	var out [8]uint64
	for i := 0; i < 4; i++ {
		if a[i] == 0 {
			continue
		}
		var carry uint64
		for j := 0; j < 4; j++ {
			hi, lo := bits.Mul64(a[i], b[j])
			var c uint64
			lo, c = bits.Add64(lo, out[i+j], 0)
			hi += c
			lo, c = bits.Add64(lo, carry, 0)
			hi += c
			out[i+j] = lo
			carry = hi
		}
		out[i+4] = carry
	}
	return u256{out[0], out[1], out[2], out[3]}, out[4]|out[5]|out[6]|out[7] != 0
}

func (a u256) mulPow10(k int) (u256, bool) {
	if k == 0 {
		return a, false
	}
	if k >= len(scPow10) {
		return a, !a.isZero()
	}
	return a.mul(scPow10[k])
}

// digitsBelow reports a < 10^p.
func (a u256) digitsBelow(p int) bool { return a.cmp(scPow10[p]) < 0 }

func (a u256) limbs() int {
	n := 4
	for n > 0 && a[n-1] == 0 {
		n--
	}
	return n
}

// divmod is a/b and a%b (b != 0): Knuth's algorithm D on 64-bit limbs, as
// math/big's divBasic does it.
func (a u256) divmod(b u256) (q, r u256) {
	n, m := b.limbs(), a.limbs()
	if a.cmp(b) < 0 {
		return u256{}, a
	}
	if n == 1 {
		var rem uint64
		for i := m - 1; i >= 0; i-- {
			q[i], rem = bits.Div64(rem, a[i], b[0])
		}
		return q, u256{rem}
	}
	s := uint(bits.LeadingZeros64(b[n-1]))
	var v [4]uint64
	for i := n - 1; i > 0; i-- {
		v[i] = b[i]<<s | b[i-1]>>(64-s)
	}
	v[0] = b[0] << s
	var u [5]uint64
	u[m] = a[m-1] >> (64 - s)
	for i := m - 1; i > 0; i-- {
		u[i] = a[i]<<s | a[i-1]>>(64-s)
	}
	u[0] = a[0] << s
	vn1, vn2 := v[n-1], v[n-2]
	for j := m - n; j >= 0; j-- {
		qhat := ^uint64(0)
		ujn := u[j+n]
		if ujn != vn1 {
			var rhat uint64
			qhat, rhat = bits.Div64(ujn, u[j+n-1], vn1)
			x1, x2 := bits.Mul64(qhat, vn2)
			ujn2 := u[j+n-2]
			for x1 > rhat || (x1 == rhat && x2 > ujn2) {
				qhat--
				prev := rhat
				rhat += vn1
				if rhat < prev {
					break
				}
				x1, x2 = bits.Mul64(qhat, vn2)
			}
		}
		// u[j : j+n+1] -= qhat * v
		var borrow, carry uint64
		for i := 0; i < n; i++ {
			hi, lo := bits.Mul64(qhat, v[i])
			var c uint64
			lo, c = bits.Add64(lo, carry, 0)
			carry = hi + c
			u[j+i], c = bits.Sub64(u[j+i], lo, borrow)
			borrow = c
		}
		var c uint64
		u[j+n], c = bits.Sub64(u[j+n], carry, borrow)
		if c != 0 { // qhat was one too large: add v back
			qhat--
			var k uint64
			for i := 0; i < n; i++ {
				u[j+i], k = bits.Add64(u[j+i], v[i], k)
			}
			u[j+n] += k
		}
		q[j] = qhat
	}
	for i := 0; i < n; i++ { // shifts by 64 give 0: s = 0 needs no case
		r[i] = u[i]>>s | u[i+1]<<(64-s)
	}
	return q, r
}

// roundDiv is a/b rounded half up (b != 0, b < 2^255).
func (a u256) roundDiv(b u256) u256 {
	q, r := a.divmod(b)
	r2, _ := r.add(r)
	if r2.cmp(b) >= 0 {
		q, _ = q.add(u256{1})
	}
	return q
}

// reduceScale divides a by 10^k, rounding half up.
func (a u256) reduceScale(k int) u256 {
	if k <= 0 {
		return a
	}
	if k >= len(scPow10) {
		return u256{}
	}
	return a.roundDiv(scPow10[k])
}

func (a u256) big() *big.Int {
	w := make([]big.Word, 0, 4)
	for _, l := range a {
		w = append(w, big.Word(l))
	}
	return new(big.Int).SetBits(w)
}

// ---------------------------------------------------------------------------
// Types

// scDecType is DECIMAL(p, s).
func scDecType(p, s int) *arrow.Decimal128Type {
	return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
}

func scDecPS(t arrow.DataType) (int, int) {
	d := t.(*arrow.Decimal128Type)
	return int(d.Precision), int(d.Scale)
}

// scDecOfInt is the DECIMAL an integer kind converts to exactly (Flink:
// TINYINT → DECIMAL(3, 0), SMALLINT (5, 0), INT (10, 0), BIGINT (19, 0)).
func scDecOfInt(k scKind) *arrow.Decimal128Type {
	switch k {
	case skInt8:
		return scDecType(3, 0)
	case skInt16:
		return scDecType(5, 0)
	case skInt32:
		return scDecType(10, 0)
	}
	return scDecType(19, 0)
}

// scDecAdjust is Flink's adjustPrecisionScale: a precision above 38 is
// capped, giving up fractional digits (but keeping at least 6 of them,
// or all if there were fewer) to keep the integral ones.
func scDecAdjust(p, s int) *arrow.Decimal128Type {
	if p <= scDecMaxPrecision {
		return scDecType(p, s)
	}
	digits := p - s
	minScale := min(s, scDecMinAdjustedScale)
	return scDecType(scDecMaxPrecision, max(scDecMaxPrecision-digits, minScale))
}

// scDecResultType is the result type of a decimal arithmetic operator
// (Flink's LogicalTypeMerging).
func scDecResultType(op scArithOp, p1, s1, p2, s2 int) *arrow.Decimal128Type {
	switch op {
	case scAdd, scSub:
		s := max(s1, s2)
		return scDecAdjust(max(p1-s1, p2-s2)+s+1, s)
	case scMul:
		return scDecAdjust(p1+p2+1, s1+s2)
	case scDiv:
		s := max(scDecMinAdjustedScale, s1+p2+1)
		return scDecAdjust(p1-s1+s2+s, s)
	default: // scMod
		s := max(s1, s2)
		return scDecAdjust(min(p1-s1, p2-s2)+s, s)
	}
}

// scDecCommonType is the type two decimals combine into for comparison,
// CASE, COALESCE and IN (Flink's findCommonType: whole digits and scale
// each the larger, whole digits kept first when they exceed 38).
func scDecCommonType(p1, s1, p2, s2 int) *arrow.Decimal128Type {
	d := min(max(p1-s1, p2-s2), scDecMaxPrecision)
	s := min(max(s1, s2), scDecMaxPrecision-d)
	return scDecType(d+s, s)
}

// scDecRoundType is ROUND(DECIMAL(p, s), r)'s type (Flink's
// findRoundDecimalType): rounding may add a digit.
func scDecRoundType(p, s, r int) *arrow.Decimal128Type {
	switch {
	case r >= s:
		return scDecType(p, s)
	case r < 0:
		return scDecType(min(scDecMaxPrecision, 1+p-s), 0)
	}
	return scDecType(1+p-s+r, r)
}

// ---------------------------------------------------------------------------
// Text

// decAppend appends v at scale s as plain decimal text with exactly s
// fractional digits (BigDecimal.toPlainString): "1.50", "-0.05", "12".
func decAppend(dst []byte, v scDec, s int) []byte {
	m, neg := v.mag()
	var buf [80]byte
	i := len(buf)
	// Peel off 19 digits at a time.
	for {
		var rem uint64
		var q u256
		for k := 3; k >= 0; k-- {
			q[k], rem = bits.Div64(rem, m[k], 1e19)
		}
		m = q
		if m.isZero() {
			for rem != 0 {
				i--
				buf[i] = byte('0' + rem%10)
				rem /= 10
			}
			break
		}
		for k := 0; k < 19; k++ {
			i--
			buf[i] = byte('0' + rem%10)
			rem /= 10
		}
	}
	digits := buf[i:]
	if neg {
		dst = append(dst, '-')
	}
	if s <= 0 {
		if len(digits) == 0 {
			return append(dst, '0')
		}
		return append(dst, digits...)
	}
	if len(digits) <= s {
		dst = append(dst, '0', '.')
		for k := len(digits); k < s; k++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-s]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-s:]...)
}

func decString(v scDec, s int) string { return string(decAppend(nil, v, s)) }

// decParse status.
const (
	decOK = iota
	decSyntax
	decOverflow
)

// decParse reads decimal text ([+-]digits[.digits][e[+-]digits], at least one
// digit, no spaces) as DECIMAL(p, s), rounding extra fractional digits half
// up. It does not allocate.
func decParse(t []byte, p, s int) (scDec, int) {
	i := 0
	neg := false
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		neg = t[i] == '-'
		i++
	}
	intStart := i
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(t) && t[i] == '.' {
		i++
		fracStart = i
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	nInt, nFrac := intEnd-intStart, fracEnd-fracStart
	if nInt+nFrac == 0 {
		return scDec{}, decSyntax
	}
	exp := 0
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		eneg := false
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			eneg = t[i] == '-'
			i++
		}
		if i == len(t) {
			return scDec{}, decSyntax
		}
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			if exp < 100000 {
				exp = exp*10 + int(t[i]-'0')
			}
			i++
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(t) {
		return scDec{}, decSyntax
	}
	digit := func(k int) uint64 {
		if k < nInt {
			return uint64(t[intStart+k] - '0')
		}
		return uint64(t[fracStart+k-nInt] - '0')
	}
	total := nInt + nFrac
	lz := 0
	for lz < total && digit(lz) == 0 {
		lz++
	}
	// value = digits[lz:total] * 10^(exp - nFrac); unscaled = value * 10^s.
	shift := exp - nFrac + s
	sig := total - lz
	keep := sig
	if shift < 0 {
		keep = sig + shift
	}
	if keep > scDecMaxPrecision+1 {
		return scDec{}, decOverflow
	}
	var m u256
	for k := 0; k < keep; k++ {
		m, _ = m.mul64(10)
		m, _ = m.add(u256{digit(lz + k)})
	}
	if shift < 0 && keep >= 0 && keep < sig && digit(lz+keep) >= 5 {
		m, _ = m.add(u256{1})
	}
	if shift > 0 && !m.isZero() {
		var of bool
		if m, of = m.mulPow10(shift); of {
			return scDec{}, decOverflow
		}
	}
	if !m.digitsBelow(p) {
		return scDec{}, decOverflow
	}
	return decFromMag(m, neg && !m.isZero()), decOK
}

// decFromFloat converts f to DECIMAL(p, s) through its shortest decimal
// representation (Java's BigDecimal.valueOf(double)), rounding half up.
func decFromFloat(f float64, bitSize, p, s int) (scDec, int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return scDec{}, decSyntax
	}
	var buf [32]byte
	return decParse(strconv.AppendFloat(buf[:0], f, 'e', -1, bitSize), p, s)
}

// decToFloat is v / 10^s rounded to the nearest double (BigDecimal.doubleValue).
func decToFloat(v scDec, s int) float64 {
	small := v.hi == 0 && v.lo < 1<<53 || v.hi == -1 && v.lo > math.MaxUint64-1<<53
	if small && s <= 22 {
		return float64(int64(v.lo)) / scPow10Float[s]
	}
	var buf [96]byte
	t := decAppend(buf[:0], v, s)
	f, _ := strconv.ParseFloat(unsafe.String(unsafe.SliceData(t), len(t)), 64)
	return f
}

var scPow10Float = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// decRescale converts v from scale s1 to DECIMAL(p, s2), rounding half up;
// false if the result needs more than p digits.
func decRescale(v scDec, s1, p, s2 int) (scDec, bool) {
	m, neg := v.mag()
	if s2 >= s1 {
		var of bool
		if m, of = m.mulPow10(s2 - s1); of {
			return scDec{}, false
		}
	} else {
		m = m.reduceScale(s1 - s2)
	}
	if !m.digitsBelow(p) {
		return scDec{}, false
	}
	return decFromMag(m, neg && !m.isZero()), true
}

// DecimalLiteral parses an exact numeric literal ("1.50", "-3", ".5") as a
// DECIMAL constant. Its type is DECIMAL(p, s) with s the digits after the
// point and p all the digits written, at least 1 and at least s, as Calcite
// types it: "1.50" is DECIMAL(3, 2), "0.001" DECIMAL(4, 3). Leading zeros
// beyond 38 digits are dropped; more than 38 significant digits is an error.
func DecimalLiteral(text string) (Expr, error) {
	t := []byte(text)
	body := t
	if len(body) > 0 && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	digits, scale, point := 0, 0, false
	for _, c := range body {
		switch {
		case c >= '0' && c <= '9':
			digits++
			if point {
				scale++
			}
		case c == '.' && !point:
			point = true
		default:
			return nil, fmt.Errorf("invalid decimal literal %q", text)
		}
	}
	if digits == 0 {
		return nil, fmt.Errorf("invalid decimal literal %q", text)
	}
	p := digits
	if p > scDecMaxPrecision {
		lz := 0 // leading zeros of the whole number
		for _, c := range body {
			if c == '0' {
				lz++
			} else if c != '.' {
				break
			}
		}
		p = max(digits-lz, scale, 1)
	}
	if p > scDecMaxPrecision {
		return nil, fmt.Errorf("decimal literal %s has more than %d digits", text, scDecMaxPrecision)
	}
	v, st := decParse(t, p, scale)
	if st != decOK {
		return nil, fmt.Errorf("invalid decimal literal %q", text)
	}
	typ := scDecType(p, scale)
	return &exprLit{typ: typ, kind: skDecimal, d: v}, nil
}

// scDecOverflowErr is the error for a value that does not fit DECIMAL type
// t; value is the exact value, printed rounded half up to t's scale.
func scDecOverflowErr(what string, t arrow.DataType, value *big.Rat) error {
	p, s := scDecPS(t)
	return fmt.Errorf("%s: DECIMAL(%d,%d) overflow: value %s", what, p, s, value.FloatString(s))
}

// decRat is v / 10^s, exactly (for error messages).
func decRat(v scDec, s int) *big.Rat {
	m, neg := v.mag()
	b := m.big()
	if neg {
		b.Neg(b)
	}
	return new(big.Rat).SetFrac(b, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil))
}

// scDecLiteralValue converts a Go value to DECIMAL t (see Literal).
func scDecLiteralValue(v any, t arrow.DataType) (scDec, bool) {
	p, s := scDecPS(t)
	var iv int64
	switch x := v.(type) {
	case int:
		iv = int64(x)
	case int8:
		iv = int64(x)
	case int16:
		iv = int64(x)
	case int32:
		iv = int64(x)
	case int64:
		iv = x
	case float32:
		d, st := decFromFloat(float64(x), 32, p, s)
		return d, st == decOK
	case float64:
		d, st := decFromFloat(x, 64, p, s)
		return d, st == decOK
	case string:
		d, st := decParse([]byte(strings.TrimSpace(x)), p, s)
		return d, st == decOK
	case decimal128.Num:
		d := scDec{lo: x.LowBits(), hi: x.HighBits()}
		return decRescale(d, s, p, s)
	default:
		return scDec{}, false
	}
	return decRescale(decFromI64(iv), 0, p, s)
}
