package kernels

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func etNewTestRegistry() *Registry {
	r := NewRegistry()
	RegisterScalar(r)
	return r
}

var etNumericKinds = []scKind{skInt8, skInt16, skInt32, skInt64, skFloat32, skFloat64}

func etRefCommon(a, b scKind) scKind {
	k, _ := scCommonKind(a, b)
	return k
}

// Every arithmetic function over every pair of numeric types and every
// etOperand shape, against the row-at-a-time reference.
func TestArithRandom(t *testing.T) {
	reg := etNewTestRegistry()
	ops := map[string]scArithOp{"add": scAdd, "subtract": scSub, "multiply": scMul, "divide": scDiv, "modulus": scMod}
	r := rand.New(rand.NewSource(1))
	for name, op := range ops {
		for _, lk := range etNumericKinds {
			for _, rk := range etNumericKinds {
				t.Run(name+"/"+etKindName(lk)+"_"+etKindName(rk), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					for iter := 0; iter < 6; iter++ {
						tb := etRandBatch(r, mem)
						k := etRefCommon(lk, rk)
						for _, ops := range etOperands(t, r, tb, lk, rk) {
							l, rr := ops[0], ops[1]
							e, err := reg.Call(name, []Expr{l.e, rr.e})
							if err != nil {
								t.Fatal(err)
							}
							if SQLTypeName(e.Type()) != etKindName(k) {
								t.Fatalf("%s: type %s, want %s", e, SQLTypeName(e.Type()), etKindName(k))
							}
							etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
								return etRefArith(op, k, etRefConv(l.val(i), lk, k), etRefConv(rr.val(i), rk, k))
							})
						}
						tb.release()
					}
				})
			}
		}
	}
}

func TestNegateRandom(t *testing.T) {
	reg := etNewTestRegistry()
	r := rand.New(rand.NewSource(2))
	for _, k := range etNumericKinds {
		t.Run(etKindName(k), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for iter := 0; iter < 10; iter++ {
				tb := etRandBatch(r, mem)
				name := etColName(k, "a")
				e, err := reg.Call("negate", []Expr{tb.col(name)})
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					return etRefArith(scSub, k, etRefConv(etVal{}, skInt64, k), tb.vals[name][i])
				})
				tb.release()
			}
		})
	}
}

// Every comparison over every comparable pair of types and every shape.
func TestCompareRandom(t *testing.T) {
	reg := etNewTestRegistry()
	ops := map[string]scCmpOp{"equal": scEq, "not_equal": scNe, "lt": scLt, "lte": scLte, "gt": scGt, "gte": scGte}
	var pairs [][2]scKind
	for _, a := range etNumericKinds {
		for _, b := range etNumericKinds {
			pairs = append(pairs, [2]scKind{a, b})
		}
	}
	pairs = append(pairs, [2]scKind{skString, skString}, [2]scKind{skBool, skBool}, [2]scKind{skTimestamp, skTimestamp})
	r := rand.New(rand.NewSource(3))
	for name, op := range ops {
		for _, p := range pairs {
			lk, rk := p[0], p[1]
			t.Run(name+"/"+etKindName(lk)+"_"+etKindName(rk), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				for iter := 0; iter < 6; iter++ {
					tb := etRandBatch(r, mem)
					k := etRefCommon(lk, rk)
					for _, ops := range etOperands(t, r, tb, lk, rk) {
						l, rr := ops[0], ops[1]
						e, err := reg.Call(name, []Expr{l.e, rr.e})
						if err != nil {
							t.Fatal(err)
						}
						etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
							return etRefCompare(op, k, etRefConv(l.val(i), lk, k), etRefConv(rr.val(i), rk, k)), false
						})
					}
					tb.release()
				}
			})
		}
	}
}

func TestLogicRandom(t *testing.T) {
	reg := etNewTestRegistry()
	r := rand.New(rand.NewSource(4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 60; iter++ {
		tb := etRandBatch(r, mem)
		for _, ops := range etOperands(t, r, tb, skBool, skBool) {
			l, rr := ops[0], ops[1]
			for _, fn := range []string{"and", "or"} {
				e, err := reg.Call(fn, []Expr{l.e, rr.e})
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					if fn == "and" {
						return etRefAnd(l.val(i), rr.val(i)), false
					}
					return etRefOr(l.val(i), rr.val(i)), false
				})
			}
			unary := map[string]func(v etVal) etVal{
				"not": func(v etVal) etVal {
					if v.null {
						return v
					}
					return etVal{b: !v.b}
				},
				"is_null":      func(v etVal) etVal { return etVal{b: v.null} },
				"is_not_null":  func(v etVal) etVal { return etVal{b: !v.null} },
				"is_true":      func(v etVal) etVal { return etVal{b: !v.null && v.b} },
				"is_false":     func(v etVal) etVal { return etVal{b: !v.null && !v.b} },
				"is_not_true":  func(v etVal) etVal { return etVal{b: v.null || !v.b} },
				"is_not_false": func(v etVal) etVal { return etVal{b: v.null || v.b} },
			}
			for fn, ref := range unary {
				e, err := reg.Call(fn, []Expr{l.e})
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) { return ref(l.val(i)), false })
			}
		}
		// Variadic AND/OR with three etOperands.
		a, b, c := tb.col("BOOLEAN_a"), tb.col("BOOLEAN_b"), tb.col("BOOLEAN_a")
		va, vb := tb.vals["BOOLEAN_a"], tb.vals["BOOLEAN_b"]
		e, err := reg.Call("and", []Expr{a, b, c})
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) { return etRefAnd(etRefAnd(va[i], vb[i]), va[i]), false })
		// IS NULL over every type.
		for _, k := range scTestKinds {
			name := etColName(k, "b")
			e, err := reg.Call("is_null", []Expr{tb.col(name)})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) { return etVal{b: tb.vals[name][i].null}, false })
		}
		tb.release()
	}
}

func TestCoalesceRandom(t *testing.T) {
	reg := etNewTestRegistry()
	r := rand.New(rand.NewSource(5))
	for _, k := range scTestKinds {
		t.Run(etKindName(k), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for iter := 0; iter < 12; iter++ {
				tb := etRandBatch(r, mem)
				a, b := etColName(k, "a"), etColName(k, "b")
				va, vb := tb.vals[a], tb.vals[b]
				lit := etGenVal(r, k)
				cases := []struct {
					args []Expr
					ref  func(i int) etVal
				}{
					{[]Expr{tb.col(a), tb.col(b)}, func(i int) etVal { return etFirstNonNull(va[i], vb[i]) }},
					{[]Expr{tb.col(a), tb.col(b), etLiteralOf(t, lit, k)}, func(i int) etVal { return etFirstNonNull(va[i], vb[i], lit) }},
					{[]Expr{etLiteralOf(t, etVal{null: true}, skNull), tb.col(a), etLiteralOf(t, lit, k), tb.col(b)}, func(i int) etVal { return etFirstNonNull(va[i], lit) }},
					{[]Expr{tb.col(b)}, func(i int) etVal { return vb[i] }},
				}
				for _, c := range cases {
					e, err := reg.Call("coalesce", c.args)
					if err != nil {
						t.Fatal(err)
					}
					etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) { return c.ref(i), false })
				}
				tb.release()
			}
		})
	}
	// Mixed numeric types promote.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 20; iter++ {
		tb := etRandBatch(r, mem)
		a, b := etColName(skInt16, "a"), etColName(skFloat32, "b")
		e, err := reg.Call("coalesce", []Expr{tb.col(a), tb.col(b)})
		if err != nil {
			t.Fatal(err)
		}
		if e.Type().ID() != scTypeOf(skFloat32).ID() {
			t.Fatalf("coalesce(SMALLINT, FLOAT) type %s", SQLTypeName(e.Type()))
		}
		etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
			return etFirstNonNull(etRefConv(tb.vals[a][i], skInt16, skFloat32), tb.vals[b][i]), false
		})
		tb.release()
	}
}

func etFirstNonNull(vs ...etVal) etVal {
	for _, v := range vs {
		if !v.null {
			return v
		}
	}
	return etVal{null: true}
}

// Numeric casts between every pair of numeric types.
func TestCastNumericRandom(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 30; iter++ {
		tb := etRandBatch(r, mem)
		for _, from := range etNumericKinds {
			for _, to := range etNumericKinds {
				name := etColName(from, "a")
				e, err := Cast(tb.col(name), scTypeOf(to))
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) { return etRefConv(tb.vals[name][i], from, to), false })
			}
		}
		tb.release()
	}
}

// AND/OR/COALESCE with an etOperand that fails (integer division by zero)
// fail exactly when a live row needs that etOperand.
func TestShortCircuitRandom(t *testing.T) {
	reg := etNewTestRegistry()
	r := rand.New(rand.NewSource(10))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 200; iter++ {
		tb := etRandBatch(r, mem)
		p, x, y := "BOOLEAN_a", "INT_a", "INT_b"
		vp, vx, vy := tb.vals[p], tb.vals[x], tb.vals[y]
		div, _ := reg.Call("divide", []Expr{tb.col(x), tb.col(y)})
		zero := etLiteralOf(t, etVal{}, skInt32)
		right, _ := reg.Call("gt", []Expr{div, zero})
		refRight := func(i int) (etVal, bool) {
			q, fail := etRefArith(scDiv, skInt32, vx[i], vy[i])
			return etRefCompare(scGt, skInt32, q, etVal{}), fail
		}
		for _, fn := range []string{"and", "or"} {
			e, err := reg.Call(fn, []Expr{tb.col(p), right})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				l := vp[i]
				if !l.null && l.b == (fn == "or") {
					return etVal{b: l.b}, false // decided: the right side is not evaluated
				}
				rr, fail := refRight(i)
				if fn == "and" {
					return etRefAnd(l, rr), fail
				}
				return etRefOr(l, rr), fail
			})
		}
		vs := tb.vals["SMALLINT_a"]
		e, err := reg.Call("coalesce", []Expr{tb.col("SMALLINT_a"), div})
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
			if !vs[i].null {
				return vs[i], false
			}
			return etRefArith(scDiv, skInt32, vx[i], vy[i])
		})
		tb.release()
	}
}
