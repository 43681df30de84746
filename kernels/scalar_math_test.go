package kernels

import (
	"math"
	"math/big"
	"math/rand"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etRoundRat rounds r half away from zero to d decimal places (d may be
// negative).
func etRoundRat(r *big.Rat, d int64) *big.Rat {
	if d >= 0 {
		return new(big.Rat).SetFrac(etRoundHalfUp(r, int(d)), etPow10(int(d)))
	}
	m := new(big.Rat).SetInt(etPow10(int(-d)))
	q := etRoundHalfUp(new(big.Rat).Quo(r, m), 0)
	return new(big.Rat).Mul(new(big.Rat).SetInt(q), m)
}

// etWrap64 is the low 64 bits of an integer, as Java's longValue().
func etWrap64(b *big.Int) int64 {
	m := new(big.Int).And(b, new(big.Int).SetUint64(math.MaxUint64))
	return int64(m.Uint64())
}

func etRefRoundFloat(x float64, d int64, bits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, bits))
	f, _ := etRoundRat(r, d).Float64()
	if bits == 32 {
		f32, _ := etRoundRat(r, d).Float32()
		return float64(f32)
	}
	return f
}

func TestScalarMathRandom(t *testing.T) {
	r := rand.New(rand.NewSource(70))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 40; iter++ {
		tb := etRandBatch(r, mem)
		for _, k := range etNumericKinds {
			name := etColName(k, "a")
			x := etColOp(tb, name)
			check := func(fn string, args []Expr, ref func(i int) etVal) {
				t.Helper()
				e, err := reg.Call(fn, args)
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					if x.val(i).null {
						return etVal{null: true}, false
					}
					return ref(i), false
				})
			}
			check("abs", []Expr{x.e}, func(i int) etVal {
				v := x.val(i)
				if k.isFloat() {
					return etVal{f: math.Abs(v.f)}
				}
				if v.i < 0 {
					return etVal{i: etRefWrap(-v.i, k)}
				}
				return v
			})
			for _, fn := range []string{"floor", "ceil"} {
				check(fn, []Expr{x.e}, func(i int) etVal {
					v := x.val(i)
					if !k.isFloat() {
						return v
					}
					if fn == "floor" {
						return etVal{f: math.Floor(v.f)}
					}
					return etVal{f: math.Ceil(v.f)}
				})
			}
			d := int64(r.Intn(7) - 3)
			check("round", []Expr{x.e, etLit(t, d, etInt32)}, func(i int) etVal {
				v := x.val(i)
				if k.isFloat() {
					return etVal{f: etRefRoundFloat(v.f, d, k.floatBits())}
				}
				rr := etRoundRat(new(big.Rat).SetInt64(v.i), d)
				return etVal{i: etRefWrap(etWrap64(new(big.Int).Quo(rr.Num(), rr.Denom())), k)}
			})
			check("round", []Expr{x.e}, func(i int) etVal {
				v := x.val(i)
				if k.isFloat() {
					return etVal{f: etRefRoundFloat(v.f, 0, k.floatBits())}
				}
				return v
			})
			// A column of digit counts.
			dc := tb.vals["TINYINT_b"]
			e, err := reg.Call("round", []Expr{x.e, tb.col("TINYINT_b")})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				v := x.val(i)
				if v.null || dc[i].null {
					return etVal{null: true}, false
				}
				if k.isFloat() {
					return etVal{f: etRefRoundFloat(v.f, dc[i].i, k.floatBits())}, false
				}
				rr := etRoundRat(new(big.Rat).SetInt64(v.i), dc[i].i)
				return etVal{i: etRefWrap(etWrap64(new(big.Int).Quo(rr.Num(), rr.Denom())), k)}, false
			})
			asF := func(v etVal) float64 {
				if k.isFloat() {
					return v.f
				}
				return float64(v.i)
			}
			check("sqrt", []Expr{x.e}, func(i int) etVal { return etVal{f: math.Sqrt(asF(x.val(i)))} })
			y := etColOp(tb, "DOUBLE_b")
			e, err = reg.Call("power", []Expr{x.e, y.e})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				a, b := x.val(i), y.val(i)
				if a.null || b.null {
					return etVal{null: true}, false
				}
				xf := asF(a)
				if math.IsNaN(b.f) || math.IsInf(b.f, 0) && math.Abs(xf) == 1 {
					return etVal{f: math.NaN()}, false
				}
				return etVal{f: math.Pow(xf, b.f)}, false
			})
		}
		// DECIMAL.
		for _, col := range []string{"DEC_a", "DECW_a", "DEC0_a"} {
			typ := tb.b.Schema().Field(tb.cols[col]).Type
			p, s := scDecPS(typ)
			x := etColOp(tb, col)
			rat := func(i int) *big.Rat { return etRat(x.val(i), typ) }
			for _, fn := range []string{"abs", "floor", "ceil"} {
				e, err := reg.Call(fn, []Expr{x.e})
				if err != nil {
					t.Fatal(err)
				}
				wantType := typ
				if fn != "abs" {
					wantType = scDecType(p, 0)
				}
				if !arrow.TypeEqual(e.Type(), wantType) {
					t.Fatalf("%s: type %s", e, SQLTypeName(e.Type()))
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					if x.val(i).null {
						return etVal{null: true}, false
					}
					v := rat(i)
					switch fn {
					case "abs":
						return etVal{d: new(big.Int).Abs(x.val(i).d)}, false
					case "floor":
						q := new(big.Int).Div(v.Num(), v.Denom()) // Euclidean: floor for a positive denominator
						return etVal{d: q}, false
					}
					q := new(big.Int).Neg(new(big.Int).Div(new(big.Int).Neg(v.Num()), v.Denom()))
					return etVal{d: q}, false
				})
			}
			for _, d := range []int64{-2, 0, 1, 3, 12} {
				e, err := reg.Call("round", []Expr{x.e, etLit(t, d, etInt32)})
				if err != nil {
					t.Fatal(err)
				}
				rt := scDecRoundType(p, s, int(d))
				if !arrow.TypeEqual(e.Type(), rt) {
					t.Fatalf("%s: type %s, want %s", e, SQLTypeName(e.Type()), SQLTypeName(rt))
				}
				rp, rs := scDecPS(rt)
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					if x.val(i).null {
						return etVal{null: true}, false
					}
					u := etRoundHalfUp(etRoundRat(rat(i), d), rs)
					if u.CmpAbs(etPow10(rp)) >= 0 {
						return etVal{}, true
					}
					return etVal{d: u}, false
				})
			}
			e, err := reg.Call("sqrt", []Expr{x.e})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if x.val(i).null {
					return etVal{null: true}, false
				}
				f, _ := rat(i).Float64()
				return etVal{f: math.Sqrt(f)}, false
			})
		}
		tb.release()
	}
}

func TestScalarMathEdgeCases(t *testing.T) {
	reg := etNewTestRegistry()
	dec := func(s string) Expr {
		e, err := DecimalLiteral(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	f := func(v float64) Expr { return etLit(t, v, etDouble) }
	i := func(v int) Expr { return etLit(t, v, etInt32) }
	cases := []struct {
		fn   string
		args []Expr
		want string
		typ  string
	}{
		{"round", []Expr{dec("125.315"), i(2)}, "125.32", "DECIMAL(6, 2)"},
		{"round", []Expr{dec("-125.315"), i(2)}, "-125.32", "DECIMAL(6, 2)"},
		{"round", []Expr{dec("125.315"), i(-1)}, "130", "DECIMAL(4, 0)"},
		{"round", []Expr{dec("9.99")}, "10", "DECIMAL(2, 0)"},
		{"round", []Expr{dec("1.5"), i(3)}, "1.5", "DECIMAL(2, 1)"},
		{"round", []Expr{f(2.675), i(2)}, "2.68", "DOUBLE"},
		{"round", []Expr{f(-2.5)}, "-3.0", "DOUBLE"},
		{"round", []Expr{f(0.5)}, "1.0", "DOUBLE"},
		{"round", []Expr{f(-0.4)}, "0.0", "DOUBLE"},
		{"round", []Expr{f(1.0e20), i(-19)}, "1.0E20", "DOUBLE"},
		{"round", []Expr{f(123.456), i(-1)}, "120.0", "DOUBLE"},
		{"round", []Expr{f(0.06), i(1)}, "0.1", "DOUBLE"},
		{"round", []Expr{i(1250), i(-2)}, "1300", "INT"},
		{"round", []Expr{i(-1250), i(-2)}, "-1300", "INT"},
		{"round", []Expr{i(1249), i(-2)}, "1200", "INT"},
		{"round", []Expr{i(7), i(2)}, "7", "INT"},
		{"floor", []Expr{f(-1.5)}, "-2.0", "DOUBLE"},
		{"ceil", []Expr{f(-1.5)}, "-1.0", "DOUBLE"},
		{"floor", []Expr{dec("-1.50")}, "-2", "DECIMAL(3, 0)"},
		{"ceil", []Expr{dec("1.01")}, "2", "DECIMAL(3, 0)"},
		{"ceiling", []Expr{dec("-1.99")}, "-1", "DECIMAL(3, 0)"},
		{"abs", []Expr{i(math.MinInt32)}, "-2147483648", "INT"},
		{"abs", []Expr{dec("-3.20")}, "3.20", "DECIMAL(3, 2)"},
		{"power", []Expr{i(2), i(10)}, "1024.0", "DOUBLE"},
		{"power", []Expr{f(1), f(math.NaN())}, "NaN", "DOUBLE"},
		{"power", []Expr{f(-1), f(math.Inf(1))}, "NaN", "DOUBLE"},
		{"power", []Expr{f(4), f(0.5)}, "2.0", "DOUBLE"},
		{"power", []Expr{dec("1.5"), i(2)}, "2.25", "DOUBLE"},
		{"sqrt", []Expr{f(-1)}, "NaN", "DOUBLE"},
		{"sqrt", []Expr{i(16)}, "4.0", "DOUBLE"},
		{"mod", []Expr{i(-7), i(3)}, "-1", "INT"},
	}
	for _, c := range cases {
		e, err := reg.Call(c.fn, c.args)
		if err != nil {
			t.Errorf("%s: %v", c.fn, err)
			continue
		}
		if e.String() != c.want || SQLTypeName(e.Type()) != c.typ {
			t.Errorf("%s(%v) = %s %s, want %s %s", c.fn, c.args, e, SQLTypeName(e.Type()), c.want, c.typ)
		}
	}
	// round(DECIMAL) needs constant digits; 38 digits rounding up overflows.
	if _, err := reg.Call("round", []Expr{ColRef(0, scDecType(10, 2), "d"), ColRef(1, etInt32, "n")}); err == nil {
		t.Error("round(DECIMAL, column) accepted")
	}
	big := dec("99999999999999999999999999999999999999")
	if e, err := reg.Call("round", []Expr{big, i(-1)}); err != nil {
		t.Error(err)
	} else if _, ok := e.(*exprLit); ok {
		t.Errorf("round(10^38 - 1, -1) folded to %s", e)
	}
	for _, fn := range []string{"abs", "floor", "sqrt"} {
		if _, err := reg.Call(fn, []Expr{etLit(t, "x", etString)}); err == nil {
			t.Errorf("%s(VARCHAR) accepted", fn)
		}
	}
}
