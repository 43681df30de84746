package kernels

import (
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func newTestRegistry() *Registry {
	r := NewRegistry()
	RegisterScalar(r)
	return r
}

var numericKinds = []scKind{skInt8, skInt16, skInt32, skInt64, skFloat32, skFloat64}

func refCommon(a, b scKind) scKind {
	k, _ := scCommonKind(a, b)
	return k
}

// Every arithmetic function over every pair of numeric types and every
// operand shape, against the row-at-a-time reference.
func TestArithRandom(t *testing.T) {
	reg := newTestRegistry()
	ops := map[string]scArithOp{"add": opAdd, "subtract": opSub, "multiply": opMul, "divide": opDiv, "modulus": opMod}
	r := rand.New(rand.NewSource(1))
	for name, op := range ops {
		for _, lk := range numericKinds {
			for _, rk := range numericKinds {
				t.Run(name+"/"+kindName(lk)+"_"+kindName(rk), func(t *testing.T) {
					mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer mem.AssertSize(t, 0)
					for iter := 0; iter < 6; iter++ {
						tb := randBatch(r, mem)
						k := refCommon(lk, rk)
						for _, ops := range operands(t, r, tb, lk, rk) {
							l, rr := ops[0], ops[1]
							e, err := reg.Call(name, []Expr{l.e, rr.e})
							if err != nil {
								t.Fatal(err)
							}
							if SQLTypeName(e.Type()) != kindName(k) {
								t.Fatalf("%s: type %s, want %s", e, SQLTypeName(e.Type()), kindName(k))
							}
							checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
								return refArith(op, k, refConv(l.val(i), lk, k), refConv(rr.val(i), rk, k))
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
	reg := newTestRegistry()
	r := rand.New(rand.NewSource(2))
	for _, k := range numericKinds {
		t.Run(kindName(k), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for iter := 0; iter < 10; iter++ {
				tb := randBatch(r, mem)
				name := colName(k, "a")
				e, err := reg.Call("negate", []Expr{tb.col(name)})
				if err != nil {
					t.Fatal(err)
				}
				checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
					return refArith(opSub, k, refConv(rv{}, skInt64, k), tb.vals[name][i])
				})
				tb.release()
			}
		})
	}
}

// Every comparison over every comparable pair of types and every shape.
func TestCompareRandom(t *testing.T) {
	reg := newTestRegistry()
	ops := map[string]scCmpOp{"equal": cmpEq, "not_equal": cmpNe, "lt": cmpLt, "lte": cmpLte, "gt": cmpGt, "gte": cmpGte}
	var pairs [][2]scKind
	for _, a := range numericKinds {
		for _, b := range numericKinds {
			pairs = append(pairs, [2]scKind{a, b})
		}
	}
	pairs = append(pairs, [2]scKind{skString, skString}, [2]scKind{skBool, skBool}, [2]scKind{skTimestamp, skTimestamp})
	r := rand.New(rand.NewSource(3))
	for name, op := range ops {
		for _, p := range pairs {
			lk, rk := p[0], p[1]
			t.Run(name+"/"+kindName(lk)+"_"+kindName(rk), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				for iter := 0; iter < 6; iter++ {
					tb := randBatch(r, mem)
					k := refCommon(lk, rk)
					for _, ops := range operands(t, r, tb, lk, rk) {
						l, rr := ops[0], ops[1]
						e, err := reg.Call(name, []Expr{l.e, rr.e})
						if err != nil {
							t.Fatal(err)
						}
						checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
							return refCompare(op, k, refConv(l.val(i), lk, k), refConv(rr.val(i), rk, k)), false
						})
					}
					tb.release()
				}
			})
		}
	}
}

func TestLogicRandom(t *testing.T) {
	reg := newTestRegistry()
	r := rand.New(rand.NewSource(4))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 60; iter++ {
		tb := randBatch(r, mem)
		for _, ops := range operands(t, r, tb, skBool, skBool) {
			l, rr := ops[0], ops[1]
			for _, fn := range []string{"and", "or"} {
				e, err := reg.Call(fn, []Expr{l.e, rr.e})
				if err != nil {
					t.Fatal(err)
				}
				checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
					if fn == "and" {
						return refAnd(l.val(i), rr.val(i)), false
					}
					return refOr(l.val(i), rr.val(i)), false
				})
			}
			unary := map[string]func(v rv) rv{
				"not": func(v rv) rv {
					if v.null {
						return v
					}
					return rv{b: !v.b}
				},
				"is_null":      func(v rv) rv { return rv{b: v.null} },
				"is_not_null":  func(v rv) rv { return rv{b: !v.null} },
				"is_true":      func(v rv) rv { return rv{b: !v.null && v.b} },
				"is_false":     func(v rv) rv { return rv{b: !v.null && !v.b} },
				"is_not_true":  func(v rv) rv { return rv{b: v.null || !v.b} },
				"is_not_false": func(v rv) rv { return rv{b: v.null || v.b} },
			}
			for fn, ref := range unary {
				e, err := reg.Call(fn, []Expr{l.e})
				if err != nil {
					t.Fatal(err)
				}
				checkAgainst(t, mem, e, tb, func(i int) (rv, bool) { return ref(l.val(i)), false })
			}
		}
		// Variadic AND/OR with three operands.
		a, b, c := tb.col("BOOLEAN_a"), tb.col("BOOLEAN_b"), tb.col("BOOLEAN_a")
		va, vb := tb.vals["BOOLEAN_a"], tb.vals["BOOLEAN_b"]
		e, err := reg.Call("and", []Expr{a, b, c})
		if err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, mem, e, tb, func(i int) (rv, bool) { return refAnd(refAnd(va[i], vb[i]), va[i]), false })
		// IS NULL over every type.
		for _, k := range scTestKinds {
			name := colName(k, "b")
			e, err := reg.Call("is_null", []Expr{tb.col(name)})
			if err != nil {
				t.Fatal(err)
			}
			checkAgainst(t, mem, e, tb, func(i int) (rv, bool) { return rv{b: tb.vals[name][i].null}, false })
		}
		tb.release()
	}
}

func TestCoalesceRandom(t *testing.T) {
	reg := newTestRegistry()
	r := rand.New(rand.NewSource(5))
	for _, k := range scTestKinds {
		t.Run(kindName(k), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			for iter := 0; iter < 12; iter++ {
				tb := randBatch(r, mem)
				a, b := colName(k, "a"), colName(k, "b")
				va, vb := tb.vals[a], tb.vals[b]
				lit := genVal(r, k)
				cases := []struct {
					args []Expr
					ref  func(i int) rv
				}{
					{[]Expr{tb.col(a), tb.col(b)}, func(i int) rv { return firstNonNull(va[i], vb[i]) }},
					{[]Expr{tb.col(a), tb.col(b), literalOf(t, lit, k)}, func(i int) rv { return firstNonNull(va[i], vb[i], lit) }},
					{[]Expr{literalOf(t, rv{null: true}, skNull), tb.col(a), literalOf(t, lit, k), tb.col(b)}, func(i int) rv { return firstNonNull(va[i], lit) }},
					{[]Expr{tb.col(b)}, func(i int) rv { return vb[i] }},
				}
				for _, c := range cases {
					e, err := reg.Call("coalesce", c.args)
					if err != nil {
						t.Fatal(err)
					}
					checkAgainst(t, mem, e, tb, func(i int) (rv, bool) { return c.ref(i), false })
				}
				tb.release()
			}
		})
	}
	// Mixed numeric types promote.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 20; iter++ {
		tb := randBatch(r, mem)
		a, b := colName(skInt16, "a"), colName(skFloat32, "b")
		e, err := reg.Call("coalesce", []Expr{tb.col(a), tb.col(b)})
		if err != nil {
			t.Fatal(err)
		}
		if e.Type().ID() != scTypeOf(skFloat32).ID() {
			t.Fatalf("coalesce(SMALLINT, FLOAT) type %s", SQLTypeName(e.Type()))
		}
		checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
			return firstNonNull(refConv(tb.vals[a][i], skInt16, skFloat32), tb.vals[b][i]), false
		})
		tb.release()
	}
}

func firstNonNull(vs ...rv) rv {
	for _, v := range vs {
		if !v.null {
			return v
		}
	}
	return rv{null: true}
}

// Numeric casts between every pair of numeric types.
func TestCastNumericRandom(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 30; iter++ {
		tb := randBatch(r, mem)
		for _, from := range numericKinds {
			for _, to := range numericKinds {
				name := colName(from, "a")
				e, err := Cast(tb.col(name), scTypeOf(to))
				if err != nil {
					t.Fatal(err)
				}
				checkAgainst(t, mem, e, tb, func(i int) (rv, bool) { return refConv(tb.vals[name][i], from, to), false })
			}
		}
		tb.release()
	}
}

// AND/OR/COALESCE with an operand that fails (integer division by zero)
// fail exactly when a live row needs that operand.
func TestShortCircuitRandom(t *testing.T) {
	reg := newTestRegistry()
	r := rand.New(rand.NewSource(10))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 200; iter++ {
		tb := randBatch(r, mem)
		p, x, y := "BOOLEAN_a", "INT_a", "INT_b"
		vp, vx, vy := tb.vals[p], tb.vals[x], tb.vals[y]
		div, _ := reg.Call("divide", []Expr{tb.col(x), tb.col(y)})
		zero := literalOf(t, rv{}, skInt32)
		right, _ := reg.Call("gt", []Expr{div, zero})
		refRight := func(i int) (rv, bool) {
			q, fail := refArith(opDiv, skInt32, vx[i], vy[i])
			return refCompare(cmpGt, skInt32, q, rv{}), fail
		}
		for _, fn := range []string{"and", "or"} {
			e, err := reg.Call(fn, []Expr{tb.col(p), right})
			if err != nil {
				t.Fatal(err)
			}
			checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
				l := vp[i]
				if !l.null && l.b == (fn == "or") {
					return rv{b: l.b}, false // decided: the right side is not evaluated
				}
				rr, fail := refRight(i)
				if fn == "and" {
					return refAnd(l, rr), fail
				}
				return refOr(l, rr), fail
			})
		}
		vs := tb.vals["SMALLINT_a"]
		e, err := reg.Call("coalesce", []Expr{tb.col("SMALLINT_a"), div})
		if err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, mem, e, tb, func(i int) (rv, bool) {
			if !vs[i].null {
				return vs[i], false
			}
			return refArith(opDiv, skInt32, vx[i], vy[i])
		})
		tb.release()
	}
}
