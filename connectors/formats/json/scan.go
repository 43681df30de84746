package json

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting (the line's object is level 1), as encoding/json
// does, so that both accept the same lines.
const maxDepth = 10000

// strSafe marks the bytes that stand for themselves inside a JSON string
// and need no further check: printable ASCII other than '"' and '\\'.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// keySafe is strSafe plus the bytes of multi-byte UTF-8: keys are only
// compared, so their encoding needs no check.
var keySafe = func() (t [256]bool) {
	t = strSafe
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return t
}()

// Masks for testing eight bytes at once (SWAR).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanPlain returns the index of the first byte at or after j that is not
// strSafe. It tests eight bytes at a time: a byte's top bit in the mask is
// set where it is below 0x20, a quote or a backslash (the subtraction
// borrows) or non-ASCII; borrows only carry upwards from such a byte, so the
// lowest bit set marks the first one.
func scanPlain(line []byte, j int) int {
	for ; j+8 <= len(line); j += 8 {
		x := binary.LittleEndian.Uint64(line[j:])
		q := x ^ (lsb * '"')
		b := x ^ (lsb * '\\')
		if m := ((x - lsb*0x20) | (q - lsb) | (b - lsb) | x) & msb; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for j < len(line) && strSafe[line[j]] {
		j++
	}
	return j
}

// scanKey is scanPlain for keySafe: bytes of multi-byte UTF-8 pass.
func scanKey(line []byte, j int) int {
	for ; j+8 <= len(line); j += 8 {
		x := binary.LittleEndian.Uint64(line[j:])
		q := x ^ (lsb * '"')
		b := x ^ (lsb * '\\')
		if m := ((x - lsb*0x20) | (q - lsb) | (b - lsb)) &^ x & msb; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for j < len(line) && keySafe[line[j]] {
		j++
	}
	return j
}

func skipWS(line []byte, i int) int {
	for i < len(line) {
		c := line[i]
		if c > ' ' || (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			break
		}
		i++
	}
	return i
}

// decodeString parses the JSON string whose opening quote is at line[i] and
// returns its value and the index after the closing quote. The value is a
// subslice of line when the string holds neither escapes nor invalid UTF-8;
// otherwise it is decoded onto the end of buf (returned grown), replacing
// unpaired surrogate escapes with U+FFFD as encoding/json does. Invalid
// UTF-8 is an error (encoding/json would replace it too, silently).
func decodeString(line []byte, i int, buf []byte) (s []byte, end int, _ []byte, err *RecordError) {
	start := i + 1
	j := start
	for j < len(line) {
		c := line[j]
		if strSafe[c] {
			j++
			continue
		}
		if c == '"' {
			return line[start:j], j + 1, buf, nil
		}
		if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRune(line[j:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		j += size
	}
	b0 := len(buf)
	buf = append(buf, line[start:j]...)
	for j < len(line) {
		c := line[j]
		switch {
		case strSafe[c]:
			k := j + 1
			for k < len(line) && strSafe[line[k]] {
				k++
			}
			buf = append(buf, line[j:k]...)
			j = k
		case c == '"':
			return buf[b0:], j + 1, buf, nil
		case c == '\\':
			if j+1 >= len(line) {
				return nil, 0, buf, syntaxError(line, j+1, "")
			}
			switch e := line[j+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r := hex4(line, j+2)
				if r < 0 {
					return nil, 0, buf, badEscape(line, j)
				}
				j += 6
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if j+1 < len(line) && line[j] == '\\' && line[j+1] == 'u' {
						r2 = hex4(line, j+2)
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return nil, 0, buf, badEscape(line, j)
			}
			j += 2
		case c < 0x20:
			return nil, 0, buf, syntaxReason(j, "control character in string")
		default:
			r, size := utf8.DecodeRune(line[j:])
			if r == utf8.RuneError && size == 1 {
				return nil, 0, buf, invalidUTF8(line, j)
			}
			buf = append(buf, line[j:j+size]...)
			j += size
		}
	}
	return nil, 0, buf, syntaxError(line, j, "")
}

func badEscape(line []byte, j int) *RecordError {
	end := min(j+6, len(line))
	if line[j+1] != 'u' {
		end = j + 2
	}
	return syntaxReason(j, "invalid escape "+string(line[j:end]))
}

// hex4 reads the four hex digits at line[i:], or returns -1.
func hex4(line []byte, i int) rune {
	if i+4 > len(line) {
		return -1
	}
	var r rune
	for _, c := range line[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skipString validates the JSON string whose opening quote is at line[i]
// and returns the index after its closing quote.
func skipString(line []byte, i int) (int, *RecordError) {
	j := i + 1
	for {
		// Eight bytes at a time up to a quote, a backslash or a control
		// character (skipped strings are not checked for UTF-8, as keys).
		if j = scanKey(line, j); j >= len(line) {
			break
		}
		c := line[j]
		switch {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			if j+1 >= len(line) {
				return 0, syntaxError(line, j+1, "")
			}
			switch line[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if hex4(line, j+2) < 0 {
					return 0, badEscape(line, j)
				}
				j += 6
			default:
				return 0, badEscape(line, j)
			}
		case c < 0x20:
			return 0, syntaxReason(j, "control character in string")
		default:
			j++
		}
	}
	return 0, syntaxError(line, j, "")
}

// skipValue validates the JSON value starting at line[i], inside a
// container at nesting level depth, and returns the index after it.
func skipValue(line []byte, i, depth int) (int, *RecordError) {
	if i >= len(line) {
		return 0, syntaxError(line, i, "")
	}
	switch c := line[i]; c {
	case '"':
		return skipString(line, i)
	case '{', '[':
		if depth >= maxDepth {
			return 0, syntaxReason(i, "nesting too deep")
		}
		return skipComposite(line, i, depth+1)
	case 't':
		return skipLiteral(line, i, "true")
	case 'f':
		return skipLiteral(line, i, "false")
	case 'n':
		return skipLiteral(line, i, "null")
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			_, end, err := scanNumber(line, i)
			return end, err
		}
		return 0, syntaxError(line, i, "")
	}
}

// skipComposite validates the object or array opening at line[i], at
// nesting level depth.
func skipComposite(line []byte, i, depth int) (int, *RecordError) {
	obj := line[i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	i = skipWS(line, i+1)
	if i < len(line) && line[i] == closer {
		return i + 1, nil
	}
	for {
		var err *RecordError
		if obj {
			if i >= len(line) || line[i] != '"' {
				return 0, syntaxError(line, i, "")
			}
			if i, err = skipString(line, i); err != nil {
				return 0, err
			}
			i = skipWS(line, i)
			if i >= len(line) || line[i] != ':' {
				return 0, syntaxError(line, i, "")
			}
			i = skipWS(line, i+1)
		}
		if i, err = skipValue(line, i, depth); err != nil {
			return 0, err
		}
		i = skipWS(line, i)
		if i >= len(line) {
			return 0, syntaxError(line, i, "")
		}
		switch line[i] {
		case ',':
			i = skipWS(line, i+1)
		case closer:
			return i + 1, nil
		default:
			return 0, syntaxError(line, i, "")
		}
	}
}

func skipLiteral(line []byte, i int, lit string) (int, *RecordError) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(line) || line[i+k] != lit[k] {
			return 0, syntaxError(line, i+k, "")
		}
	}
	return i + len(lit), nil
}
