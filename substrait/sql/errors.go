package sql

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clink-dev/clink/connectors"
)

// Pos is the position of a token in the source text.
type Pos struct {
	Offset int // byte offset, 0-based
	Line   int // 1-based
	Col    int // 1-based, counted in runes (a tab is one column)
}

// String returns "line:col".
func (p Pos) String() string { return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col) }

// IsValid reports whether p was set by the parser.
func (p Pos) IsValid() bool { return p.Line > 0 && p.Col > 0 }

// Error is a syntax error, or a semantic error reported against the same
// source with Errorf. Its Error text names the line and column and shows the
// offending source line with a caret under the column:
//
//	line 1:17: expected ')' but found 'FROM'
//	SELECT COUNT(a FROM t
//	               ^
type Error struct {
	Pos Pos
	Msg string
	Src string // the whole source the position refers to; may be empty
}

// Errorf returns an *Error at pos in src. The binder uses it so that
// semantic errors render exactly like syntax errors.
func Errorf(src string, pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Src: src}
}

// An error repeats at most excerptRunes of the offending line, around the
// column, and at most msgBytes of its message (lists of supported options fit): a megabyte of SQL on one
// line (or a megabyte identifier in the message) must not come back as a
// megabyte of error, and rendering it must not cost more than the
// excerpt.
const (
	excerptRunes = 200
	msgBytes     = 1024
	ellipsis     = "..."
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	b.WriteString(shorten(e.Msg, msgBytes))
	line, ok := sourceLine(e.Src, e.Pos.Line)
	if !ok || e.Pos.Col < 1 {
		return b.String()
	}
	line, col, cut := excerpt(line, e.Pos.Col)
	b.WriteByte('\n')
	b.WriteString(line)
	b.WriteByte('\n')
	if cut {
		b.WriteString("   ") // under the leading ellipsis
	}
	// Tabs are copied so the caret lines up whatever the tab width.
	n := 0
	for _, r := range line[min(len(line), len(ellipsis)*btoi(cut)):] {
		if n >= col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		n++
	}
	for ; n < col-1; n++ {
		b.WriteByte(' ')
	}
	b.WriteByte('^')
	return b.String()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// excerpt returns at most excerptRunes runes of line around the 1-based
// rune column col, with an ellipsis where it was cut, and col within the
// excerpt (not counting a leading ellipsis, which cut reports).
func excerpt(line string, col int) (string, int, bool) {
	if len(line) <= excerptRunes { // bytes >= runes: short enough
		return line, col, false
	}
	n := utf8.RuneCountInString(line)
	// In runes; a column past the end (end of input) shows the end.
	start := max(0, min(col-1, n)-excerptRunes/2)
	i, r := 0, 0 // byte offset of rune r
	for r < start {
		_, w := utf8.DecodeRuneInString(line[i:])
		i += w
		r++
	}
	j, k := i, 0
	for k < excerptRunes && j < len(line) {
		_, w := utf8.DecodeRuneInString(line[j:])
		j += w
		k++
	}
	out := line[i:j]
	if j < len(line) {
		out += ellipsis
	}
	if i > 0 {
		return ellipsis + out, col - start, true
	}
	return out, col, false
}

// shorten cuts s to about limit bytes, keeping its start and its end (a
// message's start says what is wrong, its end often what to do).
func shorten(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	head, tail := limit*2/3, limit/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	return s[:head] + ellipsis + s[t:]
}

// sourceLine returns the 1-based line n of src without its line terminator.
func sourceLine(src string, n int) (string, bool) {
	if src == "" || n < 1 {
		return "", false
	}
	for i := 1; ; i++ {
		j := strings.IndexByte(src, '\n')
		if i == n {
			if j >= 0 {
				src = src[:j]
			}
			return strings.TrimSuffix(src, "\r"), true
		}
		if j < 0 {
			return "", false
		}
		src = src[j+1:]
	}
}

// suggest returns the candidate closest to word (case-insensitively) if it
// is within edit distance 2 (1 for words of up to four letters, where two
// edits change too much), else "".
func suggest(word string, candidates []string) string {
	w := strings.ToUpper(word)
	limit := 2
	if len([]rune(w)) <= 4 {
		limit = 1
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := connectors.Distance(w, strings.ToUpper(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
