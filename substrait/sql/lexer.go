package sql

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokenKind uint8

const (
	tokEOF    tokenKind = iota
	tokIdent            // unquoted identifier or keyword
	tokQuoted           // `quoted` or "quoted" identifier
	tokString           // 'string literal'
	tokInt              // integer literal: digits only
	tokNumber           // decimal or approximate literal: 1.5, .5, 1e3
	tokOp               // operator or punctuation
)

type token struct {
	kind tokenKind
	text string // exact source text
	val  string // unescaped value of a quoted identifier or string literal
	// kw is the upper-cased text of an all-ASCII unquoted identifier, used
	// to match keywords; it is empty otherwise so that no non-ASCII spelling
	// can case-fold into a keyword.
	kw  string
	pos Pos
}

// lexer turns source text into tokens. It tracks line and rune column as it
// goes so every token knows its position without a second pass.
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func (l *lexer) pos() Pos { return Pos{Offset: l.off, Line: l.line, Col: l.col} }

func (l *lexer) peekRune(ahead int) rune {
	off := l.off
	for ; ahead > 0 && off < len(l.src); ahead-- {
		_, n := utf8.DecodeRuneInString(l.src[off:])
		off += n
	}
	if off >= len(l.src) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(l.src[off:])
	return r
}

func (l *lexer) advance() {
	if l.off >= len(l.src) {
		return
	}
	r, n := utf8.DecodeRuneInString(l.src[l.off:])
	l.off += n
	if r == '\n' {
		l.line++
		l.col = 1
	} else {
		l.col++
	}
}

// lex returns the tokens of src, ending with a tokEOF placed just after the
// last real token (so "unexpected end of input" points at where more text
// was expected rather than at trailing blank lines).
func lex(src string) ([]token, error) {
	l := &lexer{src: src, line: 1, col: 1}
	toks := make([]token, 0, len(src)/4+1)
	end := l.pos()
	for {
		if err := l.skipSpace(); err != nil {
			return nil, err
		}
		if l.off >= len(src) {
			break
		}
		tok, err := l.next()
		if err != nil {
			return nil, err
		}
		toks = append(toks, tok)
		end = l.pos()
	}
	return append(toks, token{kind: tokEOF, pos: end}), nil
}

func (l *lexer) skipSpace() error {
	for l.off < len(l.src) {
		r := l.peekRune(0)
		switch {
		case unicode.IsSpace(r):
			l.advance()
		case r == '-' && l.peekRune(1) == '-':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance()
			}
		case r == '/' && l.peekRune(1) == '*':
			start := l.pos()
			l.advance()
			l.advance()
			for {
				if l.off >= len(l.src) {
					return Errorf(l.src, start, "unterminated comment")
				}
				if strings.HasPrefix(l.src[l.off:], "*/") {
					l.advance()
					l.advance()
					break
				}
				l.advance()
			}
		default:
			return nil
		}
	}
	return nil
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func isIdentPart(r rune) bool {
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func (l *lexer) next() (token, error) {
	start := l.pos()
	r := l.peekRune(0)
	switch {
	case isIdentStart(r):
		for isIdentPart(l.peekRune(0)) {
			l.advance()
		}
		text := l.src[start.Offset:l.off]
		t := token{kind: tokIdent, text: text, pos: start}
		if isASCII(text) {
			t.kw = asciiUpper(text)
		}
		return t, nil
	case r == '`' || r == '"':
		val, err := l.quoted(r)
		if err != nil {
			return token{}, err
		}
		if val == "" {
			return token{}, Errorf(l.src, start, "empty quoted identifier")
		}
		return token{kind: tokQuoted, text: l.src[start.Offset:l.off], val: val, pos: start}, nil
	case r == '\'':
		val, err := l.quoted(r)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, text: l.src[start.Offset:l.off], val: val, pos: start}, nil
	case isDigit(r) || r == '.' && isDigit(l.peekRune(1)):
		return l.number()
	}
	for _, op := range [...]string{"<>", "<=", ">=", "!=", "||"} {
		if strings.HasPrefix(l.src[l.off:], op) {
			l.advance()
			l.advance()
			return token{kind: tokOp, text: op, pos: start}, nil
		}
	}
	if strings.ContainsRune("(),;.*+-/%=<>", r) {
		l.advance()
		return token{kind: tokOp, text: string(r), pos: start}, nil
	}
	if _, n := utf8.DecodeRuneInString(l.src[l.off:]); r == utf8.RuneError && n == 1 {
		return token{}, Errorf(l.src, start, "invalid UTF-8 byte %#x", l.src[l.off])
	}
	return token{}, Errorf(l.src, start, "unexpected character %q", r)
}

// quoted scans a literal or identifier delimited by q, where a doubled q
// stands for one q, and returns its unescaped value.
func (l *lexer) quoted(q rune) (string, error) {
	start := l.pos()
	l.advance()
	var b strings.Builder
	from := l.off
	for {
		if l.off >= len(l.src) {
			if q == '\'' {
				return "", Errorf(l.src, start, "unterminated string literal")
			}
			return "", Errorf(l.src, start, "unterminated quoted identifier")
		}
		if l.peekRune(0) == q {
			b.WriteString(l.src[from:l.off])
			l.advance()
			if l.peekRune(0) != q {
				return b.String(), nil
			}
			l.advance()
			b.WriteRune(q)
			from = l.off
			continue
		}
		l.advance()
	}
}

func (l *lexer) number() (token, error) {
	start := l.pos()
	kind := tokInt
	for isDigit(l.peekRune(0)) {
		l.advance()
	}
	if l.peekRune(0) == '.' {
		kind = tokNumber
		l.advance()
		for isDigit(l.peekRune(0)) {
			l.advance()
		}
	}
	bad := false
	if r := l.peekRune(0); r == 'e' || r == 'E' {
		kind = tokNumber
		l.advance()
		if r := l.peekRune(0); r == '+' || r == '-' {
			l.advance()
		}
		if !isDigit(l.peekRune(0)) {
			bad = true
		}
		for isDigit(l.peekRune(0)) {
			l.advance()
		}
	}
	// "1abc" is a typo, not the number 1 aliased as abc.
	for isIdentPart(l.peekRune(0)) {
		bad = true
		l.advance()
	}
	text := l.src[start.Offset:l.off]
	if bad {
		return token{}, Errorf(l.src, start, "invalid numeric literal '%s'", text)
	}
	return token{kind: kind, text: text, pos: start}, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// asciiUpper upper-cases ASCII letters only. Keywords and function names are
// matched this way so that Unicode case folding (e.g. 'ſ' → 'S') cannot turn
// an identifier into a keyword.
func asciiUpper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'a' && c <= 'z' {
					b[j] = c - 'a' + 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
