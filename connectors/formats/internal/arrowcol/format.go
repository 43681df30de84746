package arrowcol

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// AppendDecimal appends the unscaled value v with scale digits after the
// point, as decimal128.Num.ToString and Java's BigDecimal.toPlainString
// write it ("-12.340", "0.05"), without allocating. A negative scale is
// left to ToString.
func AppendDecimal(dst []byte, v decimal128.Num, scale int32) []byte {
	if scale < 0 {
		return append(dst, v.ToString(scale)...)
	}
	var buf [40]byte
	var digits []byte
	if hi, lo := v.HighBits(), v.LowBits(); hi == 0 && lo <= math.MaxInt64 || hi == -1 && lo > math.MaxInt64 {
		// The usual case: the value fits in 64 bits.
		u := lo
		if hi < 0 {
			dst = append(dst, '-')
			u = -u // two's complement magnitude, also of math.MinInt64
		}
		digits = strconv.AppendUint(buf[:0], u, 10)
	} else {
		if hi < 0 {
			dst = append(dst, '-')
			v = v.Negate()
		}
		digits = appendDigits128(buf[:0], uint64(v.HighBits()), v.LowBits())
	}
	places := int(scale)
	if places == 0 {
		return append(dst, digits...)
	}
	if len(digits) <= places {
		dst = append(dst, '0', '.')
		for k := len(digits); k < places; k++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	at := len(digits) - places
	dst = append(dst, digits[:at]...)
	dst = append(dst, '.')
	return append(dst, digits[at:]...)
}

// appendDigits128 appends the decimal digits of the 128-bit magnitude
// hi:lo, computed 19 at a time.
func appendDigits128(dst []byte, hi, lo uint64) []byte {
	const chunk = 10_000_000_000_000_000_000
	var parts [3]uint64
	n := 0
	for hi != 0 || lo != 0 || n == 0 {
		var r uint64
		hi, r = hi/chunk, hi%chunk
		lo, r = bits.Div64(r, lo, chunk)
		parts[n] = r
		n++
	}
	dst = strconv.AppendUint(dst, parts[n-1], 10)
	for k := n - 2; k >= 0; k-- {
		var pad [19]byte
		s := strconv.AppendUint(pad[:0], parts[k], 10)
		for z := len(s); z < 19; z++ {
			dst = append(dst, '0')
		}
		dst = append(dst, s...)
	}
	return dst
}
