package groupagg

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
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

// The retracting aggregate against an independent recomputation: random
// changelogs (inserts, updates as -U/+U pairs, deletes, whole groups
// deleted) generated from a seed; after every row the reference computes
// the touched group's aggregates from scratch over the rows it holds (no
// incremental state, no retraction arithmetic), and derives the changelog
// row from the results before and after.

// Columns of the changelog test.
const (
	crK    = iota // STRING key
	crI8          // TINYINT, few values: COUNT(DISTINCT), SUM, AVG
	crI32         // INT
	crI64         // BIGINT near ±2^62: the sum leaves 64 bits
	crF64         // DOUBLE: eighths, some ×1e17, some ±Inf and NaN
	crF32         // FLOAT: eighths, -0 and NaN
	crStr         // STRING
	crDec         // DECIMAL(10, 2)
	crBool        // BOOLEAN
	crDate        // DATE
	crCols
)

var crDecType = &arrow.Decimal128Type{Precision: 10, Scale: 2}

var crSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "dec", Type: crDecType, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
}, nil)

// crAggs are every aggregate over every type the changelog accepts (AVG of
// the ±2^62 column is left out: the kernel converts the 128-bit sum to a
// float with two roundings, an exact reference with one).
var crAggs = []agg.Spec{
	{Func: agg.CountStar, Arg: -1}, {Func: agg.Count, Arg: crI32}, {Func: agg.Count, Arg: crStr},
	{Func: agg.Sum, Arg: crI8}, {Func: agg.Avg, Arg: crI8}, {Func: agg.CountDistinct, Arg: crI8},
	{Func: agg.Sum, Arg: crI32}, {Func: agg.Avg, Arg: crI32}, {Func: agg.Min, Arg: crI32}, {Func: agg.Max, Arg: crI32},
	{Func: agg.Sum, Arg: crI64}, {Func: agg.Max, Arg: crI64},
	{Func: agg.Sum, Arg: crF64}, {Func: agg.Avg, Arg: crF64}, {Func: agg.Min, Arg: crF64}, {Func: agg.Max, Arg: crF64},
	{Func: agg.Sum, Arg: crF32}, {Func: agg.Avg, Arg: crF32}, {Func: agg.Min, Arg: crF32}, {Func: agg.Max, Arg: crF32},
	{Func: agg.Min, Arg: crStr}, {Func: agg.Max, Arg: crStr}, {Func: agg.CountDistinct, Arg: crStr},
	{Func: agg.Sum, Arg: crDec}, {Func: agg.Avg, Arg: crDec}, {Func: agg.Min, Arg: crDec}, {Func: agg.Max, Arg: crDec},
	{Func: agg.Min, Arg: crBool}, {Func: agg.Max, Arg: crBool},
	{Func: agg.Min, Arg: crDate}, {Func: agg.Max, Arg: crDate},
}

// crRow is one row; nil is NULL.
type crRow [crCols]any

// crChange is one changelog row.
type crChange struct {
	kind vector.RowKind
	row  *crRow
}

func crRandomRow(r *rand.Rand, key any) *crRow {
	var row crRow
	val := func(v any) any {
		if r.IntN(6) == 0 {
			return nil
		}
		return v
	}
	row[crK] = key
	row[crI8] = val(int8(r.IntN(7) - 3))
	row[crI32] = val(int32(r.Int64N(1<<32) - 1<<31))
	row[crI64] = val(int64(r.IntN(5)-2)<<62 + r.Int64N(1000))
	f := float64(r.IntN(2001)-1000) / 8
	switch r.IntN(30) {
	case 0, 1, 2:
		f *= 1e17
	case 3:
		f = math.Inf(1)
	case 4:
		f = math.Inf(-1)
	case 5:
		f = math.NaN()
	}
	row[crF64] = val(f)
	f32 := float32(r.IntN(41)-20) / 8
	switch r.IntN(12) {
	case 0:
		f32 = float32(math.Copysign(0, -1))
	case 1:
		f32 = float32(math.NaN())
	}
	row[crF32] = val(f32)
	row[crStr] = val([]string{"", "a", "ab", "b", "zz", "ü€"}[r.IntN(6)])
	row[crDec] = val(decimal128.FromI64(r.Int64N(2_000_000) - 1_000_000))
	row[crBool] = val(r.IntN(2) == 0)
	row[crDate] = val(arrow.Date32(r.IntN(400) - 200))
	return &row
}

func crRandomKey(r *rand.Rand) any {
	if r.IntN(8) == 0 {
		return nil
	}
	return fmt.Sprintf("k%d", r.IntN(4))
}

// crRandomChangelog is a consistent changelog of n rows: every -U or -D
// retracts a row an earlier +I or +U added and no later row retracted.
func crRandomChangelog(r *rand.Rand, n int) []crChange {
	var out []crChange
	var live []*crRow
	for len(out) < n {
		switch x := r.IntN(20); {
		case x < 8 || len(live) == 0:
			row := crRandomRow(r, crRandomKey(r))
			live = append(live, row)
			out = append(out, crChange{vector.Insert, row})
		case x < 14: // an update: the new row keeps the key or moves
			i := r.IntN(len(live))
			key := live[i][crK]
			if r.IntN(3) == 0 {
				key = crRandomKey(r)
			}
			row := crRandomRow(r, key)
			out = append(out, crChange{vector.UpdateBefore, live[i]}, crChange{vector.UpdateAfter, row})
			live[i] = row
		case x < 19:
			i := r.IntN(len(live))
			out = append(out, crChange{vector.Delete, live[i]})
			live = slices.Delete(live, i, i+1)
		default: // a group emptied
			key := live[r.IntN(len(live))][crK]
			live = slices.DeleteFunc(live, func(row *crRow) bool {
				if row[crK] == key {
					out = append(out, crChange{vector.Delete, row})
					return true
				}
				return false
			})
		}
	}
	return out
}

// crLess is the order of MIN/MAX: NaN above every number, -0 below 0.
func crLess(a, b any) bool {
	switch x := a.(type) {
	case int8:
		return x < b.(int8)
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	case float32:
		return crFloatLess(float64(x), float64(b.(float32)))
	case float64:
		return crFloatLess(x, b.(float64))
	case string:
		return x < b.(string)
	case decimal128.Num:
		return x.Less(b.(decimal128.Num))
	case bool:
		return !x && b.(bool)
	case arrow.Date32:
		return x < b.(arrow.Date32)
	}
	panic(fmt.Sprintf("crLess %T", a))
}

func crFloatLess(a, b float64) bool {
	an, bn := a != a, b != b
	switch {
	case an || bn:
		return !an && bn
	case a == b:
		return math.Signbit(a) && !math.Signbit(b)
	}
	return a < b
}

func crFloat(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}

// crAggregate computes aggregate a over rows from scratch, rendered as
// crCell renders the kernel's output.
func crAggregate(a agg.Spec, rows []*crRow) string {
	if a.Func == agg.CountStar {
		return strconv.Itoa(len(rows))
	}
	var vals []any
	for _, row := range rows {
		if v := row[a.Arg]; v != nil {
			vals = append(vals, v)
		}
	}
	switch a.Func {
	case agg.Count:
		return strconv.Itoa(len(vals))
	case agg.CountDistinct:
		set := map[any]bool{}
		for _, v := range vals {
			set[v] = true
		}
		return strconv.Itoa(len(set))
	}
	if len(vals) == 0 {
		return "null"
	}
	n := int64(len(vals))
	switch a.Func {
	case agg.Min, agg.Max:
		best := vals[0]
		for _, v := range vals[1:] {
			if (a.Func == agg.Min && crLess(v, best)) || (a.Func == agg.Max && crLess(best, v)) {
				best = v
			}
		}
		return crFormat(best)
	}
	switch a.Arg {
	case crF64, crF32:
		var nan, pos, neg bool
		exact := new(big.Float).SetPrec(2000)
		for _, v := range vals {
			switch f := crFloat(v); {
			case f != f:
				nan = true
			case math.IsInf(f, 1):
				pos = true
			case math.IsInf(f, -1):
				neg = true
			default:
				exact.Add(exact, new(big.Float).SetFloat64(f))
			}
		}
		sum, _ := exact.Float64()
		switch {
		case nan || (pos && neg):
			sum = math.NaN()
		case pos:
			sum = math.Inf(1)
		case neg:
			sum = math.Inf(-1)
		}
		if a.Func == agg.Avg {
			sum /= float64(n)
		}
		return crFormat(sum)
	case crDec:
		sum := new(big.Int)
		for _, v := range vals {
			sum.Add(sum, v.(decimal128.Num).BigInt())
		}
		if a.Func == agg.Sum {
			return decimal128.FromBigInt(sum).ToString(2)
		}
		// DECIMAL(38, 6): four more digits, rounded half away from zero.
		s := new(big.Int).Mul(sum, big.NewInt(10_000))
		nb := big.NewInt(n)
		q, rem := new(big.Int).QuoRem(s, nb, new(big.Int))
		if new(big.Int).Mul(new(big.Int).Abs(rem), big.NewInt(2)).Cmp(nb) >= 0 {
			q.Add(q, big.NewInt(int64(s.Sign())))
		}
		return decimal128.FromBigInt(q).ToString(6)
	}
	sum := new(big.Int)
	for _, v := range vals {
		sum.Add(sum, big.NewInt(reflectInt(v)))
	}
	if a.Func == agg.Sum {
		lo := new(big.Int).And(sum, new(big.Int).SetUint64(math.MaxUint64))
		return strconv.FormatInt(int64(lo.Uint64()), 10)
	}
	f, _ := new(big.Float).SetInt(sum).Float64()
	return crFormat(f / float64(n))
}

func crFormat(v any) string {
	switch v := v.(type) {
	case float32:
		return "f" + strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return "f" + strconv.FormatFloat(v, 'g', -1, 64)
	case decimal128.Num:
		return v.ToString(2)
	case arrow.Date32:
		return "d" + strconv.Itoa(int(v))
	case string:
		return strconv.Quote(v)
	}
	return fmt.Sprint(v)
}

// crCell renders a kernel output cell as crFormat does.
func crCell(t testing.TB, arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "null"
	}
	switch a := arr.(type) {
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.Boolean:
		return fmt.Sprint(a.Value(i))
	case *array.Float32:
		return crFormat(a.Value(i))
	case *array.Float64:
		return crFormat(a.Value(i))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return crFormat(a.Value(i))
	case *array.Int8:
		return fmt.Sprint(a.Value(i))
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	}
	t.Fatalf("unexpected output type %s", arr.DataType())
	return ""
}

// crReference is the changelog the aggregate must emit, from scratch.
func crReference(changes []crChange, aggs []agg.Spec) []string {
	groups := map[any][]*crRow{}
	render := func(k any) string {
		s := "null"
		if k != nil {
			s = strconv.Quote(k.(string))
		}
		for _, a := range aggs {
			s += "," + crAggregate(a, groups[k])
		}
		return s
	}
	var out []string
	for _, c := range changes {
		k := c.row[crK]
		rows, had := groups[k]
		var before string
		if had {
			before = render(k)
		}
		if c.kind == vector.Insert || c.kind == vector.UpdateAfter {
			groups[k] = append(rows, c.row)
		} else {
			i := slices.Index(rows, c.row)
			groups[k] = slices.Delete(rows, i, i+1)
		}
		switch {
		case !had:
			out = append(out, "+I,"+render(k))
		case len(groups[k]) == 0:
			delete(groups, k)
			out = append(out, "-D,"+before)
		default:
			if after := render(k); after != before {
				out = append(out, "-U,"+before, "+U,"+after)
			}
		}
	}
	return out
}

// crBatch builds a changelog batch of changes, with random dead rows (of
// any kind, retracting anything: not live, so ignored) around them when
// sel is set.
func crBatch(mem memory.Allocator, r *rand.Rand, changes []crChange, sel bool) *vector.Batch {
	var phys []crChange
	var selv []int32
	if sel {
		selv = []int32{}
		for _, c := range changes {
			for r.IntN(3) == 0 {
				phys = append(phys, crChange{vector.RowKind(r.IntN(4)), crRandomRow(r, crRandomKey(r))})
			}
			selv = append(selv, int32(len(phys)))
			phys = append(phys, c)
		}
	} else {
		phys = changes
	}
	cols := make([]arrow.Array, crCols)
	for c := range crCols {
		b := array.NewBuilder(mem, crSchema.Field(c).Type)
		for _, ch := range phys {
			switch v := ch.row[c].(type) {
			case nil:
				b.AppendNull()
			case string:
				b.(*array.StringBuilder).Append(v)
			case int8:
				b.(*array.Int8Builder).Append(v)
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
			case bool:
				b.(*array.BooleanBuilder).Append(v)
			case arrow.Date32:
				b.(*array.Date32Builder).Append(v)
			}
		}
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(crSchema, cols, int64(len(phys)))
	column.ReleaseAll(cols)
	out := vector.New(rec)
	out.Sel = selv
	out.Kinds = make([]vector.RowKind, len(phys))
	for i, c := range phys {
		out.Kinds[i] = c.kind
	}
	return out
}

// crRun feeds changes to a retracting aggregate in batches of bs rows;
// with cut set, it checkpoints after random batches and continues in a
// restored aggregate.
func crRun(t *testing.T, cfg Config, changes []crChange, bs int, cut *rand.Rand, r *rand.Rand) []string {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	g, err := New(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	var store *checkpoint.Store
	if cut != nil {
		if store, err = checkpoint.NewStore(t.TempDir(), checkpoint.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	id := uint64(0)
	batches := (len(changes) + bs - 1) / bs
	for from := 0; from < len(changes); from += bs {
		b := crBatch(mem, r, changes[from:min(from+bs, len(changes))], r.IntN(2) == 0)
		ch, err := g.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		if ch != nil {
			ch.Rows(func(i int) {
				s := ch.Kinds[i].String()
				for c := range int(ch.Rec.NumCols()) {
					s += "," + crCell(t, ch.Column(c), i)
				}
				out = append(out, s)
			})
			ch.Release()
		}
		if cut == nil || cut.IntN(batches) >= 4 {
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
		if g2.Groups() != g.Groups() {
			t.Fatalf("restored %d groups, the snapshot had %d", g2.Groups(), g.Groups())
		}
		g = g2
	}
	return out
}

// TestGroupAggRetractReference checks the retracting aggregate's
// changelog against the recomputation on random changelogs, at batch
// sizes 1, 7, 1024 and a random one, with dead rows around the live ones,
// with and without checkpoints restored into a new aggregate between
// batches.
func TestGroupAggRetractReference(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	iters := 8
	if testing.Short() || optest.RaceEnabled {
		iters = 3
	}
	for iter := range iters {
		changes := crRandomChangelog(r, 1+r.IntN(400))
		for _, global := range []bool{false, true} {
			cfg := Config{Input: crSchema, Keys: []int{crK}, Aggs: crAggs, Retract: true}
			if global { // one group: the key is an aggregate's argument only
				cfg.Keys = nil
			}
			want := crReference(changes, crAggs)
			if global {
				want = crReference(crOneGroup(changes), crAggs)
				for i, l := range want {
					want[i] = l[:3] + l[strings.IndexByte(l[3:], ',')+4:] // no key column
				}
			}
			for _, bs := range []int{1, 7, 1024, 1 + r.IntN(50)} {
				for _, cut := range []bool{false, true} {
					var cr *rand.Rand
					if cut {
						cr = r
					}
					got := crRun(t, cfg, changes, bs, cr, r)
					optest.CompareLines(t, fmt.Sprintf("iter %d global %v batch %d cut %v", iter, global, bs, cut), got, want)
				}
			}
		}
	}
}

// crOneGroup puts every row of changes into one group (key "all"), rows
// kept by identity.
func crOneGroup(changes []crChange) []crChange {
	moved := map[*crRow]*crRow{}
	out := make([]crChange, len(changes))
	for i, c := range changes {
		row, ok := moved[c.row]
		if !ok {
			cp := *c.row
			cp[crK] = "all"
			row = &cp
			moved[c.row] = row
		}
		out[i] = crChange{c.kind, row}
	}
	return out
}

// TestGroupAggRetractNoAggregates: GROUP BY without aggregates over a
// changelog emits +I when a key appears and -D when its last row goes.
func TestGroupAggRetractNoAggregates(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	changes := crRandomChangelog(r, 300)
	want := crReference(changes, nil)
	for _, bs := range []int{1, 7, 1024} {
		got := crRun(t, Config{Input: crSchema, Keys: []int{crK}, Retract: true}, changes, bs, nil, r)
		optest.CompareLines(t, fmt.Sprintf("batch %d", bs), got, want)
	}
	for _, l := range want {
		if !strings.HasPrefix(l, "+I,") && !strings.HasPrefix(l, "-D,") {
			t.Fatalf("changelog row %s: want only +I and -D", l)
		}
	}
}

// TestGroupAggRetractErrors: a retraction the aggregate can tell was never
// accumulated fails, naming the row's kind and group.
func TestGroupAggRetractErrors(t *testing.T) {
	row := func(key any, i32 any) *crRow {
		var r crRow
		r[crK], r[crI32] = key, i32
		return &r
	}
	a := row("a", int32(1))
	cases := []struct {
		name    string
		aggs    []agg.Spec
		changes []crChange
		want    string
	}{
		{"missing group", []agg.Spec{{Func: agg.CountStar, Arg: -1}}, []crChange{{vector.Insert, a}, {vector.Delete, row("b", int32(1))}},
			`a -D row of group ["b"] retracts a row of a group that holds none`},
		{"emptied group", []agg.Spec{{Func: agg.Sum, Arg: crI32}}, []crChange{{vector.Insert, a}, {vector.UpdateBefore, a}, {vector.Delete, a}},
			`a -D row of group ["a"] retracts a row of a group that holds none`},
		{"MAX value not held", []agg.Spec{{Func: agg.Max, Arg: crI32}}, []crChange{{vector.Insert, a}, {vector.Insert, a}, {vector.Delete, row("a", int32(2))}},
			`a -D row of group ["a"] retracts a MAX value 2, which the group does not hold`},
		{"COUNT(DISTINCT) value not held", []agg.Spec{{Func: agg.CountDistinct, Arg: crI32}}, []crChange{{vector.Insert, a}, {vector.Insert, a}, {vector.UpdateBefore, row("a", int32(3))}},
			`a -U row of group ["a"] retracts a COUNT(DISTINCT) value 3, which the group does not hold`},
		{"more values than counted", []agg.Spec{{Func: agg.Count, Arg: crI32}}, []crChange{{vector.Insert, row("a", nil)}, {vector.Insert, row("a", nil)}, {vector.Delete, a}},
			`a -D row of group ["a"] retracts a non-NULL value from a COUNT of 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			g, err := New(Config{Input: crSchema, Keys: []int{crK}, Aggs: c.aggs, Retract: true}, mem)
			if err != nil {
				t.Fatal(err)
			}
			b := crBatch(mem, nil, c.changes, false)
			defer b.Release()
			out, err := g.Add(b)
			if out != nil {
				out.Release()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "GROUP BY over a changelog: ") {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// Without Retract the aggregate refuses any changelog row.
	g, err := New(Config{Input: crSchema, Keys: []int{crK}, Aggs: []agg.Spec{{Func: agg.CountStar, Arg: -1}}}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	b := crBatch(memory.NewGoAllocator(), nil, []crChange{{vector.Insert, a}, {vector.UpdateBefore, a}}, false)
	defer b.Release()
	if _, err := g.Add(b); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("insert-only aggregate over a changelog: error %v", err)
	}
}

// TestGroupAggSnapshotRestoreChangelog is TestGroupAggSnapshotRestore over
// changelogs: the window test's random rows (every key and value type,
// NULLs, selection vectors, forced hash collisions) inserted, updated and
// deleted, whole groups too; checkpoints at random batch boundaries are
// restored into a new aggregate that continues (and split over two
// subtasks); the changelog equals the uninterrupted run's at every batch
// size.
func TestGroupAggSnapshotRestoreChangelog(t *testing.T) {
	seeds := 8
	if testing.Short() || optest.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 3000)
		rng := rand.New(rand.NewPCG(seed, 23))
		cfg := Config{Input: c.Cfg.Input, Keys: c.Cfg.Keys, KeyNames: c.Cfg.KeyNames, Retract: true}
		for _, a := range gaStateAggChoices {
			if rng.IntN(3) == 0 {
				cfg.Aggs = append(cfg.Aggs, a)
			}
		}
		var rows []*optest.Row
		for _, ev := range c.Events {
			if !ev.Advance {
				rows = append(rows, ev.Row)
			}
		}
		rows, kinds := gaRandomChangelog(rng, rows, cfg.Keys)
		t.Run(fmt.Sprintf("seed=%d/keys=%v/aggs=%d/weak=%v", seed, cfg.Keys, len(cfg.Aggs), c.WeakHash), func(t *testing.T) {
			for _, bs := range []int{1, 7, 1024, -1} {
				size := func() int { return bs }
				if bs < 0 {
					size = func() int { return 1 + rng.IntN(60) }
				}
				var sizes []int
				for n := 0; n < len(rows); n += sizes[len(sizes)-1] {
					sizes = append(sizes, size())
				}
				want := gaStateRun(t, c, cfg, rows, kinds, sizes, nil)
				got := gaStateRun(t, c, cfg, rows, kinds, sizes, rng)
				optest.CompareLines(t, fmt.Sprintf("batch=%d", bs), got, want)
			}
		})
	}
}

// gaRandomChangelog makes a consistent changelog of rows: each row is
// inserted, or is the new image of an update of an earlier row, or comes
// after a delete of one; now and then every row of one key is deleted.
func gaRandomChangelog(rng *rand.Rand, rows []*optest.Row, keys []int) ([]*optest.Row, []vector.RowKind) {
	var out []*optest.Row
	var kinds []vector.RowKind
	var live []*optest.Row
	emit := func(r *optest.Row, k vector.RowKind) {
		out, kinds = append(out, r), append(kinds, k)
	}
	key := func(r *optest.Row) string {
		var s []string
		for _, k := range keys {
			s = append(s, fmt.Sprint(r.Vals[k]))
		}
		return strings.Join(s, "|")
	}
	for _, r := range rows {
		switch x := rng.IntN(20); {
		case x < 9 || len(live) == 0:
			emit(r, vector.Insert)
			live = append(live, r)
		case x < 15:
			i := rng.IntN(len(live))
			emit(live[i], vector.UpdateBefore)
			emit(r, vector.UpdateAfter)
			live[i] = r
		case x < 19:
			i := rng.IntN(len(live))
			emit(live[i], vector.Delete)
			live[i] = r
			emit(r, vector.Insert)
		default:
			k := key(live[rng.IntN(len(live))])
			live = slices.DeleteFunc(live, func(l *optest.Row) bool {
				if key(l) == k {
					emit(l, vector.Delete)
					return true
				}
				return false
			})
			emit(r, vector.Insert)
			live = append(live, r)
		}
	}
	return out, kinds
}

// TestGroupAggIncremental snapshots changelog runs often, as deltas on
// the previous checkpoint (changed groups, tombstones for emptied ones)
// with chains of at most three deltas, and at random points continues from
// a restore of the newest chain: the changelog equals the uninterrupted
// run's.
func TestGroupAggIncremental(t *testing.T) {
	seeds := 8
	if testing.Short() || optest.RaceEnabled {
		seeds = 2
	}
	deltas, tombs := 0, 0
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 4000)
		rng := rand.New(rand.NewPCG(seed, 29))
		cfg := Config{Input: c.Cfg.Input, Keys: c.Cfg.Keys, KeyNames: c.Cfg.KeyNames, Retract: true}
		for _, a := range gaStateAggChoices {
			if rng.IntN(3) == 0 {
				cfg.Aggs = append(cfg.Aggs, a)
			}
		}
		var rows []*optest.Row
		for _, ev := range c.Events {
			if !ev.Advance {
				rows = append(rows, ev.Row)
			}
		}
		rows, kinds := gaRandomChangelog(rng, rows, cfg.Keys)
		var sizes []int
		for n := 0; n < len(rows); n += sizes[len(sizes)-1] {
			sizes = append(sizes, 1+rng.IntN(30))
		}
		t.Run(fmt.Sprintf("seed=%d/keys=%v/aggs=%d", seed, cfg.Keys, len(cfg.Aggs)), func(t *testing.T) {
			want := gaStateRun(t, c, cfg, rows, kinds, sizes, nil)
			got, d, n := gaIncrementalRun(t, c, cfg, rows, kinds, sizes, rng)
			deltas, tombs = deltas+d, tombs+n
			optest.CompareLines(t, "incremental", got, want)
		})
	}
	if deltas == 0 || tombs == 0 {
		t.Fatalf("%d deltas, %d tombstones written", deltas, tombs)
	}
}

func gaIncrementalRun(t *testing.T, c optest.Case, cfg Config, rows []*optest.Row, kinds []vector.RowKind, sizes []int, rng *rand.Rand) (out []string, deltas, tombs int) {
	mem := memory.NewGoAllocator()
	newAgg := func() *Agg {
		g, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if c.WeakHash {
			g.tbl.TestMask = 0xc000000000000003
		}
		return g
	}
	g := newAgg()
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	brng := rand.New(rand.NewPCG(uint64(len(rows)), 3))
	id := uint64(0)
	for _, n := range sizes {
		n = min(n, len(rows))
		b := optest.Batch(mem, cfg.Input, rows[:n], brng, false)
		rows = rows[n:]
		b.Kinds = slices.Clone(kinds[:n])
		kinds = kinds[n:]
		res, err := g.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, optest.Lines(t, res)...)
		if rng.IntN(3) != 0 {
			continue
		}
		id++
		d, k := optest.Incremental(t, store, id, id-1, g, mem)
		if d {
			deltas++
		}
		tombs += k
		if rng.IntN(4) != 0 {
			continue
		}
		g2 := newAgg()
		optest.RestoreNewest(t, store, id, g2)
		if g2.Groups() != g.Groups() {
			t.Fatalf("checkpoint %d: restored %d groups, the aggregate has %d", id, g2.Groups(), g.Groups())
		}
		g = g2
	}
	return out, deltas, tombs
}
