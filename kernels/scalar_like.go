package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// LIKE: '%' matches any sequence of characters, '_' exactly one character
// (a Unicode code point); matching is case-sensitive and '%' and '_' match
// any character, newlines included. A pattern is compiled once when it is a
// literal; the common shapes — 'abc', 'abc%', '%abc', '%abc%' — become a
// byte comparison or search. A pattern column is compiled per distinct
// pattern.

type likeKind uint8

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeAll // '%': every non-NULL string
	likeGeneral
)

// likeSeg is a part of a pattern between two '%': literal characters and
// '_' wildcards.
type likeSeg struct {
	lit    []byte  // the segment when it has no '_'
	toks   []int32 // otherwise: code points, -1 for '_'
	nRunes int
}

type likeMatcher struct {
	kind       likeKind
	lit        []byte // exact, prefix, suffix, contains
	segs       []likeSeg
	startAnch  bool // the pattern does not begin with '%'
	endAnch    bool // nor end with it
	singleSegm bool // no '%' at all
}

// compileLike compiles pattern with escape character esc (-1: none). The
// escape character makes the next '%', '_' or escape character literal;
// before anything else, or at the end, it is an error (as in Calcite).
func compileLike(pattern []byte, esc rune) (*likeMatcher, error) {
	const anySeq, anyOne = -2, -1
	var toks []int32
	for i := 0; i < len(pattern); {
		r, sz := utf8.DecodeRune(pattern[i:])
		i += sz
		switch {
		case esc >= 0 && r == esc:
			if i >= len(pattern) {
				return nil, fmt.Errorf("LIKE pattern '%s': it ends with the escape character", pattern)
			}
			n, sz := utf8.DecodeRune(pattern[i:])
			if n != '%' && n != '_' && n != esc {
				return nil, fmt.Errorf("LIKE pattern '%s': invalid escape sequence '%c%c'", pattern, esc, n)
			}
			i += sz
			toks = append(toks, n)
		case r == '%':
			if len(toks) == 0 || toks[len(toks)-1] != anySeq {
				toks = append(toks, anySeq)
			}
		case r == '_':
			toks = append(toks, anyOne)
		default:
			toks = append(toks, r)
		}
	}
	m := &likeMatcher{}
	m.startAnch = len(toks) == 0 || toks[0] != anySeq
	m.endAnch = len(toks) == 0 || toks[len(toks)-1] != anySeq
	// Split into segments at '%'.
	var segs []likeSeg
	var cur []int32
	flush := func() {
		s := likeSeg{nRunes: len(cur)}
		wild := false
		for _, t := range cur {
			wild = wild || t == anyOne
		}
		if wild {
			s.toks = append([]int32(nil), cur...)
		} else {
			var b []byte
			for _, t := range cur {
				b = utf8.AppendRune(b, t)
			}
			s.lit = b
			if s.lit == nil {
				s.lit = []byte{}
			}
		}
		segs = append(segs, s)
		cur = cur[:0]
	}
	for _, t := range toks {
		if t == anySeq {
			flush()
			continue
		}
		cur = append(cur, t)
	}
	flush()
	// segs has one more entry than there are '%': the (possibly empty)
	// parts before the first, between, and after the last.
	m.singleSegm = len(segs) == 1
	noWild := true
	for _, s := range segs {
		noWild = noWild && s.toks == nil
	}
	switch {
	case noWild && len(segs) == 1:
		m.kind, m.lit = likeExact, segs[0].lit
	case noWild && len(segs) == 2 && len(segs[0].lit) == 0 && len(segs[1].lit) == 0:
		m.kind = likeAll
	case noWild && len(segs) == 2 && len(segs[1].lit) == 0:
		m.kind, m.lit = likePrefix, segs[0].lit
	case noWild && len(segs) == 2 && len(segs[0].lit) == 0:
		m.kind, m.lit = likeSuffix, segs[1].lit
	case noWild && len(segs) == 3 && len(segs[0].lit) == 0 && len(segs[2].lit) == 0:
		m.kind, m.lit = likeContains, segs[1].lit
	default:
		m.kind = likeGeneral
		m.segs = segs
	}
	return m, nil
}

func (m *likeMatcher) match(s []byte) bool {
	switch m.kind {
	case likeExact:
		return string(s) == string(m.lit)
	case likePrefix:
		return len(s) >= len(m.lit) && string(s[:len(m.lit)]) == string(m.lit)
	case likeSuffix:
		return len(s) >= len(m.lit) && string(s[len(s)-len(m.lit):]) == string(m.lit)
	case likeContains:
		return bytes.Contains(s, m.lit)
	case likeAll:
		return true
	}
	return m.matchGeneral(s)
}

func (m *likeMatcher) matchGeneral(s []byte) bool {
	segs := m.segs
	pos, end := 0, len(s)
	first, last := 0, len(segs)
	if m.startAnch {
		n, ok := segs[0].matchAt(s, 0)
		if !ok {
			return false
		}
		if m.singleSegm {
			return n == len(s)
		}
		pos, first = n, 1
	}
	if m.endAnch {
		st, ok := segs[last-1].matchEnd(s[pos:])
		if !ok {
			return false
		}
		end, last = pos+st, last-1
	}
	for k := first; k < last; k++ {
		idx, n := segs[k].find(s[pos:end])
		if idx < 0 {
			return false
		}
		pos += idx + n
	}
	return true
}

// matchAt matches the segment at byte offset at; it returns the end offset.
func (g *likeSeg) matchAt(s []byte, at int) (int, bool) {
	if g.toks == nil {
		if len(s)-at >= len(g.lit) && string(s[at:at+len(g.lit)]) == string(g.lit) {
			return at + len(g.lit), true
		}
		return 0, false
	}
	p := at
	for _, t := range g.toks {
		if p >= len(s) {
			return 0, false
		}
		r, sz := rune(s[p]), 1
		if r >= utf8.RuneSelf {
			r, sz = utf8.DecodeRune(s[p:])
		}
		if t >= 0 && r != t {
			return 0, false
		}
		p += sz
	}
	return p, true
}

// matchEnd matches the segment at the end of s; it returns its start.
func (g *likeSeg) matchEnd(s []byte) (int, bool) {
	if g.toks == nil {
		if len(s) >= len(g.lit) && string(s[len(s)-len(g.lit):]) == string(g.lit) {
			return len(s) - len(g.lit), true
		}
		return 0, false
	}
	p := len(s)
	for k := 0; k < g.nRunes; k++ {
		if p == 0 {
			return 0, false
		}
		_, sz := utf8.DecodeLastRune(s[:p])
		p -= sz
	}
	if e, ok := g.matchAt(s, p); ok && e == len(s) {
		return p, true
	}
	return 0, false
}

// find is the leftmost match of the segment in s: its offset and length.
func (g *likeSeg) find(s []byte) (int, int) {
	if g.toks == nil {
		return bytes.Index(s, g.lit), len(g.lit)
	}
	for p := 0; p < len(s); {
		if e, ok := g.matchAt(s, p); ok {
			return p, e - p
		}
		_, sz := utf8.DecodeRune(s[p:])
		p += sz
	}
	if g.nRunes == 0 {
		return len(s), 0
	}
	return -1, 0
}

// bindLike is like(str, pattern [, escape]) → BOOLEAN.
func bindLike(args []Expr) (Expr, error) {
	for _, a := range args {
		if k := scKindOf(a.Type()); k != skString && k != skNull {
			return nil, scSigError("like", args)
		}
	}
	esc := rune(-1)
	if len(args) == 3 {
		l, ok := scIsLiteral(args[2])
		if !ok {
			return nil, fmt.Errorf("function like: the escape must be a constant")
		}
		if !l.null {
			if utf8.RuneCountInString(l.s) != 1 {
				return nil, fmt.Errorf("function like: the escape '%s' must be a single character", l.s)
			}
			esc, _ = utf8.DecodeRuneInString(l.s)
		}
	}
	var m *likeMatcher
	if l, ok := scIsLiteral(args[1]); ok && !l.null {
		var err error
		if m, err = compileLike([]byte(l.s), esc); err != nil {
			return nil, fmt.Errorf("function like: %w", err)
		}
	}
	return scBindStrict("like", scBool, args, m == nil, func(c *scCall) (arrow.Array, error) {
		str := c.str(0)
		buf, out := scAllocBitmap(c.mem, c.n)
		clear(out)
		if m != nil {
			likeLoop(m, &str, c.rows, c.n, out)
			return c.result(scBool, buf), nil
		}
		pats := c.str(1)
		cache := map[string]*likeMatcher{}
		var last []byte
		var cur *likeMatcher
		for _, i := range c.rows {
			p := pats.at(int(i))
			if cur == nil || string(p) != string(last) {
				cur = cache[string(p)]
				if cur == nil {
					var err error
					if cur, err = compileLike(p, esc); err != nil {
						buf.Release()
						return nil, fmt.Errorf("function like: %w", err)
					}
					if len(cache) > 1024 {
						clear(cache)
					}
					cache[string(p)] = cur
				}
				last = p
			}
			out[i>>3] |= byte(scBit(cur.match(str.at(int(i))))) << (i & 7)
		}
		return c.result(scBool, buf), nil
	})
}

// likeLoop matches the rows of a column against one compiled pattern, one
// loop per pattern shape. out is zeroed.
func likeLoop(m *likeMatcher, str *scStrArg, rows []int32, n int, out []byte) {
	if str.isLit {
		if m.match(str.lit) {
			for _, i := range rows {
				out[i>>3] |= 1 << (i & 7)
			}
		}
		return
	}
	offs, data, lit := str.offs, str.data, m.lit
	switch m.kind {
	case likePrefix:
		if len(lit) == 0 || len(lit) > 8 {
			break
		}
		// A prefix of up to 8 bytes: one masked 64-bit compare per row,
		// where 8 bytes can be loaded.
		var pad [8]byte
		copy(pad[:], lit)
		want := binary.LittleEndian.Uint64(pad[:])
		mask := ^uint64(0) >> (64 - 8*uint(len(lit)))
		L, safe := int32(len(lit)), int32(len(data)-8)
		hit := func(i int) bool {
			o := offs[i]
			if offs[i+1]-o < L {
				return false
			}
			if o <= safe {
				return binary.LittleEndian.Uint64(data[o:])&mask == want
			}
			return string(data[o:o+L]) == string(lit)
		}
		if len(rows) == n { // every row: build whole words
			for w := range scWords(n) {
				var word uint64
				for k := w * 64; k < min(n, w*64+64); k++ {
					word |= scBit(hit(k)) << uint(k&63)
				}
				scStoreWord(out, w, word)
			}
			return
		}
		for _, i := range rows {
			out[i>>3] |= byte(scBit(hit(int(i)))) << (i & 7)
		}
		return
	}
	switch m.kind {
	case likePrefix:
		for _, i := range rows {
			s := data[offs[i]:offs[i+1]]
			out[i>>3] |= byte(scBit(len(s) >= len(lit) && string(s[:len(lit)]) == string(lit))) << (i & 7)
		}
	case likeSuffix:
		for _, i := range rows {
			s := data[offs[i]:offs[i+1]]
			out[i>>3] |= byte(scBit(len(s) >= len(lit) && string(s[len(s)-len(lit):]) == string(lit))) << (i & 7)
		}
	case likeExact:
		for _, i := range rows {
			s := data[offs[i]:offs[i+1]]
			out[i>>3] |= byte(scBit(string(s) == string(lit))) << (i & 7)
		}
	case likeContains:
		for _, i := range rows {
			out[i>>3] |= byte(scBit(bytes.Contains(data[offs[i]:offs[i+1]], lit))) << (i & 7)
		}
	case likeAll:
		for _, i := range rows {
			out[i>>3] |= 1 << (i & 7)
		}
	default:
		for _, i := range rows {
			out[i>>3] |= byte(scBit(m.matchGeneral(data[offs[i]:offs[i+1]]))) << (i & 7)
		}
	}
}
