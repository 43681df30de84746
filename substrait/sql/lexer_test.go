package sql

import (
	"fmt"
	"strings"
	"testing"
)

func TestLex(t *testing.T) {
	tests := []struct{ src, want string }{
		{"SELECT a1_$, _x FROM t", "ident(SELECT)@1:1 ident(a1_$)@1:8 op(,)@1:12 ident(_x)@1:14 ident(FROM)@1:17 ident(t)@1:22 eof@1:23"},
		{"größe\t= 'ü''x'", "ident(größe)@1:1 op(=)@1:7 string(ü'x)@1:9 eof@1:15"},
		{"`a``b` \"C\"\"d\" `日本`", "quoted(a`b)@1:1 quoted(C\"d)@1:8 quoted(日本)@1:15 eof@1:19"},
		{"1 1.5 .5 1. 1e3 1E+3 2.5e-2 007", "int(1)@1:1 number(1.5)@1:3 number(.5)@1:7 number(1.)@1:10 number(1e3)@1:13 number(1E+3)@1:17 number(2.5e-2)@1:22 int(007)@1:29 eof@1:32"},
		{"a<>b<=c>=d!=e||f<g>h", "ident(a)@1:1 op(<>)@1:2 ident(b)@1:4 op(<=)@1:5 ident(c)@1:7 op(>=)@1:8 ident(d)@1:10 op(!=)@1:11 ident(e)@1:13 op(||)@1:14 ident(f)@1:16 op(<)@1:17 ident(g)@1:18 op(>)@1:19 ident(h)@1:20 eof@1:21"},
		{"a -- comment ; x\n/* multi\n line */ b -1", "ident(a)@1:1 ident(b)@3:10 op(-)@3:12 int(1)@3:13 eof@3:14"},
		{"a--b\n", "ident(a)@1:1 eof@1:2"},
		{"x.y.*;(),+/%", "ident(x)@1:1 op(.)@1:2 ident(y)@1:3 op(.)@1:4 op(*)@1:5 op(;)@1:6 op(()@1:7 op())@1:8 op(,)@1:9 op(+)@1:10 op(/)@1:11 op(%)@1:12 eof@1:13"},
		{"", "eof@1:1"},
		{"  \n  ", "eof@1:1"},
		{"'multi\nline' x", "string(multi\nline)@1:1 ident(x)@2:7 eof@2:8"},
	}
	kinds := map[tokenKind]string{tokEOF: "eof", tokIdent: "ident", tokQuoted: "quoted", tokString: "string", tokInt: "int", tokNumber: "number", tokOp: "op"}
	for _, tc := range tests {
		toks, err := lex(tc.src)
		if err != nil {
			t.Errorf("lex(%q): %v", tc.src, err)
			continue
		}
		var got []string
		for _, tok := range toks {
			s := kinds[tok.kind]
			switch tok.kind {
			case tokQuoted, tokString:
				s += "(" + tok.val + ")"
			case tokEOF:
			default:
				s += "(" + tok.text + ")"
			}
			got = append(got, fmt.Sprintf("%s@%s", s, tok.pos))
			if tok.kind != tokEOF && tc.src[tok.pos.Offset:tok.pos.Offset+len(tok.text)] != tok.text {
				t.Errorf("lex(%q): token %q has wrong offset %d", tc.src, tok.text, tok.pos.Offset)
			}
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("lex(%q)\n got %s\nwant %s", tc.src, g, tc.want)
		}
	}
}

func TestKeywordsAreASCII(t *testing.T) {
	// 'ſ' upper-cases to 'S' in Unicode; it must not spell SELECT.
	toks, err := lex("ſelect")
	if err != nil || toks[0].kind != tokIdent || toks[0].kw != "" {
		t.Fatalf("lex: %+v, %v", toks, err)
	}
	if _, err := Parse("ſelect 1"); err == nil || !strings.Contains(err.Error(), "unsupported statement") {
		t.Errorf("Parse(ſelect 1) = %v", err)
	}
	// As an identifier it is an ordinary lower-cased name.
	e := mustExpr(t, "ſelect + İx")
	if got := e.String(); got != "ſelect + ix" {
		t.Errorf("got %s", got)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct{ word, want string }{
		{"BIGGINT", "BIGINT"}, {"bigint", "BIGINT"}, {"INTT", "INT"}, {"VARCHR", "VARCHAR"},
		{"TIMESTMP", "TIMESTAMP"}, {"FOO", ""}, {"DOUBEL", "DOUBLE"}, {"XYZZY", ""},
	}
	for _, tc := range tests {
		if got := suggest(tc.word, typeNames); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
