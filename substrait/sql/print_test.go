package sql

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
)

// TestRandomExprRoundTrip builds random expression trees, prints them and
// checks that the text parses back to the same tree: the printer must add
// exactly the parentheses that precedence and associativity need.
func TestRandomExprRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		e := randExpr(r, 4)
		src := e.String()
		got, err := ParseExpr(src)
		if err != nil {
			t.Fatalf("ParseExpr(%q): %v", src, err)
		}
		if !reflect.DeepEqual(stripPos(e), stripPos(got)) {
			t.Fatalf("%q parses to a different tree:\n got %s\nwant %s", src, parens(got), parens(e))
		}
	}
}

var randBinaryOps = []BinaryOp{OpOr, OpAnd, OpEq, OpNe, OpLt, OpLe, OpGt, OpGe,
	OpIsDistinctFrom, OpIsNotDistinctFrom, OpConcat, OpAdd, OpSub, OpMul, OpDiv, OpMod}

func randExpr(r *rand.Rand, depth int) Expr {
	if depth == 0 || r.IntN(4) == 0 {
		switch r.IntN(7) {
		case 0:
			v := r.Int64N(100) - 50
			return &IntLit{Value: v, Text: strconv.FormatInt(v, 10)}
		case 1:
			return &NumberLit{Value: -2.5, Text: "-2.5"}
		case 2:
			return &StringLit{Value: "it's"}
		case 3:
			return &BoolLit{Value: r.IntN(2) == 0}
		case 4:
			return &NullLit{}
		case 5:
			return &ColumnRef{Table: &Ident{Name: "t"}, Column: Ident{Name: "Ab", Quoted: true}}
		}
		return &ColumnRef{Column: Ident{Name: "a"}}
	}
	sub := func() Expr { return randExpr(r, depth-1) }
	switch r.IntN(12) {
	case 0, 1, 2:
		return &BinaryExpr{Op: randBinaryOps[r.IntN(len(randBinaryOps))], Left: sub(), Right: sub()}
	case 3:
		return &UnaryExpr{Op: []UnaryOp{OpNot, OpNeg, OpPlus}[r.IntN(3)], X: sub()}
	case 4:
		return &IsExpr{X: sub(), Not: r.IntN(2) == 0, Kind: IsKind(r.IntN(3))}
	case 5:
		return &BetweenExpr{X: sub(), Low: sub(), High: sub(), Not: r.IntN(2) == 0}
	case 6:
		return &InExpr{X: sub(), List: []Expr{sub(), sub()}, Not: r.IntN(2) == 0}
	case 7:
		l := &LikeExpr{X: sub(), Pattern: sub(), Not: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			l.Escape = sub()
		}
		return l
	case 8:
		return &FuncCall{Name: "F", Args: []Expr{sub(), sub()}}
	case 9:
		return &CaseExpr{Operand: sub(), Whens: []*WhenClause{{Cond: sub(), Result: sub()}}, Else: sub()}
	case 10:
		return &FuncCall{Name: "POSITION", Args: []Expr{sub(), sub()}}
	}
	return &TrimExpr{Mode: "LEADING", Chars: sub(), X: sub()}
}
