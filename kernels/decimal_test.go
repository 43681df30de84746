package kernels

import (
	"errors"
	"math"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etDecText is the unscaled value of decimal text at scale s.
func etDecText(x string, s int) *big.Int {
	r, ok := new(big.Rat).SetString(x)
	if !ok {
		panic("etDecText " + x)
	}
	r.Mul(r, new(big.Rat).SetInt(etPow10(s)))
	if !r.IsInt() {
		panic("etDecText: more than scale digits: " + x)
	}
	return new(big.Int).Set(r.Num())
}

func etPow10(k int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }

// etRat is an etVal of a DECIMAL(.., s) column (or an integer) as a rational.
func etRat(v etVal, t arrow.DataType) *big.Rat {
	if scKindOf(t) == skDecimal {
		_, s := scDecPS(t)
		return new(big.Rat).SetFrac(v.d, etPow10(s))
	}
	return new(big.Rat).SetInt64(v.i)
}

// etRoundHalfUp is r at scale s, rounded half away from zero (unscaled).
func etRoundHalfUp(r *big.Rat, s int) *big.Int {
	x := new(big.Rat).Mul(r, new(big.Rat).SetInt(etPow10(s)))
	neg := x.Sign() < 0
	x.Abs(x)
	q, m := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if new(big.Int).Mul(m, big.NewInt(2)).Cmp(x.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q
}

// etRefDecType derives result types independently, from Flink's table
// (LogicalTypeMerging): + - : (max(p1-s1, p2-s2) + max(s1, s2) + 1,
// max(s1, s2)); * : (p1+p2+1, s1+s2); / : (p1-s1+s2+max(6, s1+p2+1),
// max(6, s1+p2+1)); % : (min(p1-s1, p2-s2) + max(s1, s2), max(s1, s2));
// over 38 the precision is 38 and the scale max(38-(p-s), min(s, 6)).
func etRefDecType(op scArithOp, p1, s1, p2, s2 int) (int, int) {
	var p, s int
	switch op {
	case scAdd, scSub:
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	case scMul:
		p, s = p1+p2+1, s1+s2
	case scDiv:
		s = max(6, s1+p2+1)
		p = p1 - s1 + s2 + s
	case scMod:
		s = max(s1, s2)
		p = min(p1-s1, p2-s2) + s
	}
	if p > 38 {
		s = max(38-(p-s), min(s, 6))
		p = 38
	}
	return p, s
}

func TestDecimalTypeRules(t *testing.T) {
	// Flink's LogicalTypeMergingTest.
	cases := []struct {
		op                   scArithOp
		p1, s1, p2, s2, p, s int
	}{
		{scDiv, 32, 8, 38, 8, 38, 6}, {scDiv, 30, 20, 30, 20, 38, 8},
		{scMul, 30, 10, 30, 10, 38, 6}, {scMul, 30, 20, 30, 20, 38, 17}, {scMul, 38, 2, 38, 3, 38, 5},
		{scMod, 30, 10, 30, 10, 30, 10}, {scMod, 30, 20, 25, 20, 25, 20}, {scMod, 10, 10, 10, 0, 10, 10},
		{scAdd, 38, 8, 32, 8, 38, 7}, {scAdd, 10, 2, 5, 3, 12, 3}, {scSub, 5, 2, 5, 2, 6, 2},
		{scDiv, 10, 2, 10, 0, 21, 13},
	}
	for _, c := range cases {
		rt := scDecResultType(c.op, c.p1, c.s1, c.p2, c.s2)
		if int(rt.Precision) != c.p || int(rt.Scale) != c.s {
			t.Errorf("op %d (%d,%d) (%d,%d): %s, want DECIMAL(%d, %d)", c.op, c.p1, c.s1, c.p2, c.s2, SQLTypeName(rt), c.p, c.s)
		}
		if p, s := etRefDecType(c.op, c.p1, c.s1, c.p2, c.s2); p != c.p || s != c.s {
			t.Errorf("reference rule wrong for %v", c)
		}
	}
	if got := SQLTypeName(scDecType(10, 2)); got != "DECIMAL(10, 2)" {
		t.Errorf("SQLTypeName: %s", got)
	}
	// Common types (CASE, COALESCE, IN, comparison), Flink's findCommonType.
	common := []struct{ a, b, want arrow.DataType }{
		{scDecType(10, 2), scDecType(5, 4), scDecType(12, 4)},
		{scDecType(10, 2), etInt32, scDecType(12, 2)},
		{etInt64, scDecType(5, 5), scDecType(24, 5)},
		{scDecType(38, 0), scDecType(38, 38), scDecType(38, 0)},
		{scDecType(10, 2), etFloat, etDouble},
		{scDecType(10, 2), arrow.Null, scDecType(10, 2)},
	}
	for _, c := range common {
		got, ok := scCommonType(c.a, c.b)
		if !ok || !arrow.TypeEqual(got, c.want) {
			t.Errorf("common(%s, %s) = %v, want %s", SQLTypeName(c.a), SQLTypeName(c.b), got, SQLTypeName(c.want))
		}
	}
	if _, ok := scCommonType(scDecType(10, 2), etString); ok {
		t.Error("common(DECIMAL, VARCHAR) accepted")
	}
	// Round, floor types.
	for _, c := range []struct{ p, s, r, wp, ws int }{{10, 2, 3, 10, 2}, {10, 4, 2, 9, 2}, {10, 4, -2, 7, 0}, {38, 0, -1, 38, 0}} {
		if rt := scDecRoundType(c.p, c.s, c.r); int(rt.Precision) != c.wp || int(rt.Scale) != c.ws {
			t.Errorf("round(DECIMAL(%d, %d), %d): %s", c.p, c.s, c.r, SQLTypeName(rt))
		}
	}
}

func TestDecimalLiteral(t *testing.T) {
	cases := []struct {
		text string
		p, s int
		str  string
	}{
		{"1.50", 3, 2, "1.50"}, {"0.5", 2, 1, "0.5"}, {".5", 1, 1, "0.5"}, {"100", 3, 0, "100"}, {"-3", 1, 0, "-3"},
		{"0.001", 4, 3, "0.001"}, {"12345678901234567890.123456789", 29, 9, "12345678901234567890.123456789"},
		{"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999"},
		{"0.00000000000000000000000000000000000001", 38, 38, "0.00000000000000000000000000000000000001"},
		{"1.", 1, 0, "1"},
	}
	for _, c := range cases {
		e, err := DecimalLiteral(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.text, err)
			continue
		}
		if got := SQLTypeName(e.Type()); got != SQLTypeName(scDecType(c.p, c.s)) {
			t.Errorf("%s: type %s, want DECIMAL(%d, %d)", c.text, got, c.p, c.s)
		}
		if e.String() != c.str {
			t.Errorf("%s: String %q, want %q", c.text, e.String(), c.str)
		}
	}
	for _, bad := range []string{"", "-", "1.2.3", "1e5", "abc", "123456789012345678901234567890123456789"} {
		if _, err := DecimalLiteral(bad); err == nil {
			t.Errorf("DecimalLiteral(%q): no error", bad)
		}
	}
	// Literal() for DECIMAL types.
	for _, c := range []struct {
		v    any
		want string
	}{{int64(5), "5.00"}, {1.005, "1.01"}, {-1.005, "-1.01"}, {"2.345", "2.35"}, {" 7 ", "7.00"}, {decimal128.FromI64(-125), "-1.25"}} {
		e, err := Literal(c.v, scDecType(5, 2))
		if err != nil || e.String() != c.want {
			t.Errorf("Literal(%v, DECIMAL(5, 2)) = %v, %v; want %s", c.v, e, err, c.want)
		}
	}
	for _, bad := range []any{int64(1000), 999.995, "x", math.NaN(), true} {
		if _, err := Literal(bad, scDecType(5, 2)); err == nil {
			t.Errorf("Literal(%v, DECIMAL(5, 2)): no error", bad)
		}
	}
}

// The 256-bit division against math/big.
func TestDecimalU256DivMod(t *testing.T) {
	r := rand.New(rand.NewSource(20))
	gen := func() u256 {
		var x u256
		n := r.Intn(5)
		for i := 0; i < n; i++ {
			switch r.Intn(4) {
			case 0:
				x[i] = ^uint64(0)
			case 1:
				x[i] = uint64(r.Intn(3))
			default:
				x[i] = r.Uint64()
			}
		}
		return x
	}
	for iter := 0; iter < 200000; iter++ {
		a, b := gen(), gen()
		if b.isZero() {
			continue
		}
		q, m := a.divmod(b)
		bq, bm := new(big.Int).QuoRem(a.big(), b.big(), new(big.Int))
		if q.big().Cmp(bq) != 0 || m.big().Cmp(bm) != 0 {
			t.Fatalf("%v / %v: %v %v, want %v %v", a.big(), b.big(), q.big(), m.big(), bq, bm)
		}
		p, of := a.mul(b)
		bp := new(big.Int).Mul(a.big(), b.big())
		if of != (bp.BitLen() > 256) || (!of && p.big().Cmp(bp) != 0) {
			t.Fatalf("%v * %v: %v %v", a.big(), b.big(), p.big(), of)
		}
	}
}

func TestDecimalTextRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	for iter := 0; iter < 20000; iter++ {
		p := 1 + r.Intn(38)
		s := r.Intn(p + 1)
		v := etGenDec(r, scDecType(p, s))
		d := decFromMag(func() u256 {
			var m u256
			b := new(big.Int).Abs(v.d)
			for i, w := range b.Bits() {
				m[i] = uint64(w)
			}
			return m
		}(), v.d.Sign() < 0)
		text := decString(d, s)
		want := new(big.Rat).SetFrac(v.d, etPow10(s)).FloatString(s)
		if text != want {
			t.Fatalf("format %s at scale %d: %q, want %q", v.d, s, text, want)
		}
		back, st := decParse([]byte(text), p, s)
		if st != decOK || back != d {
			t.Fatalf("parse %q: %v %d", text, back, st)
		}
		if f := decToFloat(d, s); f != etRatFloat(new(big.Rat).SetFrac(v.d, etPow10(s))) {
			t.Fatalf("%s to double: %v", text, f)
		}
	}
	// Parsing: rounding, exponents, errors.
	for _, c := range []struct {
		in   string
		p, s int
		want string
		st   int
	}{
		{"1.005", 5, 2, "1.01", decOK}, {"-1.005", 5, 2, "-1.01", decOK}, {"1.004999", 5, 2, "1.00", decOK},
		{"1.5e2", 5, 0, "150", decOK}, {"15E-1", 3, 0, "2", decOK}, {"+0.0049", 3, 2, "0.00", decOK},
		{"999.995", 5, 2, "", decOverflow}, {"-0.0001", 3, 2, "0.00", decOK}, {"0.000", 1, 0, "0", decOK},
		{"1e40", 38, 0, "", decOverflow}, {"1e-400", 10, 2, "0.00", decOK},
		{"", 5, 2, "", decSyntax}, {".", 5, 2, "", decSyntax}, {"1e", 5, 2, "", decSyntax}, {"1x", 5, 2, "", decSyntax}, {"--1", 5, 2, "", decSyntax},
	} {
		v, st := decParse([]byte(c.in), c.p, c.s)
		if st != c.st || st == decOK && decString(v, c.s) != c.want {
			t.Errorf("decParse(%q, %d, %d) = %s, %d; want %s, %d", c.in, c.p, c.s, decString(v, c.s), st, c.want, c.st)
		}
	}
}

func etRatFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f
}

// Arithmetic over DECIMAL columns and literals of several types (and
// integers), against exact rational arithmetic rounded half up; overflow
// and division by zero must fail exactly when a live row hits them.
func TestDecimalArithRandom(t *testing.T) {
	reg := etNewTestRegistry()
	ops := map[string]scArithOp{"add": scAdd, "subtract": scSub, "multiply": scMul, "divide": scDiv, "modulus": scMod}
	pairs := [][2]string{{"DEC_a", "DEC_b"}, {"DEC_a", "DECW_b"}, {"DECW_a", "DECW_b"}, {"DEC0_a", "DEC_b"}, {"DEC_a", "INT_b"}, {"BIGINT_a", "DECW_b"}, {"DECW_a", "DEC0_a"}}
	r := rand.New(rand.NewSource(22))
	for name, op := range ops {
		for _, pr := range pairs {
			t.Run(name+"/"+pr[0]+"_"+pr[1], func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				for iter := 0; iter < 8; iter++ {
					tb := etRandBatch(r, mem)
					lt, rt := tb.b.Schema().Field(tb.cols[pr[0]]).Type, tb.b.Schema().Field(tb.cols[pr[1]]).Type
					dec := func(t arrow.DataType) (int, int) {
						if scKindOf(t) == skDecimal {
							return scDecPS(t)
						}
						return int(scDecOfInt(scKindOf(t)).Precision), 0
					}
					p1, s1 := dec(lt)
					p2, s2 := dec(rt)
					wp, ws := etRefDecType(op, p1, s1, p2, s2)
					for _, o := range etOperandsT(t, r, tb, pr[0], pr[1]) {
						l, rr := o[0], o[1]
						e, err := reg.Call(name, []Expr{l.e, rr.e})
						if err != nil {
							t.Fatal(err)
						}
						if SQLTypeName(e.Type()) != SQLTypeName(scDecType(wp, ws)) {
							t.Fatalf("%s: type %s, want DECIMAL(%d, %d)", e, SQLTypeName(e.Type()), wp, ws)
						}
						etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
							x, y := l.val(i), rr.val(i)
							if x.null || y.null {
								return etVal{null: true}, false
							}
							a, b := etRat(x, lt), etRat(y, rt)
							v := new(big.Rat)
							switch op {
							case scAdd:
								v.Add(a, b)
							case scSub:
								v.Sub(a, b)
							case scMul:
								v.Mul(a, b)
							case scDiv, scMod:
								if b.Sign() == 0 {
									return etVal{}, true
								}
								if op == scDiv {
									v.Quo(a, b)
								} else { // a - b * trunc(a / b)
									q := new(big.Rat).Quo(a, b)
									tq := new(big.Int).Quo(q.Num(), q.Denom())
									v.Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(tq)))
								}
							}
							u := etRoundHalfUp(v, ws)
							if u.CmpAbs(etPow10(wp)) >= 0 {
								return etVal{}, true
							}
							return etVal{d: u}, false
						})
					}
					tb.release()
				}
			})
		}
	}
}

func TestDecimalErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d102 := scDecType(10, 2)
	b := etOneBatch(t, mem, map[string][]any{"x": {"99999999.99", "1.00", nil}, "y": {"10.00", "0.00", "0.00"}},
		map[string]arrow.DataType{"x": d102, "y": d102}, "x", "y")
	defer b.Release()
	x, y := ColRef(0, d102, "x"), ColRef(1, d102, "y")
	// DECIMAL(10,2) * DECIMAL(10,2) is DECIMAL(21, 4): no overflow; cast back overflows.
	prod := etCall(t, "multiply", x, y)
	b.Sel = []int32{0}
	if _, err := etEvalRows(t, mem, prod, b); err != nil {
		t.Fatal(err)
	}
	narrow := etMustCast(t, prod, d102)
	_, err := etEvalRows(t, mem, narrow, b)
	if err == nil || !strings.Contains(err.Error(), "DECIMAL(10,2) overflow") || !strings.Contains(err.Error(), "value 999999999.90") {
		t.Fatalf("overflow: %v", err)
	}
	// Division by zero fails on live rows only; NULL / 0 is NULL.
	div := etCall(t, "divide", x, y)
	b.Sel = []int32{1}
	if _, err := etEvalRows(t, mem, div, b); !errors.Is(err, ErrDivisionByZero) {
		t.Fatalf("1.00 / 0.00: %v", err)
	}
	b.Sel = []int32{0, 2}
	rows, err := etEvalRows(t, mem, div, b)
	if err != nil || !rows[1].null || rows[0].d.String() != "99999999990000000000" {
		t.Fatalf("division: %v %v (type %s)", rows, err, SQLTypeName(div.Type()))
	}
	// A sum that needs 39 digits.
	big38 := scDecType(38, 0)
	w := etOneBatch(t, mem, map[string][]any{"x": {"99999999999999999999999999999999999999"}}, map[string]arrow.DataType{"x": big38}, "x")
	defer w.Release()
	sum := etCall(t, "add", ColRef(0, big38, "x"), etLit(t, int64(1), etInt32))
	if _, err := etEvalRows(t, mem, sum, w); err == nil || !strings.Contains(err.Error(), "DECIMAL(38,0) overflow: value 100000000000000000000000000000000000000") {
		t.Fatalf("38-digit overflow: %v", err)
	}
	// Constant arithmetic folds; a failing constant is kept and fails at run time.
	one, _ := DecimalLiteral("1.5")
	two, _ := DecimalLiteral("2.25")
	if e := etCall(t, "add", one, two); e.String() != "3.75" || SQLTypeName(e.Type()) != "DECIMAL(4, 2)" {
		t.Fatalf("1.5 + 2.25 = %s %s", e, SQLTypeName(e.Type()))
	}
	if e := etCall(t, "divide", one, etLit(t, 0, etInt32)); e.String() == "" {
		t.Fatal("1.5 / 0")
	} else if _, ok := e.(*exprLit); ok {
		t.Fatal("1.5 / 0 folded")
	}
	// Flink-documented results.
	for _, c := range []struct {
		fn   string
		a, b string
		want string
		typ  string
	}{
		{"divide", "1", "3", "0.333333", "DECIMAL(7, 6)"},
		{"divide", "10.0", "4", "2.500000", "DECIMAL(8, 6)"},
		{"multiply", "1.5", "1.5", "2.25", "DECIMAL(5, 2)"},
		{"add", "0.1", "0.2", "0.3", "DECIMAL(3, 1)"},
		{"subtract", "1.00", "0.001", "0.999", "DECIMAL(5, 3)"},
		{"modulus", "-7.5", "2", "-1.5", "DECIMAL(2, 1)"},
		{"divide", "2", "3", "0.666667", "DECIMAL(7, 6)"},
		{"divide", "-2", "3", "-0.666667", "DECIMAL(7, 6)"},
	} {
		a, _ := DecimalLiteral(c.a)
		bb, _ := DecimalLiteral(c.b)
		e := etCall(t, c.fn, a, bb)
		if e.String() != c.want || SQLTypeName(e.Type()) != c.typ {
			t.Errorf("%s(%s, %s) = %s %s, want %s %s", c.fn, c.a, c.b, e, SQLTypeName(e.Type()), c.want, c.typ)
		}
	}
	// DECIMAL with DOUBLE is DOUBLE.
	if e := etCall(t, "multiply", one, etLit(t, 2.0, etDouble)); e.Type().ID() != arrow.FLOAT64 || e.String() != "3.0" {
		t.Errorf("1.5 * 2.0E0 = %s %s", e, SQLTypeName(e.Type()))
	}
	if e := etCall(t, "negate", two); e.String() != "-2.25" {
		t.Errorf("-2.25: %s", e)
	}
}

// Comparisons across scales and with integers and doubles.
func TestDecimalCompareRandom(t *testing.T) {
	reg := etNewTestRegistry()
	ops := map[string]scCmpOp{"equal": scEq, "not_equal": scNe, "lt": scLt, "lte": scLte, "gt": scGt, "gte": scGte}
	pairs := [][2]string{{"DEC_a", "DEC_b"}, {"DEC_a", "DECW_b"}, {"DECW_a", "DEC0_a"}, {"DEC_a", "INT_b"}, {"BIGINT_a", "DECW_b"}, {"DEC_a", "DOUBLE_b"}}
	r := rand.New(rand.NewSource(23))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 20; iter++ {
		tb := etRandBatch(r, mem)
		for name, op := range ops {
			for _, pr := range pairs {
				lt, rt := tb.b.Schema().Field(tb.cols[pr[0]]).Type, tb.b.Schema().Field(tb.cols[pr[1]]).Type
				for _, o := range etOperandsT(t, r, tb, pr[0], pr[1]) {
					l, rr := o[0], o[1]
					e, err := reg.Call(name, []Expr{l.e, rr.e})
					if err != nil {
						t.Fatal(err)
					}
					etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
						x, y := l.val(i), rr.val(i)
						if x.null || y.null {
							return etVal{null: true}, false
						}
						if rt.ID() == arrow.FLOAT64 { // compared as DOUBLE
							xf, _ := etRat(x, lt).Float64()
							return etRefCompare(op, skFloat64, etVal{f: xf}, y), false
						}
						c := etRat(x, lt).Cmp(etRat(y, rt))
						return etVal{b: scCmpResult(op, c)}, false
					})
				}
			}
		}
		tb.release()
	}
}

// Casts to and from DECIMAL over random batches against big.Rat.
func TestDecimalCastRandom(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	targets := []arrow.DataType{scDecType(9, 2), scDecType(5, 0), scDecType(38, 10), scDecType(12, 6), scDecType(3, 3)}
	for iter := 0; iter < 40; iter++ {
		tb := etRandBatch(r, mem)
		for _, col := range []string{"DEC_a", "DECW_a", "DEC0_a", "INT_a", "BIGINT_a", "TINYINT_a", "DOUBLE_a", "FLOAT_a", "BOOLEAN_a"} {
			ft := tb.b.Schema().Field(tb.cols[col]).Type
			vals := tb.vals[col]
			for _, to := range targets {
				p, s := scDecPS(to)
				e := etMustCast(t, tb.col(col), to)
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					v := vals[i]
					if v.null {
						return v, false
					}
					var x *big.Rat
					switch k := scKindOf(ft); {
					case k == skBool:
						x = big.NewRat(0, 1)
						if v.b {
							x = big.NewRat(1, 1)
						}
					case k.isFloat():
						if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
							return etVal{}, true
						}
						x, _ = new(big.Rat).SetString(string(scAppendJavaFloat(nil, v.f, k.floatBits())))
					default:
						x = etRat(v, ft)
					}
					u := etRoundHalfUp(x, s)
					if u.CmpAbs(etPow10(p)) >= 0 {
						return etVal{}, true
					}
					return etVal{d: u}, false
				})
			}
			if scKindOf(ft) != skDecimal {
				continue
			}
			// DECIMAL → integers, floats, VARCHAR, BOOLEAN.
			for _, to := range []arrow.DataType{etInt64, etInt32, etInt8, etDouble, etFloat, etString, etBool} {
				e := etMustCast(t, tb.col(col), to)
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					v := vals[i]
					if v.null {
						return v, false
					}
					x := etRat(v, ft)
					switch k := scKindOf(to); {
					case k.isInt():
						q := new(big.Int).Quo(x.Num(), x.Denom())
						lo, hi := k.intRange()
						if !q.IsInt64() || q.Int64() < lo || q.Int64() > hi {
							return etVal{}, true
						}
						return etVal{i: q.Int64()}, false
					case k == skFloat64:
						f, _ := x.Float64()
						return etVal{f: f}, false
					case k == skFloat32:
						f, _ := x.Float64()
						return etVal{f: float64(float32(f))}, false
					case k == skBool:
						return etVal{b: x.Sign() != 0}, false
					}
					_, s := scDecPS(ft)
					return etVal{s: x.FloatString(s)}, false
				})
			}
			// Through VARCHAR and back.
			back := etMustCast(t, etMustCast(t, tb.col(col), etString), ft)
			etCheckAgainst(t, mem, back, tb, func(i int) (etVal, bool) { return vals[i], false })
		}
		tb.release()
	}
}
