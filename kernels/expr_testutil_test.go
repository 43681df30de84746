package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// A row-at-a-time model of the SQL values, for reference evaluation.
type etVal struct {
	null bool
	i    int64
	f    float64
	s    string
	b    bool
	d    *big.Int // DECIMAL: the unscaled value
}

func (v etVal) String() string {
	if v.null {
		return "NULL"
	}
	if v.d != nil {
		return fmt.Sprintf("{d:%s}", v.d)
	}
	return fmt.Sprintf("{i:%d f:%v s:%q b:%v}", v.i, v.f, v.s, v.b)
}

var scTestKinds = []scKind{skInt8, skInt16, skInt32, skInt64, skFloat32, skFloat64, skString, skBool, skTimestamp}

func etKindName(k scKind) string { return SQLTypeName(scTypeOf(k)) }

// etRowVal reads row i of arr.
func etRowVal(arr arrow.Array, i int) etVal {
	if arr.IsNull(i) {
		return etVal{null: true}
	}
	switch a := arr.(type) {
	case *array.Int8:
		return etVal{i: int64(a.Value(i))}
	case *array.Int16:
		return etVal{i: int64(a.Value(i))}
	case *array.Int32:
		return etVal{i: int64(a.Value(i))}
	case *array.Int64:
		return etVal{i: a.Value(i)}
	case *array.Timestamp:
		return etVal{i: int64(a.Value(i))}
	case *array.Float32:
		return etVal{f: float64(a.Value(i))}
	case *array.Float64:
		return etVal{f: a.Value(i)}
	case *array.String:
		return etVal{s: a.Value(i)}
	case *array.Boolean:
		return etVal{b: a.Value(i)}
	case *array.Decimal128:
		return etVal{d: a.Value(i).BigInt()}
	}
	panic(fmt.Sprintf("etRowVal: %T", arr))
}

// etGenVal draws a value of kind k: small magnitudes (so equalities, zeros
// and ties are common) and now and then an extreme.
func etGenVal(r *rand.Rand, k scKind) etVal {
	switch {
	case k.isInt():
		if r.Intn(12) == 0 {
			lo, hi := k.intRange()
			return etVal{i: []int64{lo, hi, lo + 1, hi - 1, -1}[r.Intn(5)]}
		}
		return etVal{i: int64(r.Intn(11) - 5)}
	case k == skTimestamp:
		return etVal{i: int64(r.Intn(7)-3) * 1000}
	case k.isFloat():
		var f float64
		switch r.Intn(16) {
		case 0:
			f = math.NaN()
		case 1:
			f = math.Inf(1 - 2*r.Intn(2))
		case 2:
			f = math.Copysign(0, -1)
		case 3:
			f = (r.Float64() - 0.5) * 1e12
		default:
			f = float64(r.Intn(21)-10) / 2
		}
		if k == skFloat32 {
			f = float64(float32(f))
		}
		return etVal{f: f}
	case k == skString:
		alpha := []string{"a", "b", "é", "A"}
		s := ""
		for n := r.Intn(4); n > 0; n-- {
			s += alpha[r.Intn(len(alpha))]
		}
		return etVal{s: s}
	case k == skBool:
		return etVal{b: r.Intn(2) == 0}
	}
	panic("etGenVal")
}

func etBuildArray(mem memory.Allocator, k scKind, vals []etVal) arrow.Array {
	return etBuildArrayT(mem, scTypeOf(k), vals)
}

func etBuildArrayT(mem memory.Allocator, t arrow.DataType, vals []etVal) arrow.Array {
	bld := array.NewBuilder(mem, t)
	defer bld.Release()
	for _, v := range vals {
		if v.null {
			bld.AppendNull()
			continue
		}
		switch b := bld.(type) {
		case *array.Int8Builder:
			b.Append(int8(v.i))
		case *array.Int16Builder:
			b.Append(int16(v.i))
		case *array.Int32Builder:
			b.Append(int32(v.i))
		case *array.Int64Builder:
			b.Append(v.i)
		case *array.TimestampBuilder:
			b.Append(arrow.Timestamp(v.i))
		case *array.Float32Builder:
			b.Append(float32(v.f))
		case *array.Float64Builder:
			b.Append(v.f)
		case *array.StringBuilder:
			b.Append(v.s)
		case *array.BooleanBuilder:
			b.Append(v.b)
		case *array.Decimal128Builder:
			b.Append(decimal128.FromBigInt(v.d))
		}
	}
	return bld.NewArray()
}

// Extra columns of etRandBatch beyond two of every kind: DECIMALs narrow
// and wide, and text with spaces, wildcards, separators and multi-byte
// characters.
var (
	etDecNarrow = scDecType(9, 2)
	etDecWide   = scDecType(38, 10)
	etExtraCols = []struct {
		name string
		typ  arrow.DataType
	}{
		{"DEC_a", etDecNarrow}, {"DEC_b", etDecNarrow}, {"DECW_a", etDecWide}, {"DECW_b", etDecWide},
		{"DEC0_a", scDecType(18, 0)}, {"TEXT_a", arrow.BinaryTypes.String}, {"TEXT_b", arrow.BinaryTypes.String},
	}
)

// etGenDec draws a DECIMAL(p, s) value: mostly small with ties at every
// digit (x.5, x.05), now and then the largest magnitudes.
func etGenDec(r *rand.Rand, t arrow.DataType) etVal {
	p, s := scDecPS(t)
	max := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil)
	max.Sub(max, big.NewInt(1))
	var v *big.Int
	switch r.Intn(10) {
	case 0:
		v = new(big.Int).Set(max)
	case 1:
		v = new(big.Int).Rand(r, max)
	case 2:
		v = big.NewInt(0)
	case 3: // a tie at some scale
		k := r.Intn(s + 1)
		v = big.NewInt(int64(r.Intn(2000) - 1000))
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
		if k > 0 {
			v.Add(v, new(big.Int).Mul(big.NewInt(5), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k-1)), nil)))
		}
	default:
		v = big.NewInt(int64(r.Intn(200001) - 100000))
	}
	if v.CmpAbs(max) > 0 {
		v.Mod(v, max)
	}
	if r.Intn(2) == 0 {
		v.Neg(v)
	}
	return etVal{d: v}
}

func etGenText(r *rand.Rand) etVal {
	alpha := []string{"a", "b", "A", "é", "ß", "日", " ", " ", ",", "%", "_", "ab", "x", "Ω", "ı"}
	s := ""
	for n := r.Intn(7); n > 0; n-- {
		s += alpha[r.Intn(len(alpha))]
	}
	return etVal{s: s}
}

// etGenValT draws a value of type t (etGenVal, or a DECIMAL).
func etGenValT(r *rand.Rand, t arrow.DataType) etVal {
	if scKindOf(t) == skDecimal {
		return etGenDec(r, t)
	}
	return etGenVal(r, scKindOf(t))
}

// etTestBatch is a random batch with two columns ("a", "b") of every kind,
// random nulls, random array offsets and a random selection.
type etTestBatch struct {
	b    *vector.Batch
	vals map[string][]etVal // column name -> physical rows
	cols map[string]int
}

func (tb *etTestBatch) col(name string) Expr {
	i := tb.cols[name]
	return ColRef(i, tb.b.Schema().Field(i).Type, name)
}

func (tb *etTestBatch) release() { tb.b.Release() }

func etColName(k scKind, side string) string { return fmt.Sprintf("%s_%s", etKindName(k), side) }

var etTestSizes = []int{0, 1, 7, 64, 65, 200, 1024}

func etRandBatch(r *rand.Rand, mem memory.Allocator) *etTestBatch {
	n := etTestSizes[r.Intn(len(etTestSizes))]
	if r.Intn(4) == 0 {
		n = r.Intn(300)
	}
	tb := &etTestBatch{vals: map[string][]etVal{}, cols: map[string]int{}}
	var fields []arrow.Field
	var cols []arrow.Array
	add := func(name string, t arrow.DataType, gen func() etVal) {
		nullP := []float64{0, 0, 0.1, 0.5, 1}[r.Intn(5)]
		off := []int{0, 0, 3, 8, 13}[r.Intn(5)]
		vals := make([]etVal, n+off+2)
		for i := range vals {
			if r.Float64() < nullP {
				vals[i] = etVal{null: true}
			} else {
				vals[i] = gen()
			}
		}
		full := etBuildArrayT(mem, t, vals)
		arr := array.NewSlice(full, int64(off), int64(off+n))
		full.Release()
		tb.cols[name] = len(cols)
		tb.vals[name] = vals[off : off+n]
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: true})
		cols = append(cols, arr)
	}
	for _, k := range scTestKinds {
		for _, side := range []string{"a", "b"} {
			add(etColName(k, side), scTypeOf(k), func() etVal { return etGenVal(r, k) })
		}
	}
	for _, c := range etExtraCols {
		if scKindOf(c.typ) == skDecimal {
			add(c.name, c.typ, func() etVal { return etGenDec(r, c.typ) })
		} else {
			add(c.name, c.typ, func() etVal { return etGenText(r) })
		}
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	tb.b = vector.New(rec)
	switch r.Intn(6) {
	case 0, 1: // dense
	case 2:
		tb.b.Sel = []int32{}
	default:
		p := []float64{0.05, 0.3, 0.6, 0.95}[r.Intn(4)]
		sel := []int32{}
		for i := 0; i < n; i++ {
			if r.Float64() < p {
				sel = append(sel, int32(i))
			}
		}
		tb.b.Sel = sel
	}
	return tb
}

func etLiveRows(b *vector.Batch) []int {
	var out []int
	b.Rows(func(i int) { out = append(out, i) })
	return out
}

// etSameVal compares an actual row with the expected one (NaN equals NaN,
// -0 equals 0 as in SQL).
func etSameVal(k scKind, got, want etVal) bool {
	if got.null || want.null {
		return got.null == want.null
	}
	switch {
	case k.isInt() || k == skTimestamp:
		return got.i == want.i
	case k.isFloat():
		return got.f == want.f || (math.IsNaN(got.f) && math.IsNaN(want.f))
	case k == skString:
		return got.s == want.s
	case k == skBool:
		return got.b == want.b
	case k == skDecimal:
		return got.d != nil && want.d != nil && got.d.Cmp(want.d) == 0
	}
	return false
}

// etCheckAgainst evaluates e over tb and compares every live row with ref,
// which returns the expected value and whether the row must fail.
func etCheckAgainst(t *testing.T, mem memory.Allocator, e Expr, tb *etTestBatch, ref func(i int) (etVal, bool)) {
	t.Helper()
	wantErr := false
	for _, i := range etLiveRows(tb.b) {
		if _, fail := ref(i); fail {
			wantErr = true
		}
	}
	res, err := e.Eval(tb.b, mem)
	if wantErr {
		if err == nil {
			res.Release()
			t.Fatalf("%s: want an error, got none", e)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	defer res.Release()
	if res.Len() != tb.b.NumRows() {
		t.Fatalf("%s: %d rows, want %d", e, res.Len(), tb.b.NumRows())
	}
	if !arrow.TypeEqual(res.DataType(), e.Type()) {
		t.Fatalf("%s: result type %s, Type() %s", e, res.DataType(), e.Type())
	}
	k := scKindOf(e.Type())
	for _, i := range etLiveRows(tb.b) {
		want, _ := ref(i)
		got := etRowVal(res, i)
		if !etSameVal(k, got, want) {
			t.Fatalf("%s row %d (sel=%v n=%d): got %v, want %v", e, i, tb.b.Sel != nil, tb.b.NumRows(), got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// Reference semantics, written independently of the kernels.

func etRefWrap(x int64, k scKind) int64 {
	switch k {
	case skInt8:
		return int64(int8(x))
	case skInt16:
		return int64(int16(x))
	case skInt32:
		return int64(int32(x))
	}
	return x
}

// etRefJavaF2I: Java's (long)d / (int)d then narrowing.
func etRefJavaF2I(f float64, k scKind) int64 {
	if math.IsNaN(f) {
		return 0
	}
	f = math.Trunc(f)
	if k == skInt64 {
		if f >= math.Exp2(63) {
			return math.MaxInt64
		}
		if f < -math.Exp2(63) {
			return math.MinInt64
		}
		return int64(f)
	}
	if f > math.MaxInt32 {
		f = math.MaxInt32
	}
	if f < math.MinInt32 {
		f = math.MinInt32
	}
	return etRefWrap(int64(f), k)
}

// etRefConv converts v from kind from to kind to (numeric promotions and casts).
func etRefConv(v etVal, from, to scKind) etVal {
	if v.null || from == to {
		return v
	}
	switch {
	case (from.isInt() || from == skTimestamp) && (to.isInt() || to == skTimestamp):
		return etVal{i: etRefWrap(v.i, to)}
	case from.isInt() && to == skFloat64:
		return etVal{f: float64(v.i)}
	case from.isInt() && to == skFloat32:
		return etVal{f: float64(float32(v.i))}
	case from.isFloat() && to.isInt():
		return etVal{i: etRefJavaF2I(v.f, to)}
	case from.isFloat() && to == skFloat32:
		return etVal{f: float64(float32(v.f))}
	case from.isFloat() && to == skFloat64:
		return v
	}
	panic(fmt.Sprintf("etRefConv %v -> %v", from, to))
}

func etRefArith(op scArithOp, k scKind, x, y etVal) (etVal, bool) {
	if x.null || y.null {
		return etVal{null: true}, false
	}
	if k.isInt() {
		var r int64
		switch op {
		case scAdd:
			r = x.i + y.i
		case scSub:
			r = x.i - y.i
		case scMul:
			r = x.i * y.i
		case scDiv, scMod:
			if y.i == 0 {
				return etVal{}, true
			}
			if op == scDiv {
				r = x.i / y.i
			} else {
				r = x.i % y.i
			}
		}
		return etVal{i: etRefWrap(r, k)}, false
	}
	if k == skFloat32 {
		a, b := float32(x.f), float32(y.f)
		var r float32
		switch op {
		case scAdd:
			r = a + b
		case scSub:
			r = a - b
		case scMul:
			r = a * b
		case scDiv:
			r = a / b
		case scMod:
			r = float32(math.Mod(float64(a), float64(b)))
		}
		return etVal{f: float64(r)}, false
	}
	var r float64
	switch op {
	case scAdd:
		r = x.f + y.f
	case scSub:
		r = x.f - y.f
	case scMul:
		r = x.f * y.f
	case scDiv:
		r = x.f / y.f
	case scMod:
		r = math.Mod(x.f, y.f)
	}
	return etVal{f: r}, false
}

func etRefCompare(op scCmpOp, k scKind, x, y etVal) etVal {
	if x.null || y.null {
		return etVal{null: true}
	}
	var lt, eq, unordered bool
	switch {
	case k.isInt() || k == skTimestamp:
		lt, eq = x.i < y.i, x.i == y.i
	case k.isFloat():
		lt, eq = x.f < y.f, x.f == y.f
		unordered = math.IsNaN(x.f) || math.IsNaN(y.f)
	case k == skString:
		lt, eq = x.s < y.s, x.s == y.s
	case k == skBool:
		lt, eq = !x.b && y.b, x.b == y.b
	}
	var r bool
	switch op {
	case scEq:
		r = eq
	case scNe:
		r = !eq
	case scLt:
		r = lt
	case scLte:
		r = lt || eq
	case scGt:
		r = !lt && !eq && !unordered
	case scGte:
		r = !lt && !unordered
	}
	return etVal{b: r}
}

// Three-valued logic tables.
func etRefAnd(x, y etVal) etVal {
	switch {
	case !x.null && !x.b, !y.null && !y.b:
		return etVal{b: false}
	case x.null || y.null:
		return etVal{null: true}
	}
	return etVal{b: true}
}

func etRefOr(x, y etVal) etVal {
	switch {
	case !x.null && x.b, !y.null && y.b:
		return etVal{b: true}
	case x.null || y.null:
		return etVal{null: true}
	}
	return etVal{b: false}
}

// etLiteralOf makes a literal expression holding v of kind k.
func etLiteralOf(t *testing.T, v etVal, k scKind) Expr {
	t.Helper()
	return etLiteralOfT(t, v, scTypeOf(k))
}

// etLiteralOfT makes a literal expression holding v of type typ.
func etLiteralOfT(t *testing.T, v etVal, typ arrow.DataType) Expr {
	t.Helper()
	k := scKindOf(typ)
	var x any
	switch {
	case v.null:
	case k == skDecimal:
		x = decimal128.FromBigInt(v.d)
	case v.null:
	case k.isInt() || k == skTimestamp:
		x = v.i
	case k.isFloat():
		x = v.f
	case k == skString:
		x = v.s
	case k == skBool:
		x = v.b
	}
	e, err := Literal(x, typ)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// etColOp is column name of tb as an operand.
func etColOp(tb *etTestBatch, name string) etOperand {
	vals := tb.vals[name]
	return etOperand{e: tb.col(name), val: func(i int) etVal { return vals[i] }}
}

// etOperandsT yields the shapes of a binary call over two named columns
// of tb (see etOperands), literals drawn from the columns' types.
func etOperandsT(t *testing.T, r *rand.Rand, tb *etTestBatch, lc, rc string) [][2]etOperand {
	lit := func(name string) etOperand {
		typ := tb.b.Schema().Field(tb.cols[name]).Type
		v := etGenValT(r, typ)
		return etOperand{e: etLiteralOfT(t, v, typ), val: func(int) etVal { return v }}
	}
	null := func(name string) etOperand {
		typ := tb.b.Schema().Field(tb.cols[name]).Type
		return etOperand{e: etLiteralOfT(t, etVal{null: true}, typ), val: func(int) etVal { return etVal{null: true} }}
	}
	return [][2]etOperand{
		{etColOp(tb, lc), etColOp(tb, rc)},
		{etColOp(tb, lc), lit(rc)},
		{lit(lc), etColOp(tb, rc)},
		{lit(lc), lit(rc)},
		{null(lc), etColOp(tb, rc)},
		{etColOp(tb, lc), null(rc)},
	}
}

// etOperand is one side of a call in a test: a column or a literal.
type etOperand struct {
	e   Expr
	val func(i int) etVal
}

// etOperands yields the test shapes of a binary call over kinds lk, rk:
// column/column, column/literal, literal/column, literal/literal and a
// NULL literal on either side.
func etOperands(t *testing.T, r *rand.Rand, tb *etTestBatch, lk, rk scKind) [][2]etOperand {
	col := func(k scKind, side string) etOperand {
		vals := tb.vals[etColName(k, side)]
		return etOperand{e: tb.col(etColName(k, side)), val: func(i int) etVal { return vals[i] }}
	}
	lit := func(k scKind) etOperand {
		v := etGenVal(r, k)
		return etOperand{e: etLiteralOf(t, v, k), val: func(int) etVal { return v }}
	}
	null := func(k scKind) etOperand {
		return etOperand{e: etLiteralOf(t, etVal{null: true}, k), val: func(int) etVal { return etVal{null: true} }}
	}
	return [][2]etOperand{
		{col(lk, "a"), col(rk, "b")},
		{col(lk, "a"), col(rk, "a")},
		{col(lk, "a"), lit(rk)},
		{lit(lk), col(rk, "b")},
		{lit(lk), lit(rk)},
		{null(lk), col(rk, "b")},
		{col(lk, "a"), null(rk)},
	}
}
