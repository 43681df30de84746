package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// The benchmark query:
//
//	SELECT window_start, window_end, k, COUNT(*), SUM(v), MIN(v), MAX(v), AVG(v)
//	FROM TUMBLE(t, ts, 10s) GROUP BY window_start, window_end, k
//
// over batches of 8192 rows with the watermark advanced after each batch.
// Event time grows by 1 ms every 16 rows, so a window holds 160k rows (20
// batches) and each of 10k keys sees ~16 rows per window.
const (
	wbBatchRows = 8192
	wbBatches   = 96
	wbWindow    = 10_000
)

type wbData struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	sels    [][]int32 // nil: dense
	wms     []int64   // watermark after each batch
	live    int       // live rows over all batches
}

func wbGenerate(keys int, str, sel bool) *wbData {
	rng := rand.New(rand.NewPCG(uint64(keys), 42))
	kt := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if str {
		kt = arrow.BinaryTypes.String
	}
	d := &wbData{schema: arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: kt},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)}
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("sensor-%06d", i)
	}
	mem := memory.NewGoAllocator()
	row := 0
	for range wbBatches {
		tb := array.NewInt64Builder(mem)
		vb := array.NewFloat64Builder(mem)
		var kb array.Builder
		if str {
			kb = array.NewStringBuilder(mem)
		} else {
			kb = array.NewInt64Builder(mem)
		}
		var selv []int32
		for i := range wbBatchRows {
			tb.Append(int64(row / 16))
			row++
			k := rng.IntN(keys)
			if str {
				kb.(*array.StringBuilder).Append(names[k])
			} else {
				kb.(*array.Int64Builder).Append(int64(k))
			}
			vb.Append(rng.Float64()*1000 - 100)
			if sel && rng.IntN(2) == 0 {
				selv = append(selv, int32(i))
			}
		}
		cols := []arrow.Array{tb.NewArray(), kb.NewArray(), vb.NewArray()}
		d.batches = append(d.batches, array.NewRecordBatch(d.schema, cols, wbBatchRows))
		for _, c := range cols {
			c.Release()
		}
		tb.Release()
		kb.Release()
		vb.Release()
		if sel {
			d.sels = append(d.sels, selv)
			d.live += len(selv)
		} else {
			d.sels = append(d.sels, nil)
			d.live += wbBatchRows
		}
		d.wms = append(d.wms, int64(row/16)-1)
	}
	return d
}

func wbConfig(d *wbData) Config {
	return Config{
		Input:   d.schema,
		Window:  kwindow.Spec{Kind: kwindow.Tumble, Size: wbWindow},
		TimeCol: 0,
		Keys:    []int{1},
		Aggs: []agg.Spec{
			{Func: agg.CountStar, Arg: -1, Name: "cnt"},
			{Func: agg.Sum, Arg: 2, Name: "sum_v"},
			{Func: agg.Min, Arg: 2, Name: "min_v"},
			{Func: agg.Max, Arg: 2, Name: "max_v"},
			{Func: agg.Avg, Arg: 2, Name: "avg_v"},
		},
	}
}

// wbRunner processes one pass over the data set (all batches, then the
// final flush) and returns the output rows.
type wbRunner func(d *wbData) int

func wbKernel(d *wbData) int {
	w, err := New(wbConfig(d), memory.DefaultAllocator)
	if err != nil {
		panic(err)
	}
	out := 0
	emit := func(recs []arrow.RecordBatch, err error) {
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			out += int(r.NumRows())
			r.Release()
		}
	}
	for i, rec := range d.batches {
		if err := w.Add(&vector.Batch{Rec: rec, Sel: d.sels[i]}); err != nil {
			panic(err)
		}
		emit(w.Advance(d.wms[i]))
	}
	emit(w.Advance(math.MaxInt64))
	return out
}

func wbBench(b *testing.B, d *wbData, run wbRunner) {
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), optest.CPUTime()
	rows := 0
	for b.Loop() {
		run(d)
		rows += d.live
	}
	b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
	// CPU time (all threads, GC included) is steadier than wall time on a
	// shared machine.
	b.ReportMetric(float64(rows)/(optest.CPUTime()-cpu0).Seconds(), "rows/cpu-s")
}

func BenchmarkWindowAgg(b *testing.B) {
	cases := []struct {
		name     string
		keys     int
		str, sel bool
		hlName   string
	}{
		{name: "keys=10k", keys: 10_000, hlName: "handloop"},
		{name: "keys=10k,sel=true", keys: 10_000, sel: true, hlName: "handloop,sel=true"},
		{name: "keys=8", keys: 8, hlName: "handloop,keys=8"},
		{name: "keys=10k,str", keys: 10_000, str: true, hlName: "handloop,str"},
	}
	for _, c := range cases {
		d := wbGenerate(c.keys, c.str, c.sel)
		hand := wbHandLoopInt
		if c.str {
			hand = wbHandLoopStr
		}
		b.Run(c.name, func(b *testing.B) { wbBench(b, d, wbKernel) })
		b.Run(c.hlName, func(b *testing.B) { wbBench(b, d, hand) })
	}
}

// TestWindowAggBenchQuery checks that the kernel and the hand loops agree on
// the benchmark query, so the benchmark compares equal work.
func TestWindowAggBenchQuery(t *testing.T) {
	for _, c := range []struct {
		keys     int
		str, sel bool
	}{{10_000, false, false}, {50, false, true}, {300, true, true}} {
		d := wbGenerate(c.keys, c.str, c.sel)
		d.batches, d.sels, d.wms = d.batches[:30], d.sels[:30], d.wms[:30]
		w, err := New(wbConfig(d), memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, rec := range d.batches {
			if err := w.Add(&vector.Batch{Rec: rec, Sel: d.sels[i]}); err != nil {
				t.Fatal(err)
			}
			recs, _ := w.Advance(d.wms[i])
			got = append(got, wtLines(t, recs)...)
			for _, r := range recs {
				r.Release()
			}
		}
		recs, _ := w.Advance(math.MaxInt64)
		got = append(got, wtLines(t, recs)...)
		for _, r := range recs {
			r.Release()
		}
		var want []string
		h := wbHandLoopInt
		if c.str {
			h = wbHandLoopStr
		}
		wbCollect = func(recs []arrow.RecordBatch) { want = append(want, wtLines(t, recs)...) }
		h(d)
		wbCollect = nil
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("kernel %d rows, hand loop %d", len(got), len(want))
		}
		for i := range got {
			// The hand loop sums plainly; compare the columns it computes
			// exactly and the sums to a relative tolerance.
			g, w := strings.Split(got[i], ","), strings.Split(want[i], ",")
			if !slices.Equal(g[:4], w[:4]) || g[5] != w[5] || g[6] != w[6] {
				t.Fatalf("row %d: kernel %s, hand loop %s", i, got[i], want[i])
			}
			for _, c := range []int{4, 7} {
				gv, _ := strconv.ParseFloat(g[c], 64)
				wv, _ := strconv.ParseFloat(w[c], 64)
				if math.Abs(gv-wv) > 1e-9*math.Abs(wv) {
					t.Fatalf("row %d column %d: kernel %s, hand loop %s", i, c, got[i], want[i])
				}
			}
		}
	}
}

// wbCollect, when set, receives the hand loops' output (for the test).
var wbCollect func([]arrow.RecordBatch)

// ---- the hand-written baselines ----
//
// What a good engineer would write for exactly this query without the
// engine: a Go map from (window start, key) to an index into a slice of
// accumulator structs, the indexes of each window kept in first-appearance
// order to fire it, freed indexes reused. Plain float sums (no
// compensation), which makes the baseline a little faster than the
// kernel's contract allows.

type wbAcc struct {
	cnt, n   int64
	sum      float64
	min, max float64
	start    int64
	key      int64
	skey     string
}

type wbWin struct {
	start int64
	idx   []int32
}

type wbHand struct {
	accs    []wbAcc
	free    []int32
	windows []wbWin // ascending start
	wm      int64
	late    int
}

func (h *wbHand) newAcc(start int64) int32 {
	var i int32
	if n := len(h.free); n > 0 {
		i = h.free[n-1]
		h.free = h.free[:n-1]
		h.accs[i] = wbAcc{}
	} else {
		i = int32(len(h.accs))
		h.accs = append(h.accs, wbAcc{})
	}
	h.accs[i].start = start
	w := len(h.windows) - 1
	for w >= 0 && h.windows[w].start != start {
		w--
	}
	if w < 0 {
		h.windows = append(h.windows, wbWin{start: start})
		slices.SortFunc(h.windows, func(a, b wbWin) int { return int(a.start - b.start) })
		for w = range h.windows {
			if h.windows[w].start == start {
				break
			}
		}
	}
	h.windows[w].idx = append(h.windows[w].idx, i)
	return i
}

func (h *wbHand) update(i int32, v float64) {
	a := &h.accs[i]
	a.cnt++
	if a.n == 0 {
		a.min, a.max = v, v
	} else {
		a.min = min(a.min, v)
		a.max = max(a.max, v)
	}
	a.sum += v
	a.n++
}

// fire emits every window with end <= wm; forget deletes a fired index
// from the caller's map.
func (h *wbHand) fire(wm int64, schema *arrow.Schema, str bool, forget func(a *wbAcc)) int {
	out := 0
	for len(h.windows) > 0 && h.windows[0].start+wbWindow <= wm {
		win := h.windows[0]
		h.windows = h.windows[1:]
		mem := memory.DefaultAllocator
		sb, eb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
		var kb array.Builder
		if str {
			kb = array.NewStringBuilder(mem)
		} else {
			kb = array.NewInt64Builder(mem)
		}
		cb, sumb := array.NewInt64Builder(mem), array.NewFloat64Builder(mem)
		minb, maxb, avgb := array.NewFloat64Builder(mem), array.NewFloat64Builder(mem), array.NewFloat64Builder(mem)
		for _, i := range win.idx {
			a := &h.accs[i]
			sb.Append(win.start)
			eb.Append(win.start + wbWindow)
			if str {
				kb.(*array.StringBuilder).Append(a.skey)
			} else {
				kb.(*array.Int64Builder).Append(a.key)
			}
			cb.Append(a.cnt)
			sumb.Append(a.sum)
			minb.Append(a.min)
			maxb.Append(a.max)
			avgb.Append(a.sum / float64(a.n))
			forget(a)
			h.free = append(h.free, i)
		}
		bs := []array.Builder{sb, eb, kb, cb, sumb, minb, maxb, avgb}
		cols := make([]arrow.Array, len(bs))
		for j, bld := range bs {
			cols[j] = bld.NewArray()
			bld.Release()
		}
		rec := array.NewRecordBatch(schema, cols, int64(len(win.idx)))
		for _, c := range cols {
			c.Release()
		}
		out += len(win.idx)
		if wbCollect != nil {
			wbCollect([]arrow.RecordBatch{rec})
		}
		rec.Release()
	}
	return out
}

var wbOutSchema = func(kt arrow.DataType) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "window_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "window_end", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: kt},
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
		{Name: "sum_v", Type: arrow.PrimitiveTypes.Float64},
		{Name: "min_v", Type: arrow.PrimitiveTypes.Float64},
		{Name: "max_v", Type: arrow.PrimitiveTypes.Float64},
		{Name: "avg_v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
}

func wbFloor(ts, size int64) int64 {
	q := ts / size
	if ts%size < 0 {
		q--
	}
	return q * size
}

func wbHandLoopInt(d *wbData) int {
	type gk struct{ start, key int64 }
	groups := map[gk]int32{}
	h := &wbHand{wm: math.MinInt64}
	schema := wbOutSchema(arrow.PrimitiveTypes.Int64)
	forget := func(a *wbAcc) { delete(groups, gk{a.start, a.key}) }
	out := 0
	for bi, rec := range d.batches {
		ts := rec.Column(0).(*array.Int64).Int64Values()
		ks := rec.Column(1).(*array.Int64).Int64Values()
		vs := rec.Column(2).(*array.Float64).Float64Values()
		sel := d.sels[bi]
		n := len(ts)
		if sel != nil {
			n = len(sel)
		}
		for j := 0; j < n; j++ {
			r := j
			if sel != nil {
				r = int(sel[j])
			}
			start := wbFloor(ts[r], wbWindow)
			if start+wbWindow <= h.wm {
				h.late++
				continue
			}
			g := gk{start, ks[r]}
			i, ok := groups[g]
			if !ok {
				i = h.newAcc(start)
				h.accs[i].key = ks[r]
				groups[g] = i
			}
			h.update(i, vs[r])
		}
		h.wm = d.wms[bi]
		out += h.fire(h.wm, schema, false, forget)
	}
	return out + h.fire(math.MaxInt64, schema, false, forget)
}

func wbHandLoopStr(d *wbData) int {
	type gk struct {
		start int64
		key   string
	}
	groups := map[gk]int32{}
	h := &wbHand{wm: math.MinInt64}
	schema := wbOutSchema(arrow.BinaryTypes.String)
	forget := func(a *wbAcc) { delete(groups, gk{a.start, a.skey}) }
	out := 0
	for bi, rec := range d.batches {
		ts := rec.Column(0).(*array.Int64).Int64Values()
		ks := rec.Column(1).(*array.String)
		vs := rec.Column(2).(*array.Float64).Float64Values()
		sel := d.sels[bi]
		n := len(ts)
		if sel != nil {
			n = len(sel)
		}
		for j := 0; j < n; j++ {
			r := j
			if sel != nil {
				r = int(sel[j])
			}
			start := wbFloor(ts[r], wbWindow)
			if start+wbWindow <= h.wm {
				h.late++
				continue
			}
			g := gk{start, ks.Value(r)} // aliases the Arrow buffer: lookup only
			i, ok := groups[g]
			if !ok {
				i = h.newAcc(start)
				g.key = strings.Clone(g.key)
				h.accs[i].skey = g.key
				groups[g] = i
			}
			h.update(i, vs[r])
		}
		h.wm = d.wms[bi]
		out += h.fire(h.wm, schema, true, forget)
	}
	return out + h.fire(math.MaxInt64, schema, true, forget)
}
