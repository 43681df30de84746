package kernels

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// References: Go's regexp used directly (no prefilter), with Flink's
// rules around it: group 0 is the whole match, NULL when there is no
// match, the group did not take part, or the index is out of range.

func etRefRegexpExtract(s, pattern string, k int64) etVal {
	re := regexp.MustCompile(pattern)
	if k < 0 || k > int64(re.NumSubexp()) {
		return etVal{null: true}
	}
	m := re.FindStringSubmatchIndex(s)
	if m == nil || m[2*k] < 0 {
		return etVal{null: true}
	}
	return etVal{s: s[m[2*k]:m[2*k+1]]}
}

func TestRegexpRandom(t *testing.T) {
	r := rand.New(rand.NewSource(93))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Patterns over etGenText's alphabet (a b A é ß 日 space , % _ ab x Ω ı),
	// with and without a literal every match needs.
	patterns := []string{"a", "ab+", "(a|b)(é*)", "^(A)?b", "日(.)", "x(ab)+Ω", "(?i)ab", "[,%_]+", "(a)|(b)", "", "a{2,}", " (.*?),", "ß$",
		// Shapes the windowed search takes (a bounded part before a literal,
		// ^ in it, (?i), \b after the literal).
		"(,|^)a(.?)", "(^|日| )(b)(.*)", "^ab", "(?i:ß|x)?a(b|é)", ".{0,2}b", "[aé]{1,2}, (\\w*)", "(a|^)b\\b", "ab"}
	for iter := 0; iter < 120; iter++ {
		tb := etRandBatch(r, mem)
		ta, tbb, ia := etColOp(tb, "TEXT_a"), etColOp(tb, "TEXT_b"), etColOp(tb, "TINYINT_a")
		p := patterns[r.Intn(len(patterns))]
		lit := etOperand{e: etLit(t, p, etString), val: func(int) etVal { return etVal{s: p} }}
		groups := int64(regexp.MustCompile(p).NumSubexp())
		k := r.Int63n(groups + 1)
		kLit := etOperand{e: etLit(t, k, etInt32), val: func(int) etVal { return etVal{i: k} }}
		cases := []struct {
			fn   string
			args []etOperand
			ref  func(vs []etVal) etVal
		}{
			{"regexp_extract", []etOperand{ta, lit}, func(v []etVal) etVal { return etRefRegexpExtract(v[0].s, p, 0) }},
			{"regexp_extract", []etOperand{ta, lit, kLit}, func(v []etVal) etVal { return etRefRegexpExtract(v[0].s, p, k) }},
			{"regexp_extract", []etOperand{ta, lit, ia}, func(v []etVal) etVal { return etRefRegexpExtract(v[0].s, p, v[2].i) }},
			// A column of regexes: random text is a valid RE2 regex here.
			{"regexp_extract", []etOperand{ta, tbb}, func(v []etVal) etVal { return etRefRegexpExtract(v[0].s, v[1].s, 0) }},
			{"regexp", []etOperand{ta, lit}, func(v []etVal) etVal { return etVal{b: regexp.MustCompile(p).MatchString(v[0].s)} }},
			{"regexp", []etOperand{ta, tbb}, func(v []etVal) etVal { return etVal{b: regexp.MustCompile(v[1].s).MatchString(v[0].s)} }},
			{"regexp", []etOperand{lit, tbb}, func(v []etVal) etVal { return etVal{b: regexp.MustCompile(v[1].s).MatchString(p)} }},
		}
		for _, c := range cases {
			args := make([]Expr, len(c.args))
			for k, a := range c.args {
				args[k] = a.e
			}
			e, err := reg.Call(c.fn, args)
			if err != nil {
				t.Fatalf("%s(%v): %v", c.fn, args, err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				vs := make([]etVal, len(c.args))
				for k, a := range c.args {
					if vs[k] = a.val(i); vs[k].null {
						return etVal{null: true}, false
					}
				}
				return c.ref(vs), false
			})
		}
		tb.release()
	}
}

func TestRegexpNeed(t *testing.T) {
	for _, c := range []struct{ pattern, need string }{
		{"(&|^)channel_id=([^&]*)", "channel_id="},
		{"abc*", "ab"},
		{"ab?", "a"},
		{"x(abc)+y", "abc"},
		{"(?:日本){2}", "日本"},
		{"(?i)Ab|c", ""},
		{"(?i)abc", ""},
		{"a|b", ""},
		{"a*", ""},
		{"", ""},
	} {
		r, err := compileScRegex(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.need) != c.need {
			t.Errorf("%q: need %q, want %q", c.pattern, r.need, c.need)
		}
	}
}

func TestRegexpEdgeCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := etNewTestRegistry()
	s := func(v string) Expr { return etLit(t, v, etString) }
	i := func(v int) Expr { return etLit(t, v, etInt32) }
	null := etLit(t, nil, arrow.Null)
	cases := []struct {
		fn   string
		args []Expr
		want string // the folded literal's String()
	}{
		// Flink's documented example; the default group is 0.
		{"regexp_extract", []Expr{s("foothebar"), s("foo(.*?)(bar)"), i(2)}, "'bar'"},
		{"regexp_extract", []Expr{s("foothebar"), s("foo(.*?)(bar)"), i(1)}, "'the'"},
		{"regexp_extract", []Expr{s("foothebar"), s("foo(.*?)(bar)")}, "'foothebar'"},
		{"regexp_extract", []Expr{s("foothebar"), s("foo(.*?)(bar)"), i(0)}, "'foothebar'"},
		{"regexp_extract", []Expr{s("xyz"), s("foo(.*)")}, "NULL"},
		{"regexp_extract", []Expr{s("b"), s("(a)|(b)"), i(1)}, "NULL"},
		{"regexp_extract", []Expr{s("b"), s("(a)|(b)"), i(2)}, "'b'"},
		{"regexp_extract", []Expr{s(""), s("x*")}, "''"},
		{"regexp_extract", []Expr{s(""), s("x+")}, "NULL"},
		{"regexp_extract", []Expr{s("日本語テキスト"), s("本(.)"), i(1)}, "'語'"},
		{"regexp_extract", []Expr{s("été"), s("(?i)(É)"), i(1)}, "'é'"},
		{"regexp_extract", []Expr{s("q?a=1&channel_id=42&b"), s("(&|^)channel_id=([^&]*)"), i(2)}, "'42'"},
		{"regexp_extract", []Expr{s("k=v"), s("(?<key>\\w+)=(?P<val>\\w+)"), i(2)}, "'v'"},
		{"regexp_extract", []Expr{null, s("a")}, "NULL"},
		{"regexp_extract", []Expr{s("a"), null}, "NULL"},
		{"regexp_extract", []Expr{s("a"), s("(a)"), null}, "NULL"},
		{"regexp", []Expr{s("Flink"), s("^F.*k$")}, "TRUE"},
		{"regexp", []Expr{s("Flink"), s("li")}, "TRUE"},
		{"regexp", []Expr{s("Flink"), s("^li")}, "FALSE"},
		{"regexp", []Expr{s("Flink"), s("")}, "TRUE"},
		{"regexp", []Expr{s(""), s("a")}, "FALSE"},
		{"regexp", []Expr{s("ñandú"), s("ú$")}, "TRUE"},
		{"regexp", []Expr{null, s("a")}, "NULL"},
	}
	for _, c := range cases {
		e, err := reg.Call(c.fn, c.args)
		if err != nil {
			t.Errorf("%s(%v): %v", c.fn, c.args, err)
			continue
		}
		if e.String() != c.want {
			t.Errorf("%s(%v) = %s, want %s", c.fn, c.args, e, c.want)
		}
	}
	col := ColRef(0, etString, "s")
	for _, bad := range []struct {
		fn   string
		args []Expr
		want string
	}{
		{"regexp_extract", []Expr{col, s("a(?=b)")}, "regex 'a(?=b)': error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{"regexp_extract", []Expr{col, s("(?<=a)b")}, "invalid named capture: `(?<=a)b`"},
		{"regexp_extract", []Expr{col, s("(?!a)b")}, "invalid or unsupported Perl syntax: `(?!`"},
		{"regexp_extract", []Expr{col, s("(?>a)b")}, "invalid or unsupported Perl syntax: `(?>`"},
		{"regexp_extract", []Expr{col, s("(a)\\1")}, "invalid escape sequence: `\\1`"},
		{"regexp", []Expr{col, s("a*+")}, "invalid nested repetition operator: `*+`"},
		{"regexp", []Expr{col, s("(a")}, "missing closing )"},
		{"regexp_extract", []Expr{col, s("(a)(b)"), i(3)}, "group index 3, but regex '(a)(b)' has 2 groups"},
		{"regexp_extract", []Expr{col, s("(a)"), i(-1)}, "group index -1 must not be negative"},
		{"regexp_extract", []Expr{col, s("a"), s("1")}, "does not accept (VARCHAR, VARCHAR, VARCHAR)"},
		{"regexp", []Expr{i(1), s("1")}, "does not accept (INT, VARCHAR)"},
	} {
		if _, err := reg.Call(bad.fn, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s(%v): %v, want %q", bad.fn, bad.args, err, bad.want)
		}
	}

	// A column of regexes: a bad one fails when a live row reaches it; a
	// column of group indexes out of range gives NULL, as Flink.
	b := etOneBatch(t, mem, map[string][]any{"s": {"ab", "ab", "ab"}, "p": {"(a)", "b", "(?=a)"}, "k": {1, 5, 0}},
		map[string]arrow.DataType{"s": etString, "p": etString, "k": etInt32}, "s", "p", "k")
	defer b.Release()
	sc, pc, kc := ColRef(0, etString, "s"), ColRef(1, etString, "p"), ColRef(2, etInt32, "k")
	for _, fn := range []string{"regexp_extract", "regexp"} {
		e := etCall(t, fn, sc, pc)
		if _, err := etEvalRows(t, mem, e, b); err == nil || !strings.Contains(err.Error(), "`(?=`") {
			t.Errorf("%s with a bad live regex: %v", fn, err)
		}
	}
	b.Sel = []int32{0, 1}
	rows, err := etEvalRows(t, mem, etCall(t, "regexp_extract", sc, pc, kc), b)
	if err != nil || rows[0].s != "a" || !rows[1].null {
		t.Errorf("regexp_extract with regex and group columns: %v %v", rows, err)
	}
	rows, err = etEvalRows(t, mem, etCall(t, "regexp_extract", sc, s("(a)(b)"), kc), b)
	if err != nil || rows[0].s != "a" || !rows[1].null {
		t.Errorf("regexp_extract with a group column: %v %v", rows, err)
	}
}

func BenchmarkRegexpExtract(b *testing.B) {
	mem := memory.NewGoAllocator()
	const n = 8192
	vals := make([]any, n)
	for i := range vals {
		if i%2 == 0 {
			vals[i] = "https://www.nexmark.com/abc/de_f/ghij/item.htm?query=1"
		} else {
			vals[i] = "https://www.nexmark.com/abc/de_f/ghij/item.htm?query=1&channel_id=1957691392"
		}
	}
	t := &testing.T{}
	batch := etOneBatch(t, mem, map[string][]any{"url": vals}, map[string]arrow.DataType{"url": etString}, "url")
	defer batch.Release()
	e, err := etNewTestRegistry().Call("regexp_extract", []Expr{ColRef(0, etString, "url"), etLit(t, "(&|^)channel_id=([^&]*)", etString), etLit(t, 2, etInt32)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.Eval(batch, mem)
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestRegexpWindow: the windowed search is set up where the shape allows
// it, and finds what the whole-text search finds on texts built to catch
// a window starting too late or ^ matching at a window's start.
func TestRegexpWindow(t *testing.T) {
	for _, c := range []struct {
		pattern string
		lit     string
		lead    int
	}{
		{"(&|^)channel_id=([^&]*)", "channel_id=", 1},
		{"a.{0,3}bc", "a", 0},
		{"x?é{2}bc", "bc", 5},
		{"(?i:k)ab", "ab", 4},
		{"ab*c", "a", 0},
		{".*ab", "", 0},
		{"(?m)^ab", "", 0},
		{"\\bab", "", 0},
		{"(a){2}b", "b", 2},
	} {
		r, err := compileScRegex(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.lit) != c.lit || (c.lit != "" && r.lead != c.lead) {
			t.Errorf("%q: window lit %q lead %d, want %q %d", c.pattern, r.lit, r.lead, c.lit, c.lead)
		}
	}
	r := rand.New(rand.NewSource(94))
	patterns := []string{"(&|^)channel_id=([^&]*)", "(^|x)ab(c?)", "(?:^a|b)c", "\\Aab", "(a|^)(b)\\b", "x{0,2}(ab)",
		// A window starting inside a character must not read its tail as
		// U+FFFD, which this class matches.
		"[\\x{FFFD}-\\x{FFFF}]ab", ".?(ab)"}
	alpha := []string{"a", "b", "c", "x", "&", "channel_id=", "\n", "ab", "日", "😀", "é"}
	if m := etMustRegex(t, "[\\x{FFFD}-\\x{FFFF}]ab").find([]byte("😀ab"), false); m != nil {
		t.Errorf("a window inside a character matched: %v", m)
	}
	for _, p := range patterns {
		want := regexp.MustCompile(p)
		got, err := compileScRegex(p)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 3000; k++ {
			var sb strings.Builder
			for n := r.Intn(9); n > 0; n-- {
				sb.WriteString(alpha[r.Intn(len(alpha))])
			}
			s := []byte(sb.String())
			w := want.FindSubmatchIndex(s)
			g := got.find(s, true)
			if len(w) != len(g) || (w != nil && !slicesEqual(w, g)) {
				t.Fatalf("%q on %q: %v, want %v", p, s, g, w)
			}
			if got.match(s) != want.Match(s) {
				t.Fatalf("%q matches %q: %v", p, s, got.match(s))
			}
		}
	}
}

func slicesEqual(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func etMustRegex(t *testing.T, p string) *scRegex {
	t.Helper()
	r, err := compileScRegex(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
