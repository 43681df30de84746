package kernels

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etPromote returns the expected etVal for a result column of type t
// that takes value v from a column of kind from (numeric promotion).
func etPromote(v etVal, from, to arrow.DataType) etVal {
	fk, tk := scKindOf(from), scKindOf(to)
	if v.null || fk == skNull || fk == tk && (tk != skDecimal || arrow.TypeEqual(from, to)) {
		return v
	}
	if tk == skDecimal {
		_, s := scDecPS(to)
		return etVal{d: etRoundHalfUp(etRat(v, from), s)} // exact: the common scale is the largest
	}
	if fk == skDecimal && tk == skFloat64 {
		f, _ := etRat(v, from).Float64()
		return etVal{f: f}
	}
	return etRefConv(v, fk, tk)
}

// CASE over random batches: conditions from columns and comparisons,
// results of every type (columns, literals, NULL), a result that fails
// (integer division) only where a live row picks it.
func TestCaseRandom(t *testing.T) {
	r := rand.New(rand.NewSource(30))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	resultSets := [][]string{
		{"INT_a", "BIGINT_b", "INT_b"},
		{"DOUBLE_a", "INT_a", "FLOAT_b"},
		{"VARCHAR_a", "TEXT_a", "VARCHAR_b"},
		{"BOOLEAN_a", "BOOLEAN_b", "BOOLEAN_a"},
		{"TIMESTAMP(3)_a", "TIMESTAMP(3)_b", "TIMESTAMP(3)_a"},
		{"DEC_a", "DECW_b", "INT_a"},
		{"SMALLINT_a", "TINYINT_b", "SMALLINT_b"},
	}
	for iter := 0; iter < 150; iter++ {
		tb := etRandBatch(r, mem)
		p, q := "BOOLEAN_a", "BOOLEAN_b"
		gt, _ := reg.Call("gt", []Expr{tb.col("INT_a"), tb.col("INT_b")})
		conds := []Expr{tb.col(p), gt, tb.col(q)}
		condRef := []func(i int) etVal{
			func(i int) etVal { return tb.vals[p][i] },
			func(i int) etVal {
				return etRefCompare(scGt, skInt32, tb.vals["INT_a"][i], tb.vals["INT_b"][i])
			},
			func(i int) etVal { return tb.vals[q][i] },
		}
		for _, set := range resultSets {
			types := make([]arrow.DataType, len(set))
			for k, c := range set {
				types[k] = tb.b.Schema().Field(tb.cols[c]).Type
			}
			results := make([]etOperand, 3)
			for k, c := range set {
				results[k] = etColOp(tb, c)
			}
			// Sometimes a literal or a NULL in the second branch.
			switch r.Intn(3) {
			case 0:
				v := etGenValT(r, types[1])
				results[1] = etOperand{e: etLiteralOfT(t, v, types[1]), val: func(int) etVal { return v }}
			case 1:
				results[1] = etOperand{e: etLit(t, nil, arrow.Null), val: func(int) etVal { return etVal{null: true} }}
				types[1] = arrow.Null
			}
			var els *etOperand
			elsType := arrow.DataType(arrow.Null)
			switch r.Intn(3) {
			case 0:
				e := etColOp(tb, set[2])
				els, elsType = &e, types[2]
			case 1:
				v := etGenValT(r, types[0])
				e := etOperand{e: etLiteralOfT(t, v, types[0]), val: func(int) etVal { return v }}
				els, elsType = &e, types[0]
			}
			var elsExpr Expr
			if els != nil {
				elsExpr = els.e
			}
			want, ok := arrow.DataType(arrow.Null), true
			for _, typ := range append(types, elsType) {
				if want, ok = scCommonType(want, typ); !ok {
					t.Fatal("no common type")
				}
			}
			e, err := Case(conds, []Expr{results[0].e, results[1].e, results[2].e}, elsExpr)
			if err != nil {
				t.Fatal(err)
			}
			if !arrow.TypeEqual(e.Type(), want) {
				t.Fatalf("%s: type %s, want %s", e, SQLTypeName(e.Type()), SQLTypeName(want))
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				for k := range conds {
					if c := condRef[k](i); !c.null && c.b {
						return etPromote(results[k].val(i), types[k], want), false
					}
				}
				if els == nil {
					return etVal{null: true}, false
				}
				return etPromote(els.val(i), elsType, want), false
			})
		}
		// A THEN that divides: guarded it never fails; unguarded it fails
		// exactly when a live row takes it with a zero divisor.
		x, y := tb.col("INT_a"), tb.col("INT_b")
		vx, vy := tb.vals["INT_a"], tb.vals["INT_b"]
		ne, _ := reg.Call("not_equal", []Expr{y, etLit(t, 0, etInt32)})
		div, _ := reg.Call("divide", []Expr{x, y})
		guarded, err := Case([]Expr{ne}, []Expr{div}, nil)
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, guarded, tb, func(i int) (etVal, bool) {
			if vy[i].null || vy[i].i == 0 {
				return etVal{null: true}, false
			}
			return etRefArith(scDiv, skInt32, vx[i], vy[i])
		})
		unguarded, err := Case([]Expr{tb.col(p)}, []Expr{div}, etLit(t, -1, etInt32))
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, unguarded, tb, func(i int) (etVal, bool) {
			if c := tb.vals[p][i]; !c.null && c.b {
				return etRefArith(scDiv, skInt32, vx[i], vy[i])
			}
			return etVal{i: -1}, false
		})
		tb.release()
	}
}

func TestCaseSemantics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{"a": {10, 7, nil, 3}, "b": {2, 0, 1, 0}},
		map[string]arrow.DataType{"a": etInt32, "b": etInt32}, "a", "b")
	defer b.Release()
	a, bb := ColRef(0, etInt32, "a"), ColRef(1, etInt32, "b")
	zero := etLit(t, 0, etInt32)
	// CASE WHEN b <> 0 THEN a / b END: no division by zero.
	e, err := Case([]Expr{etCall(t, "not_equal", bb, zero)}, []Expr{etCall(t, "divide", a, bb)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := etEvalRows(t, mem, e, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []etVal{{i: 5}, {null: true}, {null: true}, {null: true}}
	for i := range want {
		if !etSameVal(skInt32, rows[i], want[i]) {
			t.Fatalf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	// Without the guard the division fails.
	e, _ = Case([]Expr{etLit(t, nil, arrow.Null), etCall(t, "is_not_null", a)}, []Expr{zero, etCall(t, "divide", a, bb)}, nil)
	if _, err := etEvalRows(t, mem, e, b); !errors.Is(err, ErrDivisionByZero) {
		t.Fatalf("unguarded: %v", err)
	}
	// Constant conditions simplify; all-constant CASEs fold.
	cases := []struct {
		conds   []Expr
		results []Expr
		els     Expr
		want    string
	}{
		{[]Expr{etLit(t, nil, arrow.Null)}, []Expr{etLit(t, 1, etInt32)}, etLit(t, 2, etInt32), "2"},
		{[]Expr{etLit(t, false, etBool), etLit(t, true, etBool)}, []Expr{etLit(t, 1, etInt32), a}, etLit(t, 2, etInt32), "a"},
		{[]Expr{etLit(t, true, etBool)}, []Expr{etLit(t, "x", etString)}, nil, "'x'"},
		{[]Expr{etLit(t, false, etBool)}, []Expr{etLit(t, "x", etString)}, nil, "NULL"},
		{[]Expr{etCall(t, "gt", a, zero)}, []Expr{etLit(t, 1, etInt32)}, etLit(t, 2.5, etDouble), "CASE WHEN gt(a, 0) THEN 1.0 ELSE 2.5 END"},
	}
	for _, c := range cases {
		e, err := Case(c.conds, c.results, c.els)
		if err != nil || e.String() != c.want {
			t.Errorf("Case: %v %v, want %s", e, err, c.want)
		}
	}
	// Types.
	d, _ := DecimalLiteral("1.50")
	e, _ = Case([]Expr{etCall(t, "gt", a, zero)}, []Expr{d}, a)
	if SQLTypeName(e.Type()) != "DECIMAL(12, 2)" {
		t.Errorf("CASE DECIMAL(3, 2) / INT: %s", SQLTypeName(e.Type()))
	}
	e, _ = Case([]Expr{etCall(t, "gt", a, zero)}, []Expr{etLit(t, nil, arrow.Null)}, etLit(t, int64(5), etInt64))
	if e.Type().ID() != arrow.INT64 {
		t.Errorf("CASE NULL / BIGINT: %s", SQLTypeName(e.Type()))
	}
	for _, bad := range []struct {
		conds, results []Expr
		els            Expr
		want           string
	}{
		{[]Expr{a}, []Expr{a}, nil, "WHEN condition 1 is INT, not BOOLEAN"},
		{[]Expr{etLit(t, true, etBool)}, []Expr{a}, etLit(t, "x", etString), "no common type (INT, VARCHAR)"},
		{[]Expr{etCall(t, "gt", a, zero)}, []Expr{etLit(t, nil, arrow.Null)}, nil, "every result is NULL"},
		{nil, nil, nil, "0 conditions"},
	} {
		if _, err := Case(bad.conds, bad.results, bad.els); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Case error %v, want %q", err, bad.want)
		}
	}
}

func TestScalarNullif(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 40; iter++ {
		tb := etRandBatch(r, mem)
		for _, pr := range [][2]string{{"INT_a", "INT_b"}, {"INT_a", "BIGINT_b"}, {"VARCHAR_a", "VARCHAR_b"}, {"DOUBLE_a", "DOUBLE_b"}, {"DEC_a", "DEC_b"}, {"BOOLEAN_a", "BOOLEAN_b"}, {"TEXT_a", "TEXT_b"}} {
			lt, rt := tb.b.Schema().Field(tb.cols[pr[0]]).Type, tb.b.Schema().Field(tb.cols[pr[1]]).Type
			ct, _ := scCommonType(lt, rt)
			for _, o := range etOperandsT(t, r, tb, pr[0], pr[1]) {
				if scIsNullLiteral(o[0].e) && scIsNullLiteral(o[1].e) {
					continue
				}
				e, err := reg.Call("nullif", []Expr{o[0].e, o[1].e})
				if err != nil {
					t.Fatal(err)
				}
				if !arrow.TypeEqual(e.Type(), lt) {
					t.Fatalf("%s: type %s", e, SQLTypeName(e.Type()))
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					x, y := o[0].val(i), o[1].val(i)
					if x.null || y.null {
						return x, false
					}
					var eq bool
					if scKindOf(ct) == skDecimal {
						eq = etRat(x, lt).Cmp(etRat(y, rt)) == 0
					} else {
						eq = etRefCompare(scEq, scKindOf(ct), etRefConvAny(x, lt, ct), etRefConvAny(y, rt, ct)).b
					}
					if eq {
						return etVal{null: true}, false
					}
					return x, false
				})
			}
		}
		tb.release()
	}
}

func etRefConvAny(v etVal, from, to arrow.DataType) etVal {
	fk, tk := scKindOf(from), scKindOf(to)
	if fk == tk || !fk.isNumeric() {
		return v
	}
	return etRefConv(v, fk, tk)
}

// BETWEEN: the registry's between and the binder's rewrite
// x >= lo AND x <= hi agree with the reference (inclusive, NULL rules).
func TestExprBetween(t *testing.T) {
	r := rand.New(rand.NewSource(32))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 60; iter++ {
		tb := etRandBatch(r, mem)
		for _, c := range [][3]string{{"INT_a", "INT_b", "BIGINT_a"}, {"DOUBLE_a", "INT_a", "DOUBLE_b"}, {"VARCHAR_a", "VARCHAR_b", "TEXT_a"}, {"DEC_a", "DEC_b", "INT_b"}} {
			x, lo, hi := etColOp(tb, c[0]), etColOp(tb, c[1]), etColOp(tb, c[2])
			if r.Intn(2) == 0 {
				typ := tb.b.Schema().Field(tb.cols[c[1]]).Type
				v := etGenValT(r, typ)
				lo = etOperand{e: etLiteralOfT(t, v, typ), val: func(int) etVal { return v }}
			}
			types := []arrow.DataType{tb.b.Schema().Field(tb.cols[c[0]]).Type, tb.b.Schema().Field(tb.cols[c[1]]).Type, tb.b.Schema().Field(tb.cols[c[2]]).Type}
			cmp := func(a etVal, at arrow.DataType, b etVal, bt arrow.DataType, op scCmpOp) etVal {
				if a.null || b.null {
					return etVal{null: true}
				}
				ct, _ := scCommonType(at, bt)
				if scKindOf(ct) == skDecimal {
					return etVal{b: scCmpResult(op, etRat(a, at).Cmp(etRat(b, bt)))}
				}
				return etRefCompare(op, scKindOf(ct), etRefConvAny(a, at, ct), etRefConvAny(b, bt, ct))
			}
			ref := func(i int) (etVal, bool) {
				return etRefAnd(cmp(x.val(i), types[0], lo.val(i), types[1], scGte), cmp(x.val(i), types[0], hi.val(i), types[2], scLte)), false
			}
			e, err := reg.Call("between", []Expr{x.e, lo.e, hi.e})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, ref)
			ge, _ := reg.Call("gte", []Expr{x.e, lo.e})
			le, _ := reg.Call("lte", []Expr{x.e, hi.e})
			and, err := reg.Call("and", []Expr{ge, le})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, and, tb, ref)
		}
		tb.release()
	}
}

// COALESCE over DECIMALs of different types and with integers: the common
// DECIMAL type, values rescaled exactly.
func TestDecimalCoalesce(t *testing.T) {
	r := rand.New(rand.NewSource(33))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 40; iter++ {
		tb := etRandBatch(r, mem)
		for _, cols := range [][]string{{"DEC_a", "DEC_b"}, {"DEC_a", "DECW_b", "INT_a"}, {"DEC0_a", "DEC_a"}} {
			args := make([]Expr, len(cols))
			types := make([]arrow.DataType, len(cols))
			for k, c := range cols {
				args[k], types[k] = tb.col(c), tb.b.Schema().Field(tb.cols[c]).Type
			}
			e, err := reg.Call("coalesce", args)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := scCommonTypes(args)
			if !arrow.TypeEqual(e.Type(), want) || scKindOf(want) != skDecimal {
				t.Fatalf("%s: type %s", e, SQLTypeName(e.Type()))
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				for k, c := range cols {
					if v := tb.vals[c][i]; !v.null {
						return etPromote(v, types[k], want), false
					}
				}
				return etVal{null: true}, false
			})
		}
		tb.release()
	}
}

// Compiled expressions with per-evaluation caches (pattern and character
// set columns) and CASE evaluated by several goroutines at once.
func TestExprConcurrentNewKernels(t *testing.T) {
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tb := etRandBatch(rand.New(rand.NewSource(34)), mem)
	defer tb.release()
	like, _ := reg.Call("like", []Expr{tb.col("TEXT_a"), tb.col("TEXT_b")})
	up, _ := reg.Call("upper", []Expr{tb.col("TEXT_a")})
	c, err := Case([]Expr{like}, []Expr{up}, tb.col("VARCHAR_a"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := reg.Call("trim", []Expr{tb.col("TEXT_a"), tb.col("TEXT_b")})
	for _, e := range []Expr{c, ts} {
		want, err := e.Eval(tb.b, mem)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				for k := 0; k < 30; k++ {
					got, err := e.Eval(tb.b, mem)
					if err != nil {
						errs <- err
						return
					}
					for _, i := range etLiveRows(tb.b) {
						if !etSameVal(scKindOf(e.Type()), etRowVal(got, i), etRowVal(want, i)) {
							got.Release()
							errs <- errors.New("results differ")
							return
						}
					}
					got.Release()
				}
				errs <- nil
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		want.Release()
	}
}
