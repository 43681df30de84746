package kernels

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etLikeRef is LIKE by dynamic programming over code points, independent
// of the compiled matcher. ok false: the pattern is invalid.
func etLikeRef(s, pattern string, esc rune) (match, ok bool) {
	type tok struct {
		r        rune
		any, seq bool
	}
	var toks []tok
	pr := []rune(pattern)
	for i := 0; i < len(pr); i++ {
		switch c := pr[i]; {
		case esc >= 0 && c == esc:
			if i+1 >= len(pr) || pr[i+1] != '%' && pr[i+1] != '_' && pr[i+1] != esc {
				return false, false
			}
			i++
			toks = append(toks, tok{r: pr[i]})
		case c == '%':
			toks = append(toks, tok{seq: true})
		case c == '_':
			toks = append(toks, tok{any: true})
		default:
			toks = append(toks, tok{r: c})
		}
	}
	sr := []rune(s)
	// m[j]: toks[:j] matches sr[:i].
	m := make([]bool, len(toks)+1)
	m[0] = true
	for j, t := range toks {
		m[j+1] = m[j] && t.seq
	}
	for i := range sr {
		next := make([]bool, len(toks)+1)
		for j, t := range toks {
			switch {
			case t.seq:
				next[j+1] = next[j] || m[j+1]
			case t.any || t.r == sr[i]:
				next[j+1] = m[j]
			}
		}
		m = next
	}
	return m[len(toks)], true
}

func TestLikePatterns(t *testing.T) {
	cases := []struct {
		s, p string
		esc  rune
		want bool
	}{
		{"abc", "abc", -1, true}, {"abc", "ab", -1, false}, {"abc", "a%", -1, true}, {"abc", "%c", -1, true},
		{"abc", "%b%", -1, true}, {"abc", "%d%", -1, false}, {"", "%", -1, true}, {"", "_", -1, false},
		{"", "", -1, true}, {"a", "", -1, false}, {"abc", "a_c", -1, true}, {"aéc", "a_c", -1, true},
		{"aéc", "a__c", -1, false}, {"日本語", "_本%", -1, true}, {"abcabc", "%b_a%", -1, true},
		{"ab", "a%b%", -1, true}, {"ab", "a%%b", -1, true}, {"a\nb", "a%b", -1, true}, {"a\nb", "a_b", -1, true},
		{"ABC", "abc", -1, false}, {"100%", "100\\%", '\\', true}, {"100x", "100\\%", '\\', false},
		{"a_b", "a\\_b", '\\', true}, {"axb", "a\\_b", '\\', false}, {"a\\b", "a\\\\b", '\\', true},
		{"abc", "a!%", '!', false}, {"a%", "a!%", '!', true}, {"xyz", "%y_", -1, true}, {"xyzz", "%y_", -1, false},
		{"aaa", "%a%a%a%", -1, true}, {"aa", "%a%a%a%", -1, false}, {"mississippi", "%iss%ipp%", -1, true},
	}
	for _, c := range cases {
		m, err := compileLike([]byte(c.p), c.esc)
		if err != nil {
			t.Fatalf("%q: %v", c.p, err)
		}
		if got := m.match([]byte(c.s)); got != c.want {
			t.Errorf("%q LIKE %q (escape %q): %v, want %v", c.s, c.p, c.esc, got, c.want)
		}
		if ref, _ := etLikeRef(c.s, c.p, c.esc); ref != c.want {
			t.Errorf("reference: %q LIKE %q: %v", c.s, c.p, ref)
		}
	}
	// Shapes.
	for p, k := range map[string]likeKind{"abc": likeExact, "ab%": likePrefix, "%ab": likeSuffix, "%ab%": likeContains, "%%": likeAll, "a%b": likeGeneral, "a_": likeGeneral} {
		if m, _ := compileLike([]byte(p), -1); m.kind != k {
			t.Errorf("%q compiled to kind %d, want %d", p, m.kind, k)
		}
	}
	// Bad escapes.
	for _, p := range []string{"a\\", "a\\b"} {
		if _, err := compileLike([]byte(p), '\\'); err == nil {
			t.Errorf("%q: no error", p)
		}
	}
	reg := etNewTestRegistry()
	s := ColRef(0, etString, "s")
	if _, err := reg.Call("like", []Expr{s, etLit(t, "a\\b", etString), etLit(t, "\\", etString)}); err == nil || !strings.Contains(err.Error(), "invalid escape") {
		t.Errorf("invalid escape: %v", err)
	}
	if _, err := reg.Call("like", []Expr{s, etLit(t, "a", etString), etLit(t, "ab", etString)}); err == nil {
		t.Error("two-character escape accepted")
	}
	if _, err := reg.Call("like", []Expr{s, etLit(t, int64(1), etInt64)}); err == nil {
		t.Error("like(VARCHAR, BIGINT) accepted")
	}
}

// LIKE over random strings and patterns: literal patterns (every shape),
// pattern columns, escapes, NULLs and selections.
func TestLikeRandom(t *testing.T) {
	r := rand.New(rand.NewSource(40))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	pieces := []string{"a", "b", "%", "_", "é", "ab", " ", "ß", "\\%", "\\_", "%a", "b%"}
	for iter := 0; iter < 150; iter++ {
		tb := etRandBatch(r, mem)
		s := tb.vals["TEXT_a"]
		for k := 0; k < 6; k++ {
			p := ""
			for n := r.Intn(5); n > 0; n-- {
				p += pieces[r.Intn(len(pieces))]
			}
			esc := rune(-1)
			args := []Expr{tb.col("TEXT_a"), etLit(t, p, etString)}
			if r.Intn(2) == 0 {
				esc = '\\'
				args = append(args, etLit(t, "\\", etString))
			}
			e, err := reg.Call("like", args)
			if _, ok := etLikeRef("", p, esc); !ok {
				if err == nil {
					t.Fatalf("pattern %q: no error", p)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if s[i].null {
					return s[i], false
				}
				m, _ := etLikeRef(s[i].s, p, esc)
				return etVal{b: m}, false
			})
		}
		// A pattern column (TEXT_b holds '%' and '_'); a literal subject.
		e, err := reg.Call("like", []Expr{tb.col("TEXT_a"), tb.col("TEXT_b")})
		if err != nil {
			t.Fatal(err)
		}
		pb := tb.vals["TEXT_b"]
		etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
			if s[i].null || pb[i].null {
				return etVal{null: true}, false
			}
			m, _ := etLikeRef(s[i].s, pb[i].s, -1)
			return etVal{b: m}, false
		})
		e, err = reg.Call("like", []Expr{etLit(t, "a%b", etString), tb.col("TEXT_b")})
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
			if pb[i].null {
				return etVal{null: true}, false
			}
			m, _ := etLikeRef("a%b", pb[i].s, -1)
			return etVal{b: m}, false
		})
		tb.release()
	}
	// NULL pattern or subject.
	e, err := reg.Call("like", []Expr{ColRef(0, etString, "s"), etLit(t, nil, arrow.Null)})
	if err != nil || !scIsNullLiteral(e) || e.Type().ID() != arrow.BOOL {
		t.Errorf("like(s, NULL) = %v %v", e, err)
	}
}
