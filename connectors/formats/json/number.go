package json

import (
	"encoding/binary"
	"math"
	"strconv"
	"unsafe"
)

// number is a scanned JSON number: its value is mant × 10^exp, plus a
// remainder r with 0 < r < 10^exp when trunc is set (significant digits
// beyond the 19th that did not fit in mant).
type number struct {
	mant  uint64
	exp   int
	neg   bool
	trunc bool
	isInt bool // written without fraction or exponent
}

// maxExp clamps exponents; any value beyond it is out of every range we
// convert to, and clamping keeps the comparisons below exact.
const maxExp = 1 << 20

// scanNumber validates the JSON number starting at line[i] and returns it
// with the index after it.
func scanNumber(line []byte, i int) (n number, end int, _ *RecordError) {
	j := i
	if line[j] == '-' {
		n.neg = true
		j++
	}
	if j >= len(line) {
		return n, 0, syntaxError(line, j, "")
	}
	nd := 0 // significant digits seen
	switch c := line[j]; {
	case c == '0':
		j++
	case '1' <= c && c <= '9':
		for j < len(line) {
			c := line[j] - '0'
			if c > 9 {
				break
			}
			if nd < 19 {
				n.mant = n.mant*10 + uint64(c)
			} else {
				n.exp++
				if c != 0 {
					n.trunc = true
				}
			}
			nd++
			j++
		}
	default:
		return n, 0, syntaxError(line, j, "")
	}
	n.isInt = true
	if j < len(line) && line[j] == '.' {
		n.isInt = false
		j++
		k := j
		for j < len(line) {
			c := line[j] - '0'
			if c > 9 {
				break
			}
			if nd < 19 {
				if c != 0 || nd > 0 {
					nd++
				}
				n.mant = n.mant*10 + uint64(c)
				n.exp--
			} else if c != 0 {
				n.trunc = true
			}
			j++
		}
		if j == k {
			return n, 0, syntaxError(line, j, "")
		}
	}
	if j < len(line) && (line[j] == 'e' || line[j] == 'E') {
		n.isInt = false
		j++
		eneg := false
		if j < len(line) && (line[j] == '+' || line[j] == '-') {
			eneg = line[j] == '-'
			j++
		}
		k := j
		e := 0
		for j < len(line) {
			c := line[j] - '0'
			if c > 9 {
				break
			}
			if e < maxExp {
				e = e*10 + int(c)
			}
			j++
		}
		if j == k {
			return n, 0, syntaxError(line, j, "")
		}
		if eneg {
			e = -e
		}
		n.exp = max(-maxExp, min(maxExp, n.exp+e))
	}
	return n, j, nil
}

// eightDigits reports whether the eight bytes loaded little-endian into x
// are all ASCII digits.
func eightDigits(x uint64) bool {
	return ((x+0x4646464646464646)|(x-0x3030303030303030))&0x8080808080808080 == 0
}

// parseEight converts eight ASCII digits loaded little-endian (the first
// digit in the low byte) with three multiplications instead of eight
// dependent ones.
func parseEight(x uint64) uint64 {
	const mask = 0x000000FF000000FF
	const mul1 = 100 + 1000000<<32
	const mul2 = 1 + 10000<<32
	x -= 0x3030303030303030
	x = x*10 + x>>8
	return (x&mask*mul1 + (x>>16)&mask*mul2) >> 32
}

// fastInt parses the common integer: optional minus and up to 18 digits,
// not followed by a fraction or exponent. ok is false for anything else,
// which scanNumber then handles (and rejects if malformed).
func fastInt(line []byte, i int) (v int64, end int, ok bool) {
	j := i
	if line[j] == '-' {
		j++
	}
	s := j
	var m uint64
	if j+8 <= len(line) {
		if x := binary.LittleEndian.Uint64(line[j:]); eightDigits(x) {
			m = parseEight(x)
			j += 8
		}
	}
	for j < len(line) {
		c := line[j] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
		j++
	}
	if n := j - s; n == 0 || n > 18 || (n > 1 && line[s] == '0') {
		return 0, 0, false
	}
	if j < len(line) && (line[j] == '.' || line[j]|0x20 == 'e') {
		return 0, 0, false
	}
	v = int64(m)
	if s != i {
		v = -v
	}
	return v, j, true
}

// fastFloat parses the common float: optional minus, digits, optional
// fraction, no exponent, at most 19 digits, the value exact by Clinger's
// fast path. ok is false for anything else, which scanNumber and toFloat64
// then handle.
func fastFloat(line []byte, i int) (f float64, end int, ok bool) {
	j := i
	if line[j] == '-' {
		j++
	}
	s := j
	var m uint64
	for j < len(line) {
		c := line[j] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
		j++
	}
	nInt := j - s
	if nInt == 0 || (nInt > 1 && line[s] == '0') {
		return 0, 0, false
	}
	nFrac := 0
	if j < len(line) && line[j] == '.' {
		j++
		fs := j
		for j < len(line) {
			c := line[j] - '0'
			if c > 9 {
				break
			}
			m = m*10 + uint64(c)
			j++
		}
		if nFrac = j - fs; nFrac == 0 {
			return 0, 0, false
		}
	}
	if nInt+nFrac > 19 || m > 1<<53 || (j < len(line) && line[j]|0x20 == 'e') {
		return 0, 0, false
	}
	f = float64(m)
	if nFrac > 0 {
		f /= pow10[nFrac] // nFrac <= 19: exact power
	}
	if s != i {
		f = -f
	}
	return f, j, true
}

// Outcomes of converting a number to an integer.
const (
	intOK = iota
	intFraction
	intRange
)

// toInt converts n to an int64 if its exact value is an integer in range.
func (n *number) toInt() (int64, int) {
	mant, exp := n.mant, n.exp
	if n.trunc {
		if exp > 0 {
			return 0, intRange
		}
		return 0, intFraction
	}
	if mant == 0 {
		return 0, intOK
	}
	for exp < 0 && mant%10 == 0 {
		mant /= 10
		exp++
	}
	if exp < 0 {
		return 0, intFraction
	}
	for ; exp > 0; exp-- {
		if mant > math.MaxUint64/10 {
			return 0, intRange
		}
		mant *= 10
	}
	if n.neg {
		if mant > 1<<63 {
			return 0, intRange
		}
		return int64(-mant), intOK
	}
	if mant > math.MaxInt64 {
		return 0, intRange
	}
	return int64(mant), intOK
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// toFloat64 converts n, written as raw, to the float64 nearest to it. When
// mantissa and power of ten are both exact in a float64, one correctly
// rounded multiplication or division gives the answer (Clinger's fast path);
// otherwise strconv does the work.
func (n *number) toFloat64(raw []byte) (float64, bool) {
	if !n.trunc && n.mant <= 1<<53 && n.exp >= -22 && n.exp <= 22 {
		f := float64(n.mant)
		if n.exp > 0 {
			f *= pow10[n.exp]
		} else if n.exp < 0 {
			f /= pow10[-n.exp]
		}
		if n.neg {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(bytesString(raw), 64)
	return f, err == nil
}

// toFloat32 converts n, written as raw, to the nearest float32, rounding
// once (converting through float64 could round twice).
func (n *number) toFloat32(raw []byte) (float32, bool) {
	if !n.trunc && n.exp == 0 && n.mant <= 1<<24 {
		f := float32(n.mant)
		if n.neg {
			f = -f
		}
		return f, true
	}
	f, err := strconv.ParseFloat(bytesString(raw), 32)
	return float32(f), err == nil
}

// bytesString views b as a string without copying. Only for callees that
// do not retain it: strconv copies its input into any error it returns.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
