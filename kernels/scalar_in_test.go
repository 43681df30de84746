package kernels

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etRefEq is x = y for values of types xt, yt compared in their common type.
func etRefEq(x etVal, xt arrow.DataType, y etVal, yt arrow.DataType) etVal {
	if x.null || y.null {
		return etVal{null: true}
	}
	ct, _ := scCommonType(xt, yt)
	if scKindOf(ct) == skDecimal {
		return etVal{b: etRat(x, xt).Cmp(etRat(y, yt)) == 0}
	}
	if scKindOf(ct) == skFloat64 && scKindOf(xt) == skDecimal {
		f, _ := etRat(x, xt).Float64()
		x, xt = etVal{f: f}, ct
	}
	return etRefCompare(scEq, scKindOf(ct), etRefConvAny(x, xt, ct), etRefConvAny(y, yt, ct))
}

// IN over random batches: short and long literal lists (scan and hash
// set), a NULL in the list, column items, mixed numeric types.
func TestExprInListRandom(t *testing.T) {
	r := rand.New(rand.NewSource(50))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	type itemRef struct {
		typ arrow.DataType
		val func(i int) etVal
	}
	xs := []struct{ col, litCol, other string }{
		{"INT_a", "INT_b", "INT_b"}, {"BIGINT_a", "INT_b", "BIGINT_b"}, {"DOUBLE_a", "DOUBLE_b", "DOUBLE_b"},
		{"FLOAT_a", "FLOAT_b", "FLOAT_b"}, {"VARCHAR_a", "VARCHAR_b", "VARCHAR_b"}, {"TEXT_a", "TEXT_b", "TEXT_b"},
		{"BOOLEAN_a", "BOOLEAN_b", "BOOLEAN_b"}, {"TIMESTAMP(3)_a", "TIMESTAMP(3)_b", "TIMESTAMP(3)_b"},
		{"DEC_a", "DEC_b", "DECW_b"}, {"INT_a", "DEC_b", "INT_b"}, {"SMALLINT_a", "BIGINT_b", "TINYINT_b"}, {"DEC0_a", "INT_a", "BIGINT_b"},
	}
	for iter := 0; iter < 60; iter++ {
		tb := etRandBatch(r, mem)
		for _, c := range xs {
			xt := tb.b.Schema().Field(tb.cols[c.col]).Type
			lt := tb.b.Schema().Field(tb.cols[c.litCol]).Type
			ot := tb.b.Schema().Field(tb.cols[c.other]).Type
			for _, size := range []int{1, 3, 8, 9, 16, 40} {
				var items []Expr
				var refs []itemRef
				for k := 0; k < size; k++ {
					v := etGenValT(r, lt)
					if k == 0 && r.Intn(2) == 0 { // a value the column holds
						if col := tb.vals[c.col]; len(col) > 0 && !col[0].null && scKindOf(xt) == scKindOf(lt) && arrow.TypeEqual(xt, lt) {
							v = col[0]
						}
					}
					items = append(items, etLiteralOfT(t, v, lt))
					refs = append(refs, itemRef{lt, func(int) etVal { return v }})
				}
				switch r.Intn(4) {
				case 0:
					items = append(items, etLit(t, nil, arrow.Null))
					refs = append(refs, itemRef{arrow.Null, func(int) etVal { return etVal{null: true} }})
				case 1:
					items = append(items, tb.col(c.other))
					ov := tb.vals[c.other]
					refs = append(refs, itemRef{ot, func(i int) etVal { return ov[i] }})
				}
				r.Shuffle(len(items), func(i, j int) {
					items[i], items[j] = items[j], items[i]
					refs[i], refs[j] = refs[j], refs[i]
				})
				x := etColOp(tb, c.col)
				if r.Intn(8) == 0 {
					v := etGenValT(r, xt)
					x = etOperand{e: etLiteralOfT(t, v, xt), val: func(int) etVal { return v }}
				}
				e, err := InList(x.e, items)
				if err != nil {
					t.Fatal(err)
				}
				etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
					xv := x.val(i)
					if xv.null {
						return xv, false
					}
					sawNull := false
					for _, it := range refs {
						if it.typ.ID() == arrow.NULL {
							sawNull = true
							continue
						}
						eq := etRefEq(xv, xt, it.val(i), it.typ)
						if eq.null {
							sawNull = true
						} else if eq.b {
							return etVal{b: true}, false
						}
					}
					if sawNull {
						return etVal{null: true}, false
					}
					return etVal{b: false}, false
				})
			}
		}
		tb.release()
	}
}

func TestExprInListErrors(t *testing.T) {
	x := ColRef(0, etInt32, "x")
	if _, err := InList(x, nil); err == nil {
		t.Error("empty list accepted")
	}
	if _, err := InList(x, []Expr{etLit(t, "a", etString)}); err == nil || !strings.Contains(err.Error(), "cannot compare INT with (VARCHAR)") {
		t.Errorf("INT IN (VARCHAR): %v", err)
	}
	// A column compared with literals its type holds stays in its type.
	e, err := InList(x, []Expr{etLit(t, int64(1), etInt64), etLit(t, 2.0, etDouble)})
	if err != nil || e.String() != "in(x, 1, 2)" {
		t.Errorf("x IN (1, 2.0): %v %v", e, err)
	}
	e, _ = InList(x, []Expr{etLit(t, int64(5_000_000_000), etInt64)})
	if e.String() != "in(CAST(x AS BIGINT), 5000000000)" {
		t.Errorf("x IN (5000000000): %s", e)
	}
	// NULL x, constant lists.
	if e, _ := InList(etLit(t, nil, arrow.Null), []Expr{x}); !scIsNullLiteral(e) {
		t.Errorf("NULL IN (x): %s", e)
	}
	if e, _ := InList(etLit(t, 3, etInt32), []Expr{etLit(t, 1, etInt32), etLit(t, 3, etInt32)}); e.String() != "TRUE" {
		t.Errorf("3 IN (1, 3): %s", e)
	}
	if e, _ := InList(etLit(t, 3, etInt32), []Expr{etLit(t, 1, etInt32), etLit(t, nil, arrow.Null)}); e.String() != "NULL" {
		t.Errorf("3 IN (1, NULL): %s", e)
	}
}
