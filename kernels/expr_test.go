package kernels

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

var (
	etInt8   = arrow.PrimitiveTypes.Int8
	etInt16  = arrow.PrimitiveTypes.Int16
	etInt32  = arrow.PrimitiveTypes.Int32
	etInt64  = arrow.PrimitiveTypes.Int64
	etFloat  = arrow.PrimitiveTypes.Float32
	etDouble = arrow.PrimitiveTypes.Float64
	etString = arrow.BinaryTypes.String
	etBool   = arrow.FixedWidthTypes.Boolean
	etTs     = arrow.FixedWidthTypes.Timestamp_ms
)

func etLit(t *testing.T, v any, typ arrow.DataType) Expr {
	t.Helper()
	e, err := Literal(v, typ)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func etCall(t *testing.T, name string, args ...Expr) Expr {
	t.Helper()
	e, err := etNewTestRegistry().Call(name, args)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// etOneBatch builds a batch from columns given as Go slices; nil entries in
// []any are NULLs.
func etOneBatch(t *testing.T, mem memory.Allocator, cols map[string][]any, types map[string]arrow.DataType, order ...string) *vector.Batch {
	t.Helper()
	var fields []arrow.Field
	var arrs []arrow.Array
	n := 0
	for _, name := range order {
		typ := types[name]
		k := scKindOf(typ)
		vals := make([]etVal, len(cols[name]))
		for i, v := range cols[name] {
			switch x := v.(type) {
			case nil:
				vals[i] = etVal{null: true}
			case int:
				vals[i] = etVal{i: int64(x)}
			case int64:
				vals[i] = etVal{i: x}
			case float64:
				vals[i] = etVal{f: x}
			case string:
				if k == skDecimal {
					_, sc := scDecPS(typ)
					vals[i] = etVal{d: etDecText(x, sc)}
				} else {
					vals[i] = etVal{s: x}
				}
			case bool:
				vals[i] = etVal{b: x}
			}
		}
		n = len(vals)
		fields = append(fields, arrow.Field{Name: name, Type: typ, Nullable: true})
		arrs = append(arrs, etBuildArrayT(mem, typ, vals))
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return vector.New(rec)
}

// etEvalRows evaluates e and returns its live rows.
func etEvalRows(t *testing.T, mem memory.Allocator, e Expr, b *vector.Batch) ([]etVal, error) {
	t.Helper()
	res, err := e.Eval(b, mem)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	var out []etVal
	b.Rows(func(i int) { out = append(out, etRowVal(res, i)) })
	return out, nil
}

func TestArithSemantics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{
		"x": {7, -7, 7, -7, math.MaxInt32, math.MinInt32},
		"y": {2, 2, -2, -2, 1, -1},
		"f": {1.0, -1.0, 0.0, 5.5, 7.0, -7.0},
	}, map[string]arrow.DataType{"x": etInt32, "y": etInt32, "f": etDouble}, "x", "y", "f")
	defer b.Release()
	x, y, f := ColRef(0, etInt32, "x"), ColRef(1, etInt32, "y"), ColRef(2, etDouble, "f")
	ints := func(e Expr) []int64 {
		rows, err := etEvalRows(t, mem, e, b)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int64, len(rows))
		for i, r := range rows {
			out[i] = r.i
		}
		return out
	}
	floats := func(e Expr) []float64 {
		rows, err := etEvalRows(t, mem, e, b)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(rows))
		for i, r := range rows {
			out[i] = r.f
		}
		return out
	}
	eq := func(what string, got, want []int64) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: got %v, want %v", what, got, want)
			}
		}
	}
	eq("x/y", ints(etCall(t, "divide", x, y)), []int64{3, -3, -3, 3, math.MaxInt32, math.MinInt32}) // MIN / -1 wraps
	eq("x%y", ints(etCall(t, "modulus", x, y)), []int64{1, -1, 1, -1, 0, 0})
	eq("x+y", ints(etCall(t, "add", x, y)), []int64{9, -5, 5, -9, math.MinInt32, math.MaxInt32}) // wraps
	eq("x*y", ints(etCall(t, "multiply", x, y)), []int64{14, -14, -14, 14, math.MaxInt32, math.MinInt32})
	eq("-x", ints(etCall(t, "negate", x)), []int64{-7, 7, -7, 7, -math.MaxInt32, math.MinInt32})

	got := floats(etCall(t, "divide", x, f))
	want := []float64{7, 7, math.Inf(1), -7.0 / 5.5, math.MaxInt32 / 7.0, math.MinInt32 / -7.0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("x/f: got %v, want %v", got, want)
		}
	}
	got = floats(etCall(t, "divide", f, etLit(t, 0.0, etDouble)))
	if !math.IsInf(got[0], 1) || !math.IsInf(got[1], -1) || !math.IsNaN(got[2]) {
		t.Fatalf("f/0.0: %v", got)
	}
	got = floats(etCall(t, "modulus", etLit(t, -7.5, etDouble), etLit(t, 2.0, etDouble)))
	if got[0] != -1.5 {
		t.Fatalf("-7.5 %% 2.0 = %v", got[0])
	}
	got = floats(etCall(t, "modulus", f, etLit(t, 0.0, etDouble)))
	if !math.IsNaN(got[0]) {
		t.Fatalf("f %% 0.0 = %v", got[0])
	}

	// Result types.
	types := []struct {
		a, b, want arrow.DataType
	}{
		{etInt32, etInt32, etInt32}, {etInt32, etInt64, etInt64}, {etInt8, etInt16, etInt16}, {etInt8, etInt8, etInt8},
		{etInt64, etFloat, etFloat}, {etFloat, etFloat, etFloat}, {etFloat, etDouble, etDouble}, {etInt64, etDouble, etDouble},
		{arrow.Null, etInt16, etInt16},
	}
	for _, tc := range types {
		for _, fn := range []string{"add", "subtract", "multiply", "divide", "modulus"} {
			e := etCall(t, fn, ColRef(0, tc.a, "a"), ColRef(1, tc.b, "b"))
			if !arrow.TypeEqual(e.Type(), tc.want) {
				t.Errorf("%s(%s, %s) type %s, want %s", fn, SQLTypeName(tc.a), SQLTypeName(tc.b), SQLTypeName(e.Type()), SQLTypeName(tc.want))
			}
		}
	}
}

func TestDivisionByZeroOnlyOnLiveRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{
		"x": {10, 20, 30, nil, 50},
		"y": {1, 2, 0, 0, 5},
	}, map[string]arrow.DataType{"x": etInt64, "y": etInt64}, "x", "y")
	defer b.Release()
	x, y := ColRef(0, etInt64, "x"), ColRef(1, etInt64, "y")
	for _, fn := range []string{"divide", "modulus"} {
		shapes := []Expr{etCall(t, fn, x, y), etCall(t, fn, etLit(t, int64(7), etInt64), y)}
		for _, e := range shapes {
			b.Sel = nil
			if _, err := etEvalRows(t, mem, e, b); err == nil || !errors.Is(err, ErrDivisionByZero) ||
				!strings.Contains(err.Error(), "division by zero") {
				t.Fatalf("%s dense: err %v, want division by zero", e, err)
			}
			b.Sel = []int32{0, 1, 4} // row 2 is filtered out
			if _, err := etEvalRows(t, mem, e, b); err != nil {
				t.Fatalf("%s with row 2 filtered: %v", e, err)
			}
		}
		// Row 3: x NULL, y 0 → NULL, not an error.
		b.Sel = []int32{3}
		rows, err := etEvalRows(t, mem, etCall(t, fn, x, y), b)
		if err != nil || !rows[0].null {
			t.Fatalf("%s(NULL, 0): %v %v", fn, rows, err)
		}
		// A literal zero divisor fails only if a live row is valid.
		e := etCall(t, fn, x, etLit(t, int64(0), etInt64))
		if _, err := etEvalRows(t, mem, e, b); err != nil {
			t.Fatalf("%s(NULL, 0) literal: %v", fn, err)
		}
		b.Sel = []int32{}
		if _, err := etEvalRows(t, mem, e, b); err != nil {
			t.Fatalf("%s over no rows: %v", fn, err)
		}
		b.Sel = []int32{1}
		if _, err := etEvalRows(t, mem, e, b); err == nil {
			t.Fatalf("%s(20, 0): no error", fn)
		}
		b.Sel = nil
	}
	// 1/0 of two literals is not folded: it fails at run time, per live row.
	e := etCall(t, "divide", etLit(t, int64(1), etInt64), etLit(t, int64(0), etInt64))
	b.Sel = []int32{}
	if _, err := etEvalRows(t, mem, e, b); err != nil {
		t.Fatalf("1/0 over no rows: %v", err)
	}
	b.Sel = nil
	if _, err := etEvalRows(t, mem, e, b); err == nil {
		t.Fatal("1/0: no error")
	}
}

// AND, OR and COALESCE evaluate an etOperand that may fail only on the rows
// that need it.
func TestShortCircuit(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{
		"x": {0, 5, 20, nil},
		"c": {nil, 1, nil, 3},
	}, map[string]arrow.DataType{"x": etInt64, "c": etInt64}, "x", "c")
	defer b.Release()
	x, c := ColRef(0, etInt64, "x"), ColRef(1, etInt64, "c")
	zero, ten, one := etLit(t, int64(0), etInt64), etLit(t, int64(10), etInt64), etLit(t, int64(1), etInt64)
	// x <> 0 AND 10 / x > 1
	and := etCall(t, "and", etCall(t, "not_equal", x, zero), etCall(t, "gt", etCall(t, "divide", ten, x), one))
	rows, err := etEvalRows(t, mem, and, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []etVal{{b: false}, {b: true}, {b: false}, {null: true}}
	for i := range want {
		if !etSameVal(skBool, rows[i], want[i]) {
			t.Fatalf("AND row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	// x = 0 OR 10 / x > 1
	or := etCall(t, "or", etCall(t, "equal", x, zero), etCall(t, "gt", etCall(t, "divide", ten, x), one))
	if _, err := etEvalRows(t, mem, or, b); err != nil {
		t.Fatal(err)
	}
	// coalesce(c, 10 / x): row 0 needs 10/0.
	co := etCall(t, "coalesce", c, etCall(t, "divide", ten, x))
	if _, err := etEvalRows(t, mem, co, b); err == nil {
		t.Fatal("coalesce(NULL, 10/0): no error")
	}
	b.Sel = []int32{1, 2, 3}
	rows, err = etEvalRows(t, mem, co, b)
	if err != nil {
		t.Fatal(err)
	}
	want = []etVal{{i: 1}, {i: 0}, {i: 3}}
	for i := range want {
		if !etSameVal(skInt64, rows[i], want[i]) {
			t.Fatalf("coalesce row %d: %v, want %v", i, rows[i], want[i])
		}
	}
}

func TestNullRules(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	vals := []any{true, false, nil}
	var ls, rs []any
	for _, l := range vals {
		for _, r := range vals {
			ls, rs = append(ls, l), append(rs, r)
		}
	}
	b := etOneBatch(t, mem, map[string][]any{"l": ls, "r": rs, "n": {1, 2, 3, 4, 5, 6, 7, 8, 9}},
		map[string]arrow.DataType{"l": etBool, "r": etBool, "n": etInt64}, "l", "r", "n")
	defer b.Release()
	l, r, n := ColRef(0, etBool, "l"), ColRef(1, etBool, "r"), ColRef(2, etInt64, "n")
	toRV := func(v any) etVal {
		if v == nil {
			return etVal{null: true}
		}
		return etVal{b: v.(bool)}
	}
	check := func(e Expr, ref func(i int) etVal) {
		t.Helper()
		rows, err := etEvalRows(t, mem, e, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, got := range rows {
			if want := ref(i); !etSameVal(skBool, got, want) {
				t.Fatalf("%s row %d (l=%v r=%v): %v, want %v", e, i, ls[i], rs[i], got, want)
			}
		}
	}
	check(etCall(t, "and", l, r), func(i int) etVal { return etRefAnd(toRV(ls[i]), toRV(rs[i])) })
	check(etCall(t, "or", l, r), func(i int) etVal { return etRefOr(toRV(ls[i]), toRV(rs[i])) })
	null := etLit(t, nil, arrow.Null)
	check(etCall(t, "and", l, null), func(i int) etVal { return etRefAnd(toRV(ls[i]), etVal{null: true}) })
	check(etCall(t, "or", null, l), func(i int) etVal { return etRefOr(toRV(ls[i]), etVal{null: true}) })
	check(etCall(t, "and", l, etLit(t, true, etBool)), func(i int) etVal { return toRV(ls[i]) })
	check(etCall(t, "and", etLit(t, false, etBool), l), func(int) etVal { return etVal{b: false} })
	check(etCall(t, "or", l, etLit(t, true, etBool)), func(int) etVal { return etVal{b: true} })
	check(etCall(t, "not", null), func(int) etVal { return etVal{null: true} })
	check(etCall(t, "is_null", null), func(int) etVal { return etVal{b: true} })
	check(etCall(t, "is_true", null), func(int) etVal { return etVal{b: false} })
	check(etCall(t, "is_not_false", null), func(int) etVal { return etVal{b: true} })
	// NULL in arithmetic and comparison.
	for _, fn := range []string{"add", "subtract", "multiply", "divide", "modulus", "equal", "lt", "gte", "not_equal"} {
		for _, e := range []Expr{etCall(t, fn, n, null), etCall(t, fn, null, n)} {
			res, err := e.Eval(b, mem)
			if err != nil {
				t.Fatal(err)
			}
			if res.NullN() != res.Len() {
				t.Fatalf("%s: %d nulls of %d", e, res.NullN(), res.Len())
			}
			res.Release()
		}
	}
	if e := etCall(t, "add", n, null); e.Type().ID() != arrow.INT64 {
		t.Fatalf("BIGINT + NULL: type %s", e.Type())
	}
}

func TestCallErrors(t *testing.T) {
	reg := etNewTestRegistry()
	str, big, ts, bo := ColRef(0, etString, "s"), ColRef(1, etInt64, "i"), ColRef(2, etTs, "t"), ColRef(3, etBool, "b")
	null := etLit(t, nil, arrow.Null)
	cases := []struct {
		fn   string
		args []Expr
		want string
	}{
		{"equal", []Expr{str, big}, "function equal does not accept (VARCHAR, BIGINT)"},
		{"gt", []Expr{ts, big}, "function gt does not accept (TIMESTAMP(3), BIGINT)"},
		{"add", []Expr{bo, big}, "function add does not accept (BOOLEAN, BIGINT)"},
		{"subtract", []Expr{big, ts}, "function subtract does not accept (BIGINT, TIMESTAMP(3))"},
		{"add", []Expr{ts, ts}, "function add does not accept (TIMESTAMP(3), TIMESTAMP(3))"},
		{"multiply", []Expr{ts, big}, "function multiply does not accept (TIMESTAMP(3), BIGINT)"},
		{"add", []Expr{str, etLit(t, int64(1), etInt32)}, "function add does not accept (VARCHAR, INT)"},
		{"add", []Expr{null, null}, "function add does not accept (NULL, NULL)"},
		{"equal", []Expr{null, null}, "function equal does not accept (NULL, NULL)"},
		{"and", []Expr{bo, big}, "function and does not accept (BOOLEAN, BIGINT)"},
		{"not", []Expr{str}, "function not does not accept (VARCHAR)"},
		{"negate", []Expr{str}, "function negate does not accept (VARCHAR)"},
		{"is_true", []Expr{big}, "function is_true does not accept (BIGINT)"},
		{"coalesce", []Expr{str, big}, "function coalesce does not accept (VARCHAR, BIGINT)"},
		{"coalesce", []Expr{null}, "function coalesce does not accept (NULL)"},
		{"equal", []Expr{big, ColRef(4, etFloat, "f"), big}, "function equal: 3 arguments, expects 2"},
		{"nosuch", []Expr{big}, "unknown function nosuch"},
		{"lt", []Expr{ColRef(0, arrow.PrimitiveTypes.Uint32, "u"), big}, "function lt does not accept (UINT32, BIGINT)"},
	}
	for _, c := range cases {
		_, err := reg.Call(c.fn, c.args)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err %v, want %q", c.fn, err, c.want)
		}
	}
	// Substrait compound names and case resolve to the base function.
	if _, err := reg.Call("ADD:i64_i64", []Expr{big, big}); err != nil {
		t.Error(err)
	}
	if err := reg.Register(&Function{Name: "Add", Bind: bindNegate}); err == nil {
		t.Error("duplicate registration accepted")
	}
	if names := reg.Names(); len(names) != 49 {
		t.Errorf("registered %d functions: %v", len(names), names)
	}
	// Literals.
	for _, c := range []struct {
		v   any
		typ arrow.DataType
	}{{300, etInt8}, {1.5, etInt32}, {"x", etInt64}, {true, etString}, {int64(1), arrow.PrimitiveTypes.Uint8}, {1, arrow.Null}} {
		if _, err := Literal(c.v, c.typ); err == nil {
			t.Errorf("Literal(%v, %s): no error", c.v, c.typ)
		}
	}
	// A column whose type changed under the expression.
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{"x": {1}}, map[string]arrow.DataType{"x": etInt32}, "x")
	defer b.Release()
	if _, err := ColRef(0, etString, "x").Eval(b, mem); err == nil {
		t.Error("ColRef type mismatch: no error")
	}
	if _, err := ColRef(3, etInt32, "x").Eval(b, mem); err == nil {
		t.Error("ColRef out of range: no error")
	}
}

func TestLiteralAndColRef(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := etOneBatch(t, mem, map[string][]any{"x": {1, 2, 3}}, map[string]arrow.DataType{"x": etInt64}, "x")
	defer b.Release()
	// ColRef is zero copy.
	res, err := ColRef(0, etInt64, "x").Eval(b, mem)
	if err != nil {
		t.Fatal(err)
	}
	if res.Data() != b.Column(0).Data() {
		t.Error("ColRef copied the column")
	}
	res.Release()
	// A literal broadcasts when it is the whole expression.
	for _, c := range []struct {
		e    Expr
		want etVal
		k    scKind
	}{
		{etLit(t, int64(-4), etInt16), etVal{i: -4}, skInt16},
		{etLit(t, 2.5, etFloat), etVal{f: 2.5}, skFloat32},
		{etLit(t, "it's", etString), etVal{s: "it's"}, skString},
		{etLit(t, true, etBool), etVal{b: true}, skBool},
		{etLit(t, int64(86400000), etTs), etVal{i: 86400000}, skTimestamp},
		{etLit(t, nil, etInt32), etVal{null: true}, skInt32},
		{etLit(t, 3, etDouble), etVal{f: 3}, skFloat64},
	} {
		rows, err := etEvalRows(t, mem, c.e, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if !etSameVal(c.k, r, c.want) {
				t.Fatalf("%s: %v, want %v", c.e, r, c.want)
			}
		}
	}
	// Constant calls are folded to literals.
	e := etCall(t, "add", etLit(t, int64(2), etInt32), etLit(t, int64(3), etInt64))
	if l, ok := e.(*exprLit); !ok || l.i != 5 || l.typ.ID() != arrow.INT64 {
		t.Fatalf("2 + 3 folded to %#v", e)
	}
	strs := map[Expr]string{
		etCall(t, "add", ColRef(0, etInt32, "x"), etLit(t, int64(1), etInt64)):                       "add(CAST(x AS BIGINT), 1)",
		etCall(t, "lt", etLit(t, int64(1), etInt64), ColRef(0, etInt32, "")):                         "gt($0, 1)",
		etCall(t, "equal", ColRef(0, etString, "s"), etLit(t, "o'k", etString)):                      "equal(s, 'o''k')",
		etCall(t, "and", ColRef(0, etBool, "p"), etLit(t, nil, arrow.Null)):                          "and(p, NULL)",
		etCall(t, "coalesce", ColRef(0, etDouble, "d"), etLit(t, 1.5, etDouble)):                     "coalesce(d, 1.5)",
		etCall(t, "is_null", ColRef(0, etTs, "t")):                                                   "is_null(t)",
		etCall(t, "equal", ColRef(0, etTs, "t"), etLit(t, int64(1700000000123), etTs)):               "equal(t, TIMESTAMP '2023-11-14 22:13:20.123')",
		etCall(t, "gte", ColRef(0, etInt16, "h"), etLit(t, 1e10, etDouble)):                          "gte(CAST(h AS DOUBLE), 1.0E10)",
		etCall(t, "negate", etCall(t, "multiply", ColRef(0, etFloat, "f"), ColRef(1, etFloat, "g"))): "negate(multiply(f, g))",
	}
	for e, want := range strs {
		if e.String() != want {
			t.Errorf("String() = %q, want %q", e.String(), want)
		}
	}
}

func TestSelectTrue(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 300; iter++ {
		tb := etRandBatch(r, mem)
		pred := tb.b.Column(tb.cols["BOOLEAN_a"])
		vals := tb.vals["BOOLEAN_a"]
		got := SelectTrue(pred, tb.b)
		want := []int32{}
		for _, i := range etLiveRows(tb.b) {
			if !vals[i].null && vals[i].b {
				want = append(want, int32(i))
			}
		}
		if got == nil {
			if tb.b.Sel != nil || len(want) != tb.b.NumRows() {
				t.Fatalf("nil selection, want %v", want)
			}
			tb.release()
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
		tb.release()
	}
}

// A filter + project pipeline over random batches: WHERE a > b AND c IS NOT
// NULL, then SELECT a * 2 + c over the selection.
func TestFilterThenProject(t *testing.T) {
	reg := etNewTestRegistry()
	r := rand.New(rand.NewSource(8))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 100; iter++ {
		tb := etRandBatch(r, mem)
		a, bb, c := "INT_a", "INT_b", "BIGINT_a"
		gt, _ := reg.Call("gt", []Expr{tb.col(a), tb.col(bb)})
		nn, _ := reg.Call("is_not_null", []Expr{tb.col(c)})
		pred, err := reg.Call("and", []Expr{gt, nn})
		if err != nil {
			t.Fatal(err)
		}
		p, err := pred.Eval(tb.b, mem)
		if err != nil {
			t.Fatal(err)
		}
		tb.b.Sel = SelectTrue(p, tb.b)
		p.Release()
		two := etLit(t, int64(2), etInt32)
		m, _ := reg.Call("multiply", []Expr{tb.col(a), two})
		proj, err := reg.Call("add", []Expr{m, tb.col(c)})
		if err != nil {
			t.Fatal(err)
		}
		etCheckAgainst(t, mem, proj, tb, func(i int) (etVal, bool) {
			va, vb, vc := tb.vals[a][i], tb.vals[bb][i], tb.vals[c][i]
			if va.null || vb.null || vc.null || va.i <= vb.i {
				t.Fatalf("row %d passed the filter: %v %v %v", i, va, vb, vc)
			}
			return etVal{i: int64(int32(va.i*2)) + vc.i}, false
		})
		tb.release()
	}
}

// One compiled expression is evaluated by several goroutines at once.
func TestConcurrentEval(t *testing.T) {
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	tb := etRandBatch(rand.New(rand.NewSource(11)), mem)
	defer tb.release()
	gt, _ := reg.Call("gt", []Expr{tb.col("DOUBLE_a"), tb.col("BIGINT_b")})
	s, _ := reg.Call("equal", []Expr{tb.col("VARCHAR_a"), etLit(t, "ab", etString)})
	e, err := reg.Call("or", []Expr{gt, s})
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Eval(tb.b, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for k := 0; k < 50; k++ {
				got, err := e.Eval(tb.b, mem)
				if err != nil {
					errs <- err
					return
				}
				same := true
				for _, i := range etLiveRows(tb.b) {
					if !etSameVal(skBool, etRowVal(got, i), etRowVal(want, i)) {
						same = false
					}
				}
				got.Release()
				if !same {
					errs <- errors.New("results differ")
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
