package kernels

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// REGEXP_EXTRACT and REGEXP with Flink's semantics over Go's regexp
// (RE2). Flink compiles Java regexes; RE2 has no backreferences,
// lookaround, possessive quantifiers or atomic groups, so a regex using
// them is refused with RE2's message instead of matching differently.
// Everything else Flink users write (classes, alternation, lazy
// quantifiers, (?i), named groups) means the same. A constant regex is
// compiled once, when the call is bound; a column of regexes is compiled
// per distinct value (cached).

// scRegex is a compiled regex and what its matching can skip.
type scRegex struct {
	re     *regexp.Regexp
	groups int
	// need is a literal every match contains (nil: none known): a row
	// without it cannot match, which bytes.Contains decides far faster
	// than the regex engine.
	need []byte
	// Windowed search: when the regex is a concatenation A·lit·B whose
	// part A matches at most lead bytes (and asserts nothing but ^), a
	// match starts no earlier than lead bytes before the first lit, so
	// the engine runs from there instead of from the start of the text
	// (Go's regexp scans every start position). notStart is the regex
	// with ^ unable to match, for a window that does not start the text.
	lit      []byte
	lead     int
	notStart *regexp.Regexp
}

func compileScRegex(pattern string) (*scRegex, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("regex '%s': %v (Go RE2 syntax: no backreferences, lookaround, possessive quantifiers or atomic groups)", pattern, err)
	}
	r := &scRegex{re: re, groups: re.NumSubexp()}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return r, nil
	}
	tree := parsed.Simplify()
	r.need = scRegexNeed(tree)
	r.window(parsed, tree)
	return r, nil
}

// window sets up the windowed search when tree (parsed, simplified) has
// the shape for it.
func (r *scRegex) window(parsed, tree *syntax.Regexp) {
	subs := []*syntax.Regexp{tree}
	if tree.Op == syntax.OpConcat {
		subs = tree.Sub
	}
	for j, lit := range subs {
		if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
			continue
		}
		lead := 0
		ok := true
		for _, a := range subs[:j] {
			w, bounded := scRegexMaxWidth(a)
			lead += w
			ok = ok && bounded
		}
		if !ok || lead > 1<<16 {
			continue
		}
		notStart := r.re
		if scRegexHas(parsed, syntax.OpBeginText) {
			ns, err := regexp.Compile(scRegexNoBegin(parsed).String())
			if err != nil || ns.NumSubexp() != r.groups {
				return
			}
			notStart = ns
		}
		r.lit, r.lead, r.notStart = []byte(string(lit.Rune)), lead, notStart
		return
	}
}

// scRegexMaxWidth is the most bytes re matches; false if unbounded or if
// re asserts anything but the start of the text (its meaning would then
// depend on the text before a window).
func scRegexMaxWidth(re *syntax.Regexp) (int, bool) {
	const cap = 1 << 20
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginText, syntax.OpNoMatch:
		return 0, true
	case syntax.OpLiteral:
		w := 0
		for _, c := range re.Rune {
			if n := utf8.RuneLen(c); n > 0 && re.Flags&syntax.FoldCase == 0 {
				w += n
			} else {
				w += utf8.UTFMax // a folded rune may encode longer ('k', U+212A)
			}
		}
		return w, true
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0, true
		}
		if n := utf8.RuneLen(re.Rune[len(re.Rune)-1]); n > 0 {
			return n, true
		}
		return utf8.UTFMax, true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax, true
	case syntax.OpCapture, syntax.OpQuest:
		return scRegexMaxWidth(re.Sub[0])
	case syntax.OpRepeat:
		w, ok := scRegexMaxWidth(re.Sub[0])
		if !ok || re.Max < 0 || w*re.Max > cap {
			return 0, false
		}
		return w * re.Max, true
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, s := range re.Sub {
			w, ok := scRegexMaxWidth(s)
			if !ok {
				return 0, false
			}
			if re.Op == syntax.OpConcat {
				total += w
			} else {
				total = max(total, w)
			}
			if total > cap {
				return 0, false
			}
		}
		return total, true
	}
	return 0, false
}

func scRegexHas(re *syntax.Regexp, op syntax.Op) bool {
	if re.Op == op {
		return true
	}
	for _, s := range re.Sub {
		if scRegexHas(s, op) {
			return true
		}
	}
	return false
}

// scRegexNoBegin is a copy of re in which the start of the text never
// matches.
func scRegexNoBegin(re *syntax.Regexp) *syntax.Regexp {
	c := *re
	if c.Op == syntax.OpBeginText {
		c.Op, c.Flags = syntax.OpNoMatch, 0
		return &c
	}
	c.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, s := range re.Sub {
		c.Sub[i] = scRegexNoBegin(s)
	}
	return &c
}

// scRegexNeed is a case-sensitive literal that every string matching re
// contains (the longest one found in a concatenation), or nil.
func scRegexNeed(re *syntax.Regexp) []byte {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []byte(string(re.Rune))
	case syntax.OpCapture, syntax.OpPlus:
		return scRegexNeed(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return scRegexNeed(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []byte
		for _, s := range re.Sub {
			if n := scRegexNeed(s); len(n) > len(best) {
				best = n
			}
		}
		return best
	}
	return nil
}

// find is the regex's leftmost match in s (loc as regexp's FindIndex, or
// FindSubmatchIndex with subs), or nil.
func (r *scRegex) find(s []byte, subs bool) []int {
	re, start := r.re, 0
	if r.lit != nil {
		q := bytes.Index(s, r.lit)
		if q < 0 {
			return nil
		}
		if start = scWindowStart(s, q-r.lead); start > 0 {
			re = r.notStart
		}
	} else if r.need != nil && !bytes.Contains(s, r.need) {
		return nil
	}
	var loc []int
	if subs {
		loc = re.FindSubmatchIndex(s[start:])
	} else {
		loc = re.FindIndex(s[start:])
	}
	if start > 0 {
		for i, v := range loc {
			if v >= 0 {
				loc[i] = v + start
			}
		}
	}
	return loc
}

// scWindowStart is where a windowed search of s starts: at p (>= 0),
// moved back to the start of the character p is in, so that the engine
// decodes the same characters as over the whole text (from inside a
// character it would read its tail as U+FFFD, which a class may match).
func scWindowStart(s []byte, p int) int {
	if p <= 0 {
		return 0
	}
	for p > 0 && s[p]&0xC0 == 0x80 {
		p--
	}
	return p
}

// match reports whether s contains a match.
func (r *scRegex) match(s []byte) bool {
	if r.lit != nil {
		q := bytes.Index(s, r.lit)
		if q < 0 {
			return false
		}
		if start := scWindowStart(s, q-r.lead); start > 0 {
			return r.notStart.Match(s[start:])
		}
		return r.re.Match(s)
	}
	if r.need != nil && !bytes.Contains(s, r.need) {
		return false
	}
	return r.re.Match(s)
}

// extract is group k of the first match in s; ok false if there is no
// match or group k did not take part in it. 0 <= k <= r.groups.
func (r *scRegex) extract(s []byte, k int) ([]byte, bool) {
	loc := r.find(s, k > 0)
	if loc == nil || loc[2*k] < 0 {
		return nil, false
	}
	return s[loc[2*k]:loc[2*k+1]], true
}

// scRegexCache compiles a column's regexes, each distinct one once.
type scRegexCache struct {
	m    map[string]*scRegex
	last *scRegex
	text []byte
}

func (c *scRegexCache) get(p []byte) (*scRegex, error) {
	if c.last != nil && string(p) == string(c.text) {
		return c.last, nil
	}
	r := c.m[string(p)]
	if r == nil {
		var err error
		if r, err = compileScRegex(string(p)); err != nil {
			return nil, err
		}
		if c.m == nil || len(c.m) > 1024 {
			c.m = map[string]*scRegex{}
		}
		c.m[string(p)] = r
	}
	c.last, c.text = r, p
	return r, nil
}

// scConstRegex compiles operand k when it is a non-NULL literal.
func scConstRegex(name string, args []Expr, k int) (*scRegex, error) {
	l, ok := scIsLiteral(args[k])
	if !ok || l.null {
		return nil, nil
	}
	r, err := compileScRegex(l.s)
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	return r, nil
}

// bindRegexpExtract is REGEXP_EXTRACT(s, regex [, group]) → VARCHAR, as
// Flink: group (default 0, the whole match) of the first match. NULL if
// there is no match or the group did not take part in it; a group index
// out of range is refused when regex and index are constants and gives
// NULL when they are not (Flink gives NULL in every case).
func bindRegexpExtract(args []Expr) (Expr, error) {
	ops, err := scStrArgs("regexp_extract", args, 2)
	if err != nil {
		return nil, err
	}
	re, err := scConstRegex("regexp_extract", ops, 1)
	if err != nil {
		return nil, err
	}
	if len(ops) == 3 {
		if l, ok := scIsLiteral(ops[2]); ok && !l.null {
			switch {
			case l.i < 0:
				return nil, fmt.Errorf("function regexp_extract: group index %d must not be negative", l.i)
			case re != nil && l.i > int64(re.groups):
				return nil, fmt.Errorf("function regexp_extract: group index %d, but regex '%s' has %d groups", l.i, re.re.String(), re.groups)
			}
		}
	}
	return scBindStrict("regexp_extract", scVarchar, ops, re == nil, func(c *scCall) (arrow.Array, error) {
		s := c.str(0)
		group := scNumArg[int64]{isLit: true}
		if len(ops) == 3 {
			group = scCallNum[int64](c, 2)
		}
		var pats scStrArg
		var cache scRegexCache
		if re == nil {
			pats = c.str(1)
		}
		var rerr error
		out := scStrLoop(c, scVarchar, s.size(c.n)/2, func(w *scStrWriter, i int) {
			r := re
			if r == nil {
				if rerr != nil {
					return
				}
				if r, rerr = cache.get(pats.at(i)); rerr != nil {
					return
				}
			}
			k := group.at(i)
			if k < 0 || k > int64(r.groups) {
				c.setNull(i)
				return
			}
			sub, ok := r.extract(s.at(i), int(k))
			if !ok {
				c.setNull(i)
				return
			}
			w.appendBytes(sub)
		})
		if rerr != nil {
			out.Release()
			return nil, fmt.Errorf("function regexp_extract: %w", rerr)
		}
		return out, nil
	})
}

// bindRegexp is REGEXP(s, regex) → BOOLEAN, as Flink: TRUE if some
// (possibly empty) substring of s matches regex.
func bindRegexp(args []Expr) (Expr, error) {
	ops, err := scStrArgs("regexp", args)
	if err != nil {
		return nil, err
	}
	re, err := scConstRegex("regexp", ops, 1)
	if err != nil {
		return nil, err
	}
	return scBindStrict("regexp", scBool, ops, re == nil, func(c *scCall) (arrow.Array, error) {
		s := c.str(0)
		buf, out := scAllocBitmap(c.mem, c.n)
		clear(out)
		if re != nil {
			if s.isLit {
				if re.match(s.lit) {
					for _, i := range c.rows {
						out[i>>3] |= 1 << (i & 7)
					}
				}
				return c.result(scBool, buf), nil
			}
			for _, i := range c.rows {
				out[i>>3] |= byte(scBit(re.match(s.at(int(i))))) << (i & 7)
			}
			return c.result(scBool, buf), nil
		}
		pats := c.str(1)
		var cache scRegexCache
		for _, i := range c.rows {
			r, err := cache.get(pats.at(int(i)))
			if err != nil {
				buf.Release()
				return nil, fmt.Errorf("function regexp: %w", err)
			}
			out[i>>3] |= byte(scBit(r.match(s.at(int(i))))) << (i & 7)
		}
		return c.result(scBool, buf), nil
	})
}
