package json

import (
	"fmt"
	"unicode/utf8"
)

// RecordError reports why one line could not be decoded. The decoder has
// appended nothing for that line. Connectors wrap it with the line's
// position in its source, e.g. fmt.Errorf("file %s line %d: %w", ...).
type RecordError struct {
	// Column is the 1-based byte offset in the line where the problem was
	// found; 0 for an empty line.
	Column int
	// Field is the schema column whose value was rejected; empty for errors
	// of JSON syntax.
	Field string
	// Reason says what was wrong, without the field or column.
	Reason string
	// syntax marks errors of JSON syntax, printed with their column.
	syntax bool
}

func (e *RecordError) Error() string {
	switch {
	case e.Field != "":
		return fmt.Sprintf("field %q: %s", e.Field, e.Reason)
	case e.syntax:
		return fmt.Sprintf("invalid JSON at column %d: %s", e.Column, e.Reason)
	default:
		return e.Reason
	}
}

// syntaxError reports a JSON syntax error at line[i] (or at the end).
func syntaxError(line []byte, i int, expected string) *RecordError {
	var reason string
	switch {
	case i >= len(line):
		reason = "unexpected end of line"
		i = len(line)
	case expected != "":
		reason = fmt.Sprintf("expected %s, found %s", expected, quoteByte(line, i))
	default:
		reason = "unexpected " + quoteByte(line, i)
	}
	return &RecordError{Column: i + 1, Reason: reason, syntax: true}
}

// syntaxReason reports a JSON syntax error at line[i] with a given reason.
func syntaxReason(i int, reason string) *RecordError {
	return &RecordError{Column: i + 1, Reason: reason, syntax: true}
}

// invalidUTF8 reports the byte at line[j] that starts no valid UTF-8
// sequence inside a string.
func invalidUTF8(line []byte, j int) *RecordError {
	return &RecordError{Column: j + 1, Reason: fmt.Sprintf("invalid UTF-8 in a string: byte %#02x at column %d", line[j], j+1)}
}

// quoteByte shows the character at line[i] for an error message.
func quoteByte(line []byte, i int) string {
	c := line[i]
	if c < utf8.RuneSelf {
		if c < 0x20 || c == 0x7f {
			return fmt.Sprintf("control character %#02x", c)
		}
		return "'" + string(rune(c)) + "'"
	}
	r, _ := utf8.DecodeRune(line[i:])
	if r == '\uFEFF' {
		return "a UTF-8 byte-order mark (U+FEFF)"
	}
	if r == utf8.RuneError {
		return fmt.Sprintf("byte %#02x", c)
	}
	return "'" + string(r) + "'"
}

// maxShown caps how much of a rejected value an error message repeats.
const maxShown = 40

// shown renders a rejected JSON value as written, shortened if long.
func shown(v []byte) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	if len(v) > maxShown {
		n := maxShown
		for n > 0 && !utf8.RuneStart(v[n]) {
			n--
		}
		return string(v[:n]) + "..."
	}
	return string(v)
}
