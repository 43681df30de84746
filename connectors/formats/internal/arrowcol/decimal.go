package arrowcol

import "github.com/apache/arrow-go/v18/arrow/decimal128"

// DecNumber is a number scanned for a DECIMAL column (a JSON number, or
// the text of a string field in JSON's number syntax): its value is
// D × 10^exp, where D is the integer formed by its significant digits (the
// mantissa's digits from the first non-zero one on, trailing zeros
// included). One scanner and one rounding serve every format, so they all
// read the same text to the same value.
type DecNumber struct {
	neg  bool
	mant uint64 // D when nd <= 19
	nd   int    // number of digits of D; 0 when the value is zero
	sig  int    // index of D's first digit in the text
	end  int    // index after the mantissa's last digit
	exp  int64
}

// maxDecExp saturates exponents while they are read. It is far beyond
// both any scale and any line length, so a saturated exponent decides
// overflow or underflow exactly as the true one would.
const maxDecExp = 1 << 40

// ScanDecimal reads the number at b[i:] exactly, in JSON's number syntax
// (-?digits[.digits][e[+-]digits]). ok is false if no valid number starts
// there; the caller reports why.
func ScanDecimal(b []byte, i int) (n DecNumber, end int, ok bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		n.neg = true
		j++
	}
	if j >= len(b) {
		return n, 0, false
	}
	switch c := b[j]; {
	case c == '0':
		j++
	case '1' <= c && c <= '9':
		n.sig = j
		for j < len(b) {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			n.mant = n.mant*10 + uint64(c) // wraps beyond 19 digits: unused then
			n.nd++
			j++
		}
	default:
		return n, 0, false
	}
	var frac int64
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			if n.nd == 0 && c != 0 {
				n.sig = j
			}
			if n.nd > 0 || c != 0 {
				n.mant = n.mant*10 + uint64(c)
				n.nd++
			}
			j++
		}
		if j == k {
			return n, 0, false
		}
		frac = int64(j - k)
	}
	n.end = j
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		eneg := false
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			eneg = b[j] == '-'
			j++
		}
		k := j
		for j < len(b) {
			c := b[j] - '0'
			if c > 9 {
				break
			}
			if n.exp < maxDecExp {
				n.exp = n.exp*10 + int64(c)
			}
			j++
		}
		if j == k {
			return n, 0, false
		}
		if eneg {
			n.exp = -n.exp
		}
	}
	n.exp -= frac
	return n, j, true
}

// pow10u holds the powers of ten that fit in a uint64.
var pow10u = func() (p [20]uint64) {
	p[0] = 1
	for k := 1; k < len(p); k++ {
		p[k] = p[k-1] * 10
	}
	return p
}()

// ToDecimal converts n, read from text b, to the unscaled value of a
// DECIMAL(prec, scale), rounding HALF_UP (ties away from zero) when n has
// more fraction digits than scale. ok is false if the result needs more
// than prec digits. It works on the digits, without floats or math/big.
func (n *DecNumber) ToDecimal(b []byte, prec, scale int32) (v decimal128.Num, ok bool) {
	if n.nd == 0 {
		return decimal128.Num{}, true
	}
	// The unscaled value is D × 10^k: keep the first nd+k digits of D and
	// round on the next one.
	k := n.exp + int64(scale)
	keep := int64(n.nd) + k
	if keep > int64(prec) {
		return v, false
	}
	var round bool // the first digit dropped is 5 or more
	if n.nd <= 19 {
		switch {
		case k >= 0:
			v = decimal128.FromU64(n.mant).Mul(decimal128.GetScaleMultiplier(int(k)))
		case -k <= 19:
			p := pow10u[-k]
			v = decimal128.FromU64(n.mant / p)
			round = n.mant%p >= 5*(p/10)
		}
		// else: every digit and the one after them dropped, v = 0.
	} else if keep >= 0 {
		var m uint64
		taken := int64(0)
		for j := n.sig; j < n.end; j++ {
			c := b[j]
			if c == '.' {
				continue
			}
			if taken == keep {
				round = c >= '5'
				break
			}
			dig := uint64(c - '0')
			if taken < 19 {
				m = m*10 + dig
			} else {
				if taken == 19 {
					v = decimal128.FromU64(m)
				}
				v = v.Mul(decimal128.FromU64(10)).Add(decimal128.FromU64(dig))
			}
			taken++
		}
		if taken <= 19 {
			v = decimal128.FromU64(m)
		}
		if k > 0 {
			v = v.Mul(decimal128.GetScaleMultiplier(int(k)))
		}
	}
	// else: D has more than 19 digits, all dropped along with the one
	// after them, v = 0.
	if round {
		v = v.Add(decimal128.FromU64(1))
	}
	if !v.Less(decimal128.GetScaleMultiplier(int(prec))) {
		return v, false
	}
	if n.neg {
		v = v.Negate()
	}
	return v, true
}
