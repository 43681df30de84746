package groupagg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// Columns of the typed changelog test.
const (
	gtK    = iota // STRING key
	gtI8          // TINYINT
	gtI16         // SMALLINT
	gtI32         // INT
	gtI64         // BIGINT near ±2^62: sums leave 64 bits
	gtF32         // FLOAT
	gtF64         // DOUBLE, some large: the sum's compensation matters
	gtNaN         // DOUBLE with NaN, for MIN/MAX
	gtDec         // DECIMAL(10, 2)
	gtDate        // DATE
	gtCols
)

var gtDecType = &arrow.Decimal128Type{Precision: 10, Scale: 2}

var gtSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "nan", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: gtDecType, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
}, nil)

// gtAggs are the aggregates under test: every one the window aggregate
// supports over these types (AVG of the ±2^62 column is left out: the
// reference converts the exact sum with one rounding, the kernel with two).
var gtAggs = []agg.Spec{
	{Func: agg.Sum, Arg: gtI8}, {Func: agg.Avg, Arg: gtI8}, {Func: agg.Min, Arg: gtI8},
	{Func: agg.Sum, Arg: gtI16}, {Func: agg.Avg, Arg: gtI16}, {Func: agg.Max, Arg: gtI16},
	{Func: agg.Sum, Arg: gtI32}, {Func: agg.Avg, Arg: gtI32},
	{Func: agg.Sum, Arg: gtI64}, {Func: agg.Max, Arg: gtI64},
	{Func: agg.Sum, Arg: gtF32}, {Func: agg.Avg, Arg: gtF32}, {Func: agg.Min, Arg: gtF32},
	{Func: agg.Sum, Arg: gtF64}, {Func: agg.Avg, Arg: gtF64}, {Func: agg.Max, Arg: gtF64},
	{Func: agg.Min, Arg: gtNaN}, {Func: agg.Max, Arg: gtNaN},
	{Func: agg.Sum, Arg: gtDec}, {Func: agg.Avg, Arg: gtDec}, {Func: agg.Min, Arg: gtDec}, {Func: agg.Max, Arg: gtDec},
	{Func: agg.Min, Arg: gtDate}, {Func: agg.Max, Arg: gtDate},
	{Func: agg.Count, Arg: gtDec}, {Func: agg.CountStar, Arg: -1},
}

// gtRow is one input row; nil is NULL.
type gtRow [gtCols]any

func gtRandomRows(r *rand.Rand, n int) ([]gtRow, []bool) {
	rows := make([]gtRow, n)
	live := make([]bool, n)
	val := func(v any) any {
		if r.IntN(6) == 0 {
			return nil
		}
		return v
	}
	for i := range rows {
		if r.IntN(8) > 0 {
			rows[i][gtK] = fmt.Sprintf("k%d", r.IntN(5))
		}
		rows[i][gtI8] = val(int8(r.IntN(256) - 128))
		rows[i][gtI16] = val(int16(r.IntN(65536) - 32768))
		rows[i][gtI32] = val(int32(r.Int64N(1<<32) - 1<<31))
		rows[i][gtI64] = val(int64(r.IntN(5)-2)<<62 + r.Int64N(1000))
		rows[i][gtF32] = val(float32(r.IntN(2001)-1000) / 8)
		f := float64(r.IntN(2001)-1000) / 8
		if r.IntN(10) == 0 {
			f *= 1e17
		}
		rows[i][gtF64] = val(f)
		nan := float64(r.IntN(11) - 5)
		if r.IntN(6) == 0 {
			nan = math.NaN()
		}
		rows[i][gtNaN] = val(nan)
		rows[i][gtDec] = val(decimal128.FromI64(r.Int64N(2_000_000_000) - 1_000_000_000))
		rows[i][gtDate] = val(arrow.Date32(r.IntN(40000) - 20000))
		live[i] = r.IntN(4) > 0
	}
	return rows, live
}

// gtGroup is the reference's state of one group: exact sums (big.Int:
// integers as such, decimals unscaled), float sums compensated as the
// aggregate documents, extremes and counts.
type gtGroup struct {
	n      [gtCols]int64
	isum   [gtCols]*big.Int
	fs, fc [gtCols]float64
	ext    [gtCols][2]any // min, max
}

func gtLess(a, b any) bool {
	switch x := a.(type) {
	case int8:
		return x < b.(int8)
	case int16:
		return x < b.(int16)
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	case float32:
		y := b.(float32)
		return x < y || (x == x && y != y)
	case float64:
		y := b.(float64)
		return x < y || (x == x && y != y)
	case decimal128.Num:
		return x.Less(b.(decimal128.Num))
	case arrow.Date32:
		return x < b.(arrow.Date32)
	}
	panic(fmt.Sprintf("gtLess %T", a))
}

func (g *gtGroup) add(row gtRow) {
	for c := gtI8; c < gtCols; c++ {
		v := row[c]
		if v == nil {
			continue
		}
		if g.n[c] == 0 {
			g.ext[c] = [2]any{v, v}
		} else {
			if gtLess(v, g.ext[c][0]) {
				g.ext[c][0] = v
			}
			if gtLess(g.ext[c][1], v) {
				g.ext[c][1] = v
			}
		}
		g.n[c]++
		var x float64
		switch v := v.(type) {
		case int8, int16, int32, int64:
			if g.isum[c] == nil {
				g.isum[c] = new(big.Int)
			}
			g.isum[c].Add(g.isum[c], big.NewInt(reflectInt(v)))
			continue
		case decimal128.Num:
			if g.isum[c] == nil {
				g.isum[c] = new(big.Int)
			}
			g.isum[c].Add(g.isum[c], v.BigInt())
			continue
		case float32:
			x = float64(v)
		case float64:
			x = v
		default:
			continue
		}
		s := g.fs[c]
		t := s + x
		bb := t - s
		g.fc[c] += (s - (t - bb)) + (x - bb)
		g.fs[c] = t
	}
}

func reflectInt(v any) int64 {
	switch v := v.(type) {
	case int8:
		return int64(v)
	case int16:
		return int64(v)
	case int32:
		return int64(v)
	}
	return v.(int64)
}

// result renders aggregate a of the group as the kernel's output would be.
func (g *gtGroup) result(a agg.Spec, rows int64) string {
	c := a.Arg
	switch a.Func {
	case agg.CountStar:
		return strconv.FormatInt(rows, 10)
	case agg.Count:
		return strconv.FormatInt(g.n[c], 10)
	}
	if g.n[c] == 0 {
		return "null"
	}
	n := big.NewInt(g.n[c])
	switch a.Func {
	case agg.Min, agg.Max:
		v := g.ext[c][0]
		if a.Func == agg.Max {
			v = g.ext[c][1]
		}
		return gtFormat(v)
	case agg.Sum:
		switch c {
		case gtDec:
			return gtDecString(g.isum[c], 2)
		case gtF32, gtF64:
			return gtFormat(gtFloatSum(g.fs[c], g.fc[c]))
		}
		// The low 64 bits, as a two's complement BIGINT.
		lo := new(big.Int).And(g.isum[c], new(big.Int).SetUint64(math.MaxUint64))
		return strconv.FormatInt(int64(lo.Uint64()), 10)
	}
	switch c {
	case gtDec: // DECIMAL(38, 6): 4 more digits, half away from zero
		s := new(big.Int).Mul(g.isum[c], big.NewInt(10_000))
		q, r := new(big.Int).QuoRem(s, n, new(big.Int))
		if new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2)).Cmp(n) >= 0 {
			q.Add(q, big.NewInt(int64(s.Sign())))
		}
		return gtDecString(q, 6)
	case gtF32, gtF64:
		return gtFormat(gtFloatSum(g.fs[c], g.fc[c]) / float64(g.n[c]))
	}
	f, _ := new(big.Float).SetInt(g.isum[c]).Float64()
	return gtFormat(f / float64(g.n[c]))
}

func gtFloatSum(s, c float64) float64 {
	if math.IsInf(s, 0) || s != s {
		return s
	}
	return s + c
}

func gtDecString(v *big.Int, scale int) string {
	return decimal128.FromBigInt(v).ToString(int32(scale))
}

func gtFormat(v any) string {
	switch v := v.(type) {
	case float32:
		return "f" + strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return "f" + strconv.FormatFloat(v, 'g', -1, 64)
	case decimal128.Num:
		return v.ToString(2)
	case arrow.Date32:
		return "d" + strconv.Itoa(int(v))
	}
	return fmt.Sprint(v)
}

// gtCell renders a kernel output cell as gtFormat does.
func gtCell(t *testing.T, arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "null"
	}
	switch a := arr.(type) {
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Float32:
		return gtFormat(a.Value(i))
	case *array.Float64:
		return gtFormat(a.Value(i))
	case *array.Date32:
		return gtFormat(a.Value(i))
	case *array.Int8:
		return fmt.Sprint(a.Value(i))
	case *array.Int16:
		return fmt.Sprint(a.Value(i))
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.String:
		return a.Value(i)
	}
	t.Fatalf("unexpected output type %s", arr.DataType())
	return ""
}

// gtReference is the changelog row at a time: +I for a group's first
// row, -U/+U when a rendered result changed.
func gtReference(rows []gtRow, live []bool) []string {
	groups := map[any]*gtGroup{}
	counts := map[any]int64{}
	var out []string
	render := func(k any) string {
		ks := "null"
		if k != nil {
			ks = k.(string)
		}
		s := ks
		for _, a := range gtAggs {
			s += "," + groups[k].result(a, counts[k])
		}
		return s
	}
	for i, row := range rows {
		if !live[i] {
			continue
		}
		k := row[gtK]
		g, ok := groups[k]
		if !ok {
			g = &gtGroup{}
			groups[k] = g
			counts[k] = 1
			g.add(row)
			out = append(out, "+I,"+render(k))
			continue
		}
		old := render(k)
		counts[k]++
		g.add(row)
		if nw := render(k); nw != old {
			out = append(out, "-U,"+old, "+U,"+nw)
		}
	}
	return out
}

func gtBatch(mem memory.Allocator, rows []gtRow, live []bool) *vector.Batch {
	cols := make([]arrow.Array, gtCols)
	for c := range gtCols {
		b := array.NewBuilder(mem, gtSchema.Field(c).Type)
		for _, row := range rows {
			switch v := row[c].(type) {
			case nil:
				b.AppendNull()
			case string:
				b.(*array.StringBuilder).Append(v)
			case int8:
				b.(*array.Int8Builder).Append(v)
			case int16:
				b.(*array.Int16Builder).Append(v)
			case int32:
				b.(*array.Int32Builder).Append(v)
			case int64:
				b.(*array.Int64Builder).Append(v)
			case float32:
				b.(*array.Float32Builder).Append(v)
			case float64:
				b.(*array.Float64Builder).Append(v)
			case decimal128.Num:
				b.(*array.Decimal128Builder).Append(v)
			case arrow.Date32:
				b.(*array.Date32Builder).Append(v)
			}
		}
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(gtSchema, cols, int64(len(rows)))
	column.ReleaseAll(cols)
	out := vector.New(rec)
	sel := []int32{}
	for i, l := range live {
		if l {
			sel = append(sel, int32(i))
		}
	}
	out.Sel = sel
	return out
}

// TestGroupAggTypes checks SUM, AVG, MIN and MAX of every type the window
// aggregate supports against a row-at-a-time reference (exact for
// integers and decimals, the same compensated sums for floats), at
// several batch sizes with selection vectors and NULLs, with and without
// checkpoints restored into a new aggregate between batches.
func TestGroupAggTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	iters := 12
	if testing.Short() || optest.RaceEnabled {
		iters = 3
	}
	for iter := range iters {
		rows, live := gtRandomRows(r, 1+r.IntN(300))
		want := gtReference(rows, live)
		for _, bs := range []int{1, 7, 1024, 1 + r.IntN(50)} {
			for _, cut := range []bool{false, true} {
				got := gtRun(t, rows, live, bs, cut, r)
				optest.CompareLines(t, fmt.Sprintf("iter %d batch %d cut %v", iter, bs, cut), got, want)
			}
		}
	}
}

func gtRun(t *testing.T, rows []gtRow, live []bool, bs int, cut bool, r *rand.Rand) []string {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	cfg := Config{Input: gtSchema, Keys: []int{gtK}, Aggs: gtAggs}
	g, err := New(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range gtAggs {
		var want arrow.DataType
		if a.Arg >= 0 {
			st := agg.NewState(gtSchema.Field(a.Arg).Type)
			if err := st.Enable(a.Func); err != nil {
				t.Fatal(err)
			}
			want = st.OutType(a.Func)
		} else {
			want = arrow.PrimitiveTypes.Int64
		}
		if got := g.OutputSchema().Field(1 + i).Type; !arrow.TypeEqual(got, want) {
			t.Fatalf("aggregate %d (%s): type %s, the window aggregate's is %s", i, a.Func, got, want)
		}
	}
	var store *checkpoint.Store
	if cut {
		if store, err = checkpoint.NewStore(t.TempDir(), checkpoint.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	id := uint64(0)
	batches := (len(rows) + bs - 1) / bs
	for from := 0; from < len(rows); from += bs {
		to := min(from+bs, len(rows))
		b := gtBatch(mem, rows[from:to], live[from:to])
		ch, err := g.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		if ch != nil {
			ch.Rows(func(i int) {
				s := ch.Kinds[i].String()
				for c := range int(ch.Rec.NumCols()) {
					s += "," + gtCell(t, ch.Column(c), i)
				}
				out = append(out, s)
			})
			ch.Release()
		}
		if !cut || r.IntN(batches) >= 4 {
			continue
		}
		id++
		part := optest.Checkpoint(t, store, id, g, mem)
		g2, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := g2.restore([]*checkpoint.Part{part}, nil, mem); err != nil {
			t.Fatal(err)
		}
		part.Release()
		g = g2
	}
	return out
}
