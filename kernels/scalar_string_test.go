package kernels

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Row-at-a-time references over []rune, written from the functions'
// definitions (Flink for SUBSTRING, PostgreSQL for SPLIT_PART).

func etRefSubstring(s string, pos, length int64, hasLen bool) etVal {
	if hasLen && length < 0 {
		return etVal{null: true}
	}
	rs := []rune(s)
	n := int64(len(rs))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	if start < 0 || start >= n {
		return etVal{s: ""}
	}
	end := n
	if hasLen && n-start >= length {
		end = start + length
	}
	return etVal{s: string(rs[start:end])}
}

func etRefTrim(s, chars string, left, right bool) string {
	in := func(r rune) bool { return strings.ContainsRune(chars, r) }
	if left {
		s = strings.TrimLeftFunc(s, in)
	}
	if right {
		s = strings.TrimRightFunc(s, in)
	}
	return s
}

func etRefSplitPart(s, d string, n int64) string {
	var parts []string
	if d == "" {
		parts = []string{s}
	} else {
		parts = strings.Split(s, d)
	}
	if n < 0 {
		n = int64(len(parts)) + n + 1
	}
	if n < 1 || n > int64(len(parts)) {
		return ""
	}
	return parts[n-1]
}

func etRefStrpos(s, sub string) int64 {
	k := strings.Index(s, sub)
	if k < 0 {
		return 0
	}
	return int64(utf8.RuneCountInString(s[:k])) + 1
}

// etStrCase is one string function call against its reference.
type etStrCase struct {
	fn   string
	args []etOperand
	ref  func(vs []etVal) etVal // not called when an operand is NULL
}

func TestStringFunctionsRandom(t *testing.T) {
	r := rand.New(rand.NewSource(60))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 120; iter++ {
		tb := etRandBatch(r, mem)
		lit := func(s string) etOperand {
			return etOperand{e: etLit(t, s, etString), val: func(int) etVal { return etVal{s: s} }}
		}
		intLit := func(v int64) etOperand {
			return etOperand{e: etLit(t, v, etInt32), val: func(int) etVal { return etVal{i: v} }}
		}
		ta, tbb, va := etColOp(tb, "TEXT_a"), etColOp(tb, "TEXT_b"), etColOp(tb, "VARCHAR_a")
		ia, ib := etColOp(tb, "INT_a"), etColOp(tb, "TINYINT_b")
		cases := []etStrCase{
			{"upper", []etOperand{ta}, func(v []etVal) etVal { return etVal{s: strings.Map(unicode.ToUpper, v[0].s)} }},
			{"lower", []etOperand{ta}, func(v []etVal) etVal { return etVal{s: strings.Map(unicode.ToLower, v[0].s)} }},
			{"lower", []etOperand{va}, func(v []etVal) etVal { return etVal{s: strings.Map(unicode.ToLower, v[0].s)} }},
			{"char_length", []etOperand{ta}, func(v []etVal) etVal { return etVal{i: int64(utf8.RuneCountInString(v[0].s))} }},
			{"substring", []etOperand{ta, ia}, func(v []etVal) etVal { return etRefSubstring(v[0].s, v[1].i, 0, false) }},
			{"substring", []etOperand{ta, ia, ib}, func(v []etVal) etVal { return etRefSubstring(v[0].s, v[1].i, v[2].i, true) }},
			{"substring", []etOperand{ta, intLit(int64(r.Intn(7) - 3)), intLit(int64(r.Intn(5) - 1))}, func(v []etVal) etVal { return etRefSubstring(v[0].s, v[1].i, v[2].i, true) }},
			{"trim", []etOperand{ta}, func(v []etVal) etVal { return etVal{s: etRefTrim(v[0].s, " ", true, true)} }},
			{"ltrim", []etOperand{ta}, func(v []etVal) etVal { return etVal{s: etRefTrim(v[0].s, " ", true, false)} }},
			{"rtrim", []etOperand{ta}, func(v []etVal) etVal { return etVal{s: etRefTrim(v[0].s, " ", false, true)} }},
			{"trim", []etOperand{ta, lit("a é")}, func(v []etVal) etVal { return etVal{s: etRefTrim(v[0].s, "a é", true, true)} }},
			{"rtrim", []etOperand{ta, tbb}, func(v []etVal) etVal { return etVal{s: etRefTrim(v[0].s, v[1].s, false, true)} }},
			{"concat", []etOperand{ta, tbb}, func(v []etVal) etVal { return etVal{s: v[0].s + v[1].s} }},
			{"concat", []etOperand{lit("<"), ta, lit(">"), va}, func(v []etVal) etVal { return etVal{s: v[0].s + v[1].s + v[2].s + v[3].s} }},
			{"concat", []etOperand{ta}, func(v []etVal) etVal { return v[0] }},
			{"replace", []etOperand{ta, lit("a"), lit("xyz")}, func(v []etVal) etVal { return etVal{s: strings.ReplaceAll(v[0].s, "a", "xyz")} }},
			{"replace", []etOperand{ta, tbb, lit("-")}, func(v []etVal) etVal {
				if v[1].s == "" {
					return v[0]
				}
				return etVal{s: strings.ReplaceAll(v[0].s, v[1].s, "-")}
			}},
			{"strpos", []etOperand{ta, lit("a")}, func(v []etVal) etVal { return etVal{i: etRefStrpos(v[0].s, "a")} }},
			{"strpos", []etOperand{ta, tbb}, func(v []etVal) etVal { return etVal{i: etRefStrpos(v[0].s, v[1].s)} }},
			{"split_part", []etOperand{ta, lit(","), intLit(int64(r.Intn(7) - 3))}, func(v []etVal) etVal { return etVal{s: etRefSplitPart(v[0].s, ",", v[2].i)} }},
			{"split_part", []etOperand{ta, lit(" "), intLit(2)}, func(v []etVal) etVal { return etVal{s: etRefSplitPart(v[0].s, " ", 2)} }},
			{"split_part", []etOperand{ta, tbb, intLit(-1)}, func(v []etVal) etVal { return etVal{s: etRefSplitPart(v[0].s, v[1].s, -1)} }},
		}
		for _, c := range cases {
			args := make([]Expr, len(c.args))
			for k, a := range c.args {
				args[k] = a.e
			}
			e, err := reg.Call(c.fn, args)
			if c.fn == "split_part" && args[2].String() == "0" {
				if err == nil {
					t.Fatalf("split_part(..., 0): no error")
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
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

func TestStringEdgeCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := func(v string) Expr { return etLit(t, v, etString) }
	i := func(v int) Expr { return etLit(t, v, etInt32) }
	null := etLit(t, nil, arrow.Null)
	cases := []struct {
		fn   string
		args []Expr
		want string // the folded literal's String()
	}{
		// Flink's documented examples and edges.
		{"upper", []Expr{s("hello, Flink")}, "'HELLO, FLINK'"},
		{"lower", []Expr{s("HELLO ÉTÉ")}, "'hello été'"},
		{"char_length", []Expr{s("日本語 x")}, "5"},
		{"char_length", []Expr{s("")}, "0"},
		{"substring", []Expr{s("Hello World"), i(7)}, "'World'"},
		{"substring", []Expr{s("Hello World"), i(1), i(5)}, "'Hello'"},
		{"substring", []Expr{s("Hello"), i(0), i(2)}, "'He'"},
		{"substring", []Expr{s("Hello"), i(-3)}, "'llo'"},
		{"substring", []Expr{s("Hello"), i(-9)}, "''"},
		{"substring", []Expr{s("Hello"), i(9)}, "''"},
		{"substring", []Expr{s("Hello"), i(2), i(-1)}, "NULL"},
		{"substring", []Expr{s("日本語"), i(2), i(1)}, "'本'"},
		{"trim", []Expr{s("  hi there  ")}, "'hi there'"},
		{"trim", []Expr{s("xxhixx"), s("x")}, "'hi'"},
		{"ltrim", []Expr{s("xyhixy"), s("yx")}, "'hixy'"},
		{"rtrim", []Expr{s("xyhixy"), s("yx")}, "'xyhi'"},
		{"trim", []Expr{s("\thi ")}, "'\thi'"},
		{"concat", []Expr{s("a"), s("b"), s("c")}, "'abc'"},
		{"concat", []Expr{s("a"), null}, "NULL"},
		{"replace", []Expr{s("hello world"), s("world"), s("flink")}, "'hello flink'"},
		{"replace", []Expr{s("aaa"), s("aa"), s("b")}, "'ba'"},
		{"replace", []Expr{s("abc"), s(""), s("x")}, "'abc'"},
		{"strpos", []Expr{s("foobar"), s("bar")}, "4"},
		{"strpos", []Expr{s("foobar"), s("x")}, "0"},
		{"strpos", []Expr{s("foobar"), s("")}, "1"},
		{"strpos", []Expr{s("日本語"), s("語")}, "3"},
		{"split_part", []Expr{s("a,b,c"), s(","), i(2)}, "'b'"},
		{"split_part", []Expr{s("a,b,c"), s(","), i(4)}, "''"},
		{"split_part", []Expr{s("a,b,c"), s(","), i(-1)}, "'c'"},
		{"split_part", []Expr{s("a,,c"), s(","), i(2)}, "''"},
		{"split_part", []Expr{s("abc"), s(""), i(1)}, "'abc'"},
		{"split_part", []Expr{s("a::b"), s("::"), i(2)}, "'b'"},
		{"like", []Expr{s("Flink"), s("F%k")}, "TRUE"},
		{"upper", []Expr{null}, "NULL"},
	}
	reg := etNewTestRegistry()
	for _, c := range cases {
		e, err := reg.Call(c.fn, c.args)
		if err != nil {
			t.Errorf("%s: %v", c.fn, err)
			continue
		}
		if e.String() != c.want {
			t.Errorf("%s(%v) = %s, want %s", c.fn, c.args, e, c.want)
		}
	}
	// Types and errors.
	col := ColRef(0, etString, "s")
	if e := etCall(t, "char_length", col); e.Type().ID() != arrow.INT32 {
		t.Errorf("char_length type %s", e.Type())
	}
	if e := etCall(t, "strpos", col, s("a")); e.Type().ID() != arrow.INT32 {
		t.Errorf("strpos type %s", e.Type())
	}
	for _, bad := range []struct {
		fn   string
		args []Expr
		want string
	}{
		{"upper", []Expr{i(1)}, "function upper does not accept (INT)"},
		{"substring", []Expr{col, s("1")}, "function substring does not accept (VARCHAR, VARCHAR)"},
		{"concat", []Expr{col, i(1)}, "function concat does not accept (VARCHAR, INT)"},
		{"split_part", []Expr{col, s(","), i(0)}, "field position must not be zero"},
	} {
		if _, err := reg.Call(bad.fn, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.fn, err, bad.want)
		}
	}
	// split_part with a column of positions fails on a live 0 only.
	b := etOneBatch(t, mem, map[string][]any{"s": {"a,b", "c,d"}, "n": {1, 0}}, map[string]arrow.DataType{"s": etString, "n": etInt32}, "s", "n")
	defer b.Release()
	e := etCall(t, "split_part", ColRef(0, etString, "s"), s(","), ColRef(1, etInt32, "n"))
	if _, err := etEvalRows(t, mem, e, b); err == nil {
		t.Error("split_part(.., 0) on a live row: no error")
	}
	b.Sel = []int32{0}
	if rows, err := etEvalRows(t, mem, e, b); err != nil || rows[0].s != "a" {
		t.Errorf("split_part with the 0 filtered out: %v %v", rows, err)
	}
}
