package sql

import (
	"fmt"
	"strconv"
	"strings"

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

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("line ")
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	b.WriteString(e.Msg)
	line, ok := sourceLine(e.Src, e.Pos.Line)
	if !ok || e.Pos.Col < 1 {
		return b.String()
	}
	b.WriteByte('\n')
	b.WriteString(line)
	b.WriteByte('\n')
	// Tabs are copied so the caret lines up whatever the tab width.
	n := 0
	for _, r := range line {
		if n >= e.Pos.Col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		n++
	}
	for ; n < e.Pos.Col-1; n++ {
		b.WriteByte(' ')
	}
	b.WriteByte('^')
	return b.String()
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
