package window

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// wsSchema: ts int64, k string, v float64.
var wsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

type wsRow struct {
	ts any // int64 or nil
	k  any // string or nil
	v  any // float64 or nil
}

func wsBatch(mem memory.Allocator, rows []wsRow, rowWM []int64) *vector.Batch {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	b := array.NewRecordBuilder(mem, wsSchema)
	defer b.Release()
	for _, r := range rows {
		optest.Append(b.Field(0), r.ts)
		optest.Append(b.Field(1), r.k)
		optest.Append(b.Field(2), r.v)
	}
	return &vector.Batch{Rec: b.NewRecordBatch(), RowWatermark: rowWM}
}

func wsAgg(t *testing.T, spec kwindow.Spec, mem memory.Allocator) *Agg {
	t.Helper()
	w, err := New(Config{
		Input:   wsSchema,
		Window:  spec,
		TimeCol: 0,
		Keys:    []int{1},
		Aggs: []agg.Spec{
			{Func: agg.CountStar, Arg: -1, Name: "n"},
			{Func: agg.Sum, Arg: 2, Name: "s"},
		},
	}, mem)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func wsAdd(t *testing.T, w *Agg, mem memory.Allocator, rowWM []int64, rows ...wsRow) {
	t.Helper()
	b := wsBatch(mem, rows, rowWM)
	defer b.Release()
	if err := w.Add(b); err != nil {
		t.Fatal(err)
	}
}

func wsAdvance(t *testing.T, w *Agg, wm int64) []string {
	t.Helper()
	recs, err := w.Advance(wm)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	return wtLines(t, recs)
}

func wsExpect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestWindowAggValidation(t *testing.T) {
	ok := Config{Input: wsSchema, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, Keys: []int{1},
		Aggs: []agg.Spec{{Func: agg.Sum, Arg: 2, Name: "s"}}}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Window.Size = 0 }, "TUMBLE: size must be > 0"},
		{func(c *Config) { c.Window = kwindow.Spec{Kind: kwindow.Hop, Size: 10} }, "HOP: slide must be > 0"},
		{func(c *Config) { c.Window = kwindow.Spec{Kind: kwindow.Cumulate, Step: 3, Size: 10} }, "must be a multiple of step"},
		{func(c *Config) { c.Window = kwindow.Spec{Kind: kwindow.Session} }, "SESSION: gap must be > 0"},
		{func(c *Config) { c.Window.Kind = 9 }, "unknown window kind"},
		{func(c *Config) { c.TimeCol = 1 }, `column "k": event-time column must be BIGINT`},
		{func(c *Config) { c.TimeCol = 7 }, "time column 7 out of range"},
		{func(c *Config) { c.Keys = []int{5} }, "key 0: column 5 out of range"},
		{func(c *Config) { c.KeyNames = []string{"a", "b"} }, "2 key names for 1 keys"},
		{func(c *Config) { c.Aggs[0].Arg = 1 }, "aggregate 0 (s): SUM(k): unsupported argument type"},
		{func(c *Config) { c.Aggs[0].Arg = 3 }, "SUM argument column 3 out of range"},
		{func(c *Config) { c.Aggs[0].Func = 42 }, "unknown function"},
		{func(c *Config) { c.Input = nil }, "no input schema"},
	} {
		cfg := ok
		cfg.Aggs = slices.Clone(ok.Aggs)
		c.mod(&cfg)
		_, err := New(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
	ts := arrow.NewSchema([]arrow.Field{{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Second}}}, nil)
	if _, err := New(Config{Input: ts, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 1}}, nil); err == nil ||
		!strings.Contains(err.Error(), "TIMESTAMP(3)") {
		t.Errorf("timestamp(s) time column: %v", err)
	}
	lt := arrow.NewSchema([]arrow.Field{{Name: "t", Type: arrow.PrimitiveTypes.Int64}, {Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, nil)
	if _, err := New(Config{Input: lt, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 1}, Keys: []int{1}}, nil); err == nil ||
		!strings.Contains(err.Error(), `key column "l": unsupported group key type`) {
		t.Errorf("list key: %v", err)
	}
	// COUNT works on any type.
	if _, err := New(Config{Input: lt, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 1},
		Aggs: []agg.Spec{{Func: agg.Count, Arg: 1}}}, nil); err != nil {
		t.Errorf("COUNT(list): %v", err)
	}
}

func TestWindowAggOutputSchema(t *testing.T) {
	w, err := New(Config{
		Input: optest.Schema(true), Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, TimeCol: optest.TS,
		Keys: []int{optest.KStr, optest.KI8}, KeyNames: []string{"name", "small"},
		Aggs: []agg.Spec{
			{Func: agg.CountStar, Arg: -1, Name: "c"}, {Func: agg.Sum, Arg: optest.VI32, Name: "si"},
			{Func: agg.Sum, Arg: optest.VF64, Name: "sf"}, {Func: agg.Avg, Arg: optest.VI32, Name: "a"},
			{Func: agg.Min, Arg: optest.VTS, Name: "mt"}, {Func: agg.Max, Arg: optest.VStr, Name: "ms"},
			{Func: agg.Max, Arg: optest.VBool, Name: "mb"}, {Func: agg.Count, Arg: optest.VStr},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "window_start:int64 window_end:int64 name:utf8? small:int8? c:int64 si:int64? sf:float64? a:float64? " +
		"mt:timestamp[ms, tz=UTC]? ms:utf8? mb:bool? agg7:int64"
	var got []string
	for _, f := range w.OutputSchema().Fields() {
		s := f.Name + ":" + f.Type.String()
		if f.Nullable {
			s += "?"
		}
		got = append(got, s)
	}
	if strings.Join(got, " ") != want {
		t.Errorf("schema\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestWindowAggTumbleNegative(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w := wsAgg(t, kwindow.Spec{Kind: kwindow.Tumble, Size: 10, Offset: 3}, mem)
	wsAdd(t, w, mem, nil,
		wsRow{int64(-7), "a", 1.0}, // floor((-7-3)/10)*10+3 = -7: [-7,3)
		wsRow{int64(-8), "a", 2.0}, // floor(-11/10)*10+3 = -17: [-17,-7)
		wsRow{int64(2), "a", 4.0},  // [-7,3)
		wsRow{int64(3), "a", 8.0},  // [3,13)
		wsRow{nil, "a", 16.0},
	)
	wsExpect(t, wsAdvance(t, w, -7), `-17,-7,"a",1,2`)
	wsExpect(t, wsAdvance(t, w, math.MaxInt64), `-7,3,"a",2,5`, `3,13,"a",1,8`)
	if w.NullTimeRows() != 1 || w.LateRows() != 0 || w.Groups() != 0 {
		t.Errorf("null=%d late=%d groups=%d", w.NullTimeRows(), w.LateRows(), w.Groups())
	}
}

func TestWindowAggHopNotMultiple(t *testing.T) {
	// HOP(size 10s, slide 3s): a row is in 3 or 4 windows.
	for _, c := range []struct {
		ts     int64
		starts []int64
	}{
		{0, []int64{-9000, -6000, -3000, 0}},
		{1000, []int64{-6000, -3000, 0}},
		{-1, []int64{-9000, -6000, -3000}},
		{-9001, []int64{-18000, -15000, -12000}},
	} {
		w := wsAgg(t, kwindow.Spec{Kind: kwindow.Hop, Size: 10_000, Slide: 3000}, nil)
		wsAdd(t, w, nil, nil, wsRow{c.ts, "k", 1.0})
		var got []int64
		for _, l := range wsAdvance(t, w, math.MaxInt64) {
			var s, e int64
			parts := strings.Split(l, ",")
			s, e = wsAtoi(parts[0]), wsAtoi(parts[1])
			if e-s != 10_000 || c.ts < s || c.ts >= e {
				t.Errorf("ts %d: bad window %s", c.ts, l)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, c.starts) {
			t.Errorf("ts %d: starts %v, want %v", c.ts, got, c.starts)
		}
	}
}

func wsAtoi(s string) int64 {
	var v int64
	neg := strings.HasPrefix(s, "-")
	for _, c := range strings.TrimPrefix(s, "-") {
		v = v*10 + int64(c-'0')
	}
	if neg {
		return -v
	}
	return v
}

func TestWindowAggHopPartialLate(t *testing.T) {
	// A row late for its older HOP windows still counts in the newer ones,
	// and is counted once in LateRows.
	w := wsAgg(t, kwindow.Spec{Kind: kwindow.Hop, Size: 10, Slide: 5}, nil)
	wsAdd(t, w, nil, nil, wsRow{int64(1), "a", 1.0})
	wsExpect(t, wsAdvance(t, w, 5), `-5,5,"a",1,1`)
	wsAdd(t, w, nil, nil, wsRow{int64(4), "a", 2.0}) // [-5,5) fired; [0,10) open
	wsExpect(t, wsAdvance(t, w, math.MaxInt64), `0,10,"a",2,3`)
	if w.LateRows() != 1 {
		t.Errorf("late %d", w.LateRows())
	}
}

func TestWindowAggCumulate(t *testing.T) {
	w := wsAgg(t, kwindow.Spec{Kind: kwindow.Cumulate, Step: 2, Size: 6}, nil)
	wsAdd(t, w, nil, nil, wsRow{int64(-1), "a", 1.0}, wsRow{int64(3), "a", 2.0}, wsRow{int64(5), "b", 4.0})
	// -1 is only in [-6,0) (the ends -4 and -2 are <= -1); 3 is in
	// [0,4) and [0,6); 5 only in [0,6).
	wsExpect(t, wsAdvance(t, w, math.MaxInt64),
		`-6,0,"a",1,1`, `0,4,"a",1,2`, `0,6,"a",1,2`, `0,6,"b",1,4`)
}

func TestWindowAggRowWatermark(t *testing.T) {
	// Row 0's partition is at 20, so it is late for [10,20); row 1's
	// partition is at 5, so the same window takes it.
	w := wsAgg(t, kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, nil)
	wsAdd(t, w, nil, []int64{20, 5}, wsRow{int64(15), "a", 1.0}, wsRow{int64(15), "a", 2.0})
	wsExpect(t, wsAdvance(t, w, 20), `10,20,"a",1,2`)
	if w.LateRows() != 1 {
		t.Errorf("late %d", w.LateRows())
	}
	// Watermarks never go back: a smaller one is ignored.
	if recs, _ := w.Advance(3); recs != nil || w.Watermark() != 20 {
		t.Errorf("Advance(3) after 20: %v, watermark %d", recs, w.Watermark())
	}
	wsAdd(t, w, nil, nil, wsRow{int64(19), "a", 1.0})
	if w.LateRows() != 2 || w.Groups() != 0 {
		t.Errorf("late %d groups %d", w.LateRows(), w.Groups())
	}
}

func TestWindowAggSessionBridge(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w := wsAgg(t, kwindow.Spec{Kind: kwindow.Session, Gap: 10}, mem)
	wsAdd(t, w, mem, nil, wsRow{int64(0), "a", 1.0}, wsRow{int64(30), "a", 2.0}, wsRow{int64(100), "b", 4.0})
	if w.Groups() != 3 {
		t.Fatalf("groups %d", w.Groups())
	}
	wsAdd(t, w, mem, nil, wsRow{int64(20), "a", 8.0}) // [20,30) touches [30,40): one session [20,40)
	if w.Groups() != 3 {
		t.Fatalf("groups %d", w.Groups())
	}
	wsAdd(t, w, mem, nil, wsRow{int64(10), "a", 16.0}) // [10,20) touches [0,10) and [20,40): bridges them
	if w.Groups() != 2 {
		t.Fatalf("groups %d after bridge", w.Groups())
	}
	wsExpect(t, wsAdvance(t, w, 40), `0,40,"a",4,27`)
	// The fired session is gone: a row touching it opens a new one.
	wsAdd(t, w, mem, nil, wsRow{int64(35), "a", 32.0})
	wsAdd(t, w, mem, nil, wsRow{int64(29), "a", 64.0}) // late: 29+10 <= 40
	wsExpect(t, wsAdvance(t, w, math.MaxInt64), `35,45,"a",1,32`, `100,110,"b",1,4`)
	if w.LateRows() != 1 || w.Groups() != 0 {
		t.Errorf("late %d groups %d", w.LateRows(), w.Groups())
	}
}

func TestWindowAggFloatSumOrder(t *testing.T) {
	// Compensated sums give the same answer whatever the row order.
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 5000)
	for i := range vals {
		vals[i] = (rng.Float64() - 0.3) * math.Pow(10, float64(rng.IntN(16)-4))
	}
	var first []string
	for trial := range 8 {
		rows := make([]wsRow, len(vals))
		for i, v := range vals {
			rows[i] = wsRow{int64(i % 7), "k", v}
		}
		if trial > 0 {
			rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		}
		w, err := New(Config{Input: wsSchema, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 100},
			Aggs: []agg.Spec{{Func: agg.Sum, Arg: 2}, {Func: agg.Avg, Arg: 2}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for lo := 0; lo < len(rows); lo += 333 {
			wsAdd(t, w, nil, nil, rows[lo:min(lo+333, len(rows))]...)
		}
		got := wsAdvance(t, w, math.MaxInt64)
		if trial == 0 {
			first = got
		} else if !slices.Equal(got, first) {
			t.Fatalf("order %d: %v, want %v", trial, got, first)
		}
	}
}

func TestWindowAggNaNAndNullKeys(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	w, err := New(Config{Input: schema, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, Keys: []int{1},
		Aggs: []agg.Spec{{Func: agg.CountStar, Arg: -1}, {Func: agg.Min, Arg: 1}, {Func: agg.Max, Arg: 1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for _, f := range []any{math.NaN(), 0.0, math.Copysign(0, -1), nil, math.Float64frombits(0x7ff8000000000123), nil, 1.0} {
		b.Field(0).(*array.Int64Builder).Append(1)
		optest.Append(b.Field(1), f)
	}
	batch := vector.New(b.NewRecordBatch())
	b.Release()
	if err := w.Add(batch); err != nil {
		t.Fatal(err)
	}
	batch.Release()
	wsExpect(t, wsAdvance(t, w, 10), "0,10,NaN,2,NaN,NaN", "0,10,0,2,0,0", "0,10,null,2,null,null", "0,10,1,1,1,1")
}

func TestWindowAggMinMaxNaN(t *testing.T) {
	// NaN sorts above every number: MIN ignores it unless all are NaN.
	w, err := New(Config{Input: wsSchema, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, Keys: []int{1},
		Aggs: []agg.Spec{{Func: agg.Min, Arg: 2}, {Func: agg.Max, Arg: 2}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wsAdd(t, w, nil, nil, wsRow{int64(1), "a", math.NaN()}, wsRow{int64(1), "a", 3.0}, wsRow{int64(1), "a", -1.0},
		wsRow{int64(1), "b", math.NaN()}, wsRow{int64(1), "c", 2.0}, wsRow{int64(1), "c", math.NaN()})
	wsExpect(t, wsAdvance(t, w, 10), `0,10,"a",-1,NaN`, `0,10,"b",NaN,NaN`, `0,10,"c",2,NaN`)
}

func TestWindowAggAddNoAllocs(t *testing.T) {
	for _, str := range []bool{false, true} {
		d := wbGenerate(1000, str, false)
		w, err := New(wbConfig(d), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range d.batches[:3] {
			if err := w.Add(vector.New(rec)); err != nil {
				t.Fatal(err)
			}
		}
		b := &vector.Batch{Rec: d.batches[3]}
		if n := testing.AllocsPerRun(20, func() {
			if err := w.Add(b); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("str=%v: Add allocates %.1f times per batch in steady state", str, n)
		}
	}
}
