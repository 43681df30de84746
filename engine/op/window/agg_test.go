package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// ---- the row-at-a-time reference ----

type wtRefGroup struct {
	start, end int64
	key        []any
	seq        int
	aggs       []wtRefAcc
	fired      bool // emitted; kept for allowed lateness
}

type wtRefAcc struct {
	n    int64
	sumI int64
	sumF float64
	mn   any
	mx   any
}

func wtCanonKey(v any) any {
	if f, ok := v.(float32); ok {
		if f != f {
			return float32(math.NaN())
		}
		if f == 0 {
			return float32(0)
		}
	}
	return v
}

func wtKeyString(key []any) string {
	var sb strings.Builder
	for _, v := range key {
		if f, ok := v.(float32); ok && f != f {
			sb.WriteString("NaN|")
			continue
		}
		fmt.Fprintf(&sb, "%T:%v|", v, v)
	}
	return sb.String()
}

func wtLess(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y := b.(float64)
		return x < y
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	case string:
		return x < b.(string)
	case bool:
		return !x && b.(bool)
	}
	panic(fmt.Sprintf("wtLess %T", a))
}

func (a *wtRefAcc) add(spec agg.Spec, row *optest.Row) {
	if spec.Func == agg.CountStar {
		a.n++
		return
	}
	v := row.Vals[spec.Arg]
	if v == nil {
		return
	}
	a.n++
	switch x := v.(type) {
	case float64:
		a.sumF += x
	case int32:
		a.sumI += int64(x)
	}
	if a.mn == nil || wtLess(v, a.mn) {
		a.mn = v
	}
	if a.mx == nil || wtLess(a.mx, v) {
		a.mx = v
	}
}

func (a *wtRefAcc) merge(b *wtRefAcc) {
	if b.n == 0 {
		return
	}
	a.n += b.n
	a.sumI += b.sumI
	a.sumF += b.sumF
	if a.mn == nil || (b.mn != nil && wtLess(b.mn, a.mn)) {
		a.mn = b.mn
	}
	if a.mx == nil || (b.mx != nil && wtLess(a.mx, b.mx)) {
		a.mx = b.mx
	}
}

func wtFmtVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return optest.FmtFloat(x, 64)
	case float32:
		return optest.FmtFloat(float64(x), 32)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

func (a *wtRefAcc) out(spec agg.Spec, argSigned bool) string {
	switch spec.Func {
	case agg.CountStar, agg.Count:
		return strconv.FormatInt(a.n, 10)
	}
	if a.n == 0 {
		return "null"
	}
	switch spec.Func {
	case agg.Sum:
		if argSigned {
			return strconv.FormatInt(a.sumI, 10)
		}
		return optest.FmtFloat(a.sumF, 64)
	case agg.Avg:
		if argSigned {
			return optest.FmtFloat(float64(a.sumI)/float64(a.n), 64)
		}
		return optest.FmtFloat(a.sumF/float64(a.n), 64)
	case agg.Min:
		return wtFmtVal(a.mn)
	}
	return wtFmtVal(a.mx)
}

func (g *wtRefGroup) line(cfg Config) string {
	parts := []string{strconv.FormatInt(g.start, 10), strconv.FormatInt(g.end, 10)}
	for _, k := range g.key {
		parts = append(parts, wtFmtVal(k))
	}
	for i, a := range cfg.Aggs {
		parts = append(parts, g.aggs[i].out(a, a.Arg == optest.VI32))
	}
	return strings.Join(parts, ",")
}

// wtRefWindows lists the [start, end) windows of ts, computed plainly.
func wtRefWindows(s kwindow.Spec, ts int64) [][2]int64 {
	var out [][2]int64
	switch s.Kind {
	case kwindow.Tumble:
		st := optest.FloorDiv(ts-s.Offset, s.Size)*s.Size + s.Offset
		out = append(out, [2]int64{st, st + s.Size})
	case kwindow.Hop:
		for k := optest.FloorDiv(ts-s.Size-s.Offset, s.Slide); k <= optest.FloorDiv(ts-s.Offset, s.Slide); k++ {
			st := k*s.Slide + s.Offset
			if st <= ts && ts < st+s.Size {
				out = append(out, [2]int64{st, st + s.Size})
			}
		}
	case kwindow.Cumulate:
		base := optest.FloorDiv(ts-s.Offset, s.Size)*s.Size + s.Offset
		for j := int64(1); j*s.Step <= s.Size; j++ {
			if base+j*s.Step > ts {
				out = append(out, [2]int64{base, base + j*s.Step})
			}
		}
	}
	return out
}

// wtLessLateness is lim - l, saturating, and +inf stays +inf.
func wtLessLateness(lim, l int64) int64 {
	switch {
	case l == 0 || lim == math.MaxInt64:
		return lim
	case lim < math.MinInt64+l:
		return math.MinInt64
	}
	return lim - l
}

// wtReference runs c one row at a time and returns the changelog: "+I "
// lines for firings, and with allowed lateness the changes rows make to
// fired windows, one row at a time (docs/semantics.md, "Allowed
// lateness").
func wtReference(c optest.Case) (lines []string, late, nullTime int64) {
	cfg := c.Cfg
	L := cfg.AllowedLateness
	wm := int64(math.MinInt64)
	seq := 0
	groups := map[string]*wtRefGroup{}
	sessions := map[string][]*wtRefGroup{}
	newGroup := func(start, end int64, key []any) *wtRefGroup {
		seq++
		return &wtRefGroup{start: start, end: end, key: key, seq: seq, aggs: make([]wtRefAcc, len(cfg.Aggs))}
	}
	emit := func(kind string, g *wtRefGroup) { lines = append(lines, kind+" "+g.line(cfg)) }
	for _, ev := range c.Events {
		if ev.Advance {
			if ev.WM <= wm {
				continue
			}
			wm = ev.WM
			freeBy := wtLessLateness(wm, L)
			var fired []*wtRefGroup
			for id, g := range groups {
				if g.end <= wm && !g.fired {
					g.fired = true
					fired = append(fired, g)
				}
				if g.end <= freeBy {
					delete(groups, id)
				}
			}
			for ks, list := range sessions {
				keep := list[:0]
				for _, g := range list {
					if g.end <= wm && !g.fired {
						g.fired = true
						fired = append(fired, g)
					}
					if g.end > freeBy {
						keep = append(keep, g)
					}
				}
				sessions[ks] = keep
			}
			sort.Slice(fired, func(i, j int) bool {
				a, b := fired[i], fired[j]
				if a.end != b.end {
					return a.end < b.end
				}
				if a.start != b.start {
					return a.start < b.start
				}
				return a.seq < b.seq
			})
			for _, g := range fired {
				emit("+I", g)
			}
			continue
		}
		row := ev.Row
		if row.Vals[optest.TS] == nil {
			nullTime++
			continue
		}
		ts := row.Vals[optest.TS].(int64)
		lim := wm
		if c.UseRowWM && row.RowWM > lim {
			lim = row.RowWM
		}
		lim = wtLessLateness(lim, L)
		key := make([]any, len(cfg.Keys))
		for i, k := range cfg.Keys {
			key[i] = wtCanonKey(row.Vals[k])
		}
		ks := wtKeyString(key)
		if cfg.Window.Kind == kwindow.Session {
			if ts+cfg.Window.Gap <= lim {
				late++
				continue
			}
			lo, hi := ts, ts+cfg.Window.Gap
			// The fired sessions the row joins are retracted: -U if the
			// result keeps their bounds and is due, else -D.
			var touched, olds []*wtRefGroup
			rs, re := lo, hi
			for _, g := range sessions[ks] {
				// A session that ends at or before lim is closed for the
				// row (the watermark would have freed it before the row).
				if lo <= g.end && hi >= g.start && g.end > lim {
					touched = append(touched, g)
					rs, re = min(rs, g.start), max(re, g.end)
					if g.fired {
						olds = append(olds, g)
					}
				}
			}
			due := re <= wm
			same := false
			sort.Slice(olds, func(i, j int) bool { return olds[i].end < olds[j].end })
			for _, g := range olds {
				if due && g.start == rs && g.end == re {
					same = true
					emit("-U", g)
				} else {
					emit("-D", g)
				}
			}
			var into *wtRefGroup
			keep := sessions[ks][:0]
			for _, g := range sessions[ks] {
				if !slices.Contains(touched, g) {
					keep = append(keep, g)
					continue
				}
				if into == nil {
					into = g
					keep = append(keep, g)
					continue
				}
				into.seq = min(into.seq, g.seq)
				for i := range into.aggs {
					into.aggs[i].merge(&g.aggs[i])
				}
			}
			if into == nil {
				into = newGroup(lo, hi, key)
				keep = append(keep, into)
			}
			into.start, into.end = rs, re
			sessions[ks] = keep
			for i, a := range cfg.Aggs {
				into.aggs[i].add(a, row)
			}
			into.fired = due
			if due {
				if same {
					emit("+U", into)
				} else {
					emit("+I", into)
				}
			}
			continue
		}
		isLate := false
		for _, win := range wtRefWindows(cfg.Window, ts) {
			if win[1] <= lim {
				isLate = true
				continue
			}
			id := fmt.Sprintf("%d/%d/%s", win[0], win[1], ks)
			g := groups[id]
			fired := win[1] <= wm
			if g == nil {
				g = newGroup(win[0], win[1], key)
				groups[id] = g
			} else if fired {
				emit("-U", g)
			}
			for i, a := range cfg.Aggs {
				g.aggs[i].add(a, row)
			}
			if fired {
				if g.fired {
					emit("+U", g)
				} else {
					g.fired = true
					emit("+I", g)
				}
			}
		}
		if isLate {
			late++
		}
	}
	return lines, late, nullTime
}

// wtCheckChangelog applies a changelog twice: as a multiset (a retraction
// must remove an equal row) and as an upsert sink keyed by (window_start,
// window_end, keys) would (+I/+U put, -D deletes by key, -U is dropped).
// Both must give the same final table.
func wtCheckChangelog(t *testing.T, lines []string, nkeys int) {
	t.Helper()
	bag := map[string]int{}
	upsert := map[string]string{}
	for i, l := range lines {
		kind, row, _ := strings.Cut(l, " ")
		f := strings.SplitN(row, ",", 3+nkeys)
		pk := strings.Join(f[:min(len(f), 2+nkeys)], ",")
		switch kind {
		case "+I", "+U":
			bag[row]++
			if kind == "+I" && upsert[pk] != "" {
				t.Fatalf("changelog line %d: %s inserts a row whose key holds %s", i, l, upsert[pk])
			}
			upsert[pk] = row
		case "-U", "-D":
			if bag[row] == 0 {
				t.Fatalf("changelog line %d: %s retracts a row not in the table", i, l)
			}
			bag[row]--
			if kind == "-D" {
				delete(upsert, pk)
			}
		default:
			t.Fatalf("changelog line %d: %q has no kind", i, l)
		}
	}
	for row, n := range bag {
		if n > 1 {
			t.Fatalf("changelog leaves %d copies of %s", n, row)
		}
		if n == 1 {
			f := strings.SplitN(row, ",", 3+nkeys)
			if pk := strings.Join(f[:min(len(f), 2+nkeys)], ","); upsert[pk] != row {
				t.Fatalf("upsert table holds %q for %s, the changelog %q", upsert[pk], pk, row)
			}
		}
	}
	for pk, row := range upsert {
		if bag[row] != 1 {
			t.Fatalf("upsert table holds %s for %s, the changelog does not", row, pk)
		}
	}
}

func wtLines(t testing.TB, recs []arrow.RecordBatch) []string {
	var out []string
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			parts := make([]string, rec.NumCols())
			for c := range parts {
				parts[c] = optest.Cell(t, rec.Column(c), i)
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	return out
}

// wtKindLines is wtLines with each row's kind in front (kinds nil: +I).
func wtKindLines(t testing.TB, recs []arrow.RecordBatch, kinds [][]vector.RowKind) []string {
	var out []string
	for i, rec := range recs {
		for j, l := range wtLines(t, []arrow.RecordBatch{rec}) {
			k := vector.Insert
			if kinds != nil {
				k = kinds[i][j]
			}
			out = append(out, k.String()+" "+l)
		}
	}
	return out
}

func wtCheckRecords(t testing.TB, c optest.Case, w *Agg, recs []arrow.RecordBatch) {
	t.Helper()
	for _, r := range recs {
		if !r.Schema().Equal(w.OutputSchema()) {
			t.Fatalf("record schema %s != output schema %s", r.Schema(), w.OutputSchema())
		}
		if max := c.Cfg.MaxOutputRows; max > 0 && r.NumRows() > int64(max) {
			t.Fatalf("record of %d rows > MaxOutputRows %d", r.NumRows(), max)
		}
	}
}

// wtTakeUpdates takes, checks and releases the changelog of the last Adds.
func wtTakeUpdates(t testing.TB, c optest.Case, w *Agg) []string {
	t.Helper()
	recs, kinds := w.TakeUpdates()
	if c.Cfg.AllowedLateness == 0 && len(recs) > 0 {
		t.Fatalf("%d update records without allowed lateness", len(recs))
	}
	if len(kinds) != len(recs) {
		t.Fatalf("%d kinds for %d update records", len(kinds), len(recs))
	}
	wtCheckRecords(t, c, w, recs)
	for i, r := range recs {
		if len(kinds[i]) != int(r.NumRows()) {
			t.Fatalf("%d kinds for %d rows", len(kinds[i]), r.NumRows())
		}
	}
	lines := wtKindLines(t, recs, kinds)
	for _, r := range recs {
		r.Release()
	}
	return lines
}

// wtRun replays c through a Agg, cutting the rows between watermark
// advances into batches of nextSize() rows. mem is the kernel's allocator.
func wtRun(t *testing.T, c optest.Case, mem memory.Allocator, rng *rand.Rand, nextSize func() int, sel bool) optest.Result {
	t.Helper()
	in := &optest.CountingAlloc{Mem: memory.NewGoAllocator()}
	defer func() {
		if in.Size != 0 {
			t.Errorf("input batches: %d bytes not released", in.Size)
		}
	}()
	w, err := New(c.Cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.WeakHash {
		w.tbl.TestMask = 0xc000000000000003
	}
	var res optest.Result
	var pending []*optest.Row
	flush := func() {
		for len(pending) > 0 {
			n := min(nextSize(), len(pending))
			b := optest.Batch(in, c.Cfg.Input, pending[:n], rng, sel)
			if !c.UseRowWM {
				b.RowWatermark = nil
			}
			if err := w.Add(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
			pending = pending[n:]
			res.Lines = append(res.Lines, wtTakeUpdates(t, c, w)...)
		}
	}
	for _, ev := range c.Events {
		if !ev.Advance {
			pending = append(pending, ev.Row)
			continue
		}
		flush()
		recs, err := w.Advance(ev.WM)
		if err != nil {
			t.Fatal(err)
		}
		wtCheckRecords(t, c, w, recs)
		res.Lines = append(res.Lines, wtKindLines(t, recs, nil)...)
		for _, r := range recs {
			r.Release()
		}
	}
	if g := w.Groups(); g != 0 {
		t.Fatalf("%d groups left after the final flush", g)
	}
	res.Late, res.NullTime = w.LateRows(), w.NullTimeRows()
	return res
}

func TestWindowAggRandom(t *testing.T) {
	seeds := 60
	if testing.Short() || optest.RaceEnabled {
		seeds = 15
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed)
		t.Run(c.Name, func(t *testing.T) { wtRunBatchSizes(t, c, seed) })
	}
}

// wtRunBatchSizes replays c at batch sizes 1, 7, 1024 and random, with and
// without selection vectors, and compares each run with the reference.
func wtRunBatchSizes(t *testing.T, c optest.Case, seed uint64) {
	lines, late, nullTime := wtReference(c)
	wtCheckChangelog(t, lines, len(c.Cfg.Keys))
	want := optest.Result{Lines: lines, Late: late, NullTime: nullTime}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, bs := range []int{1, 7, 1024, -1} {
		size := func() int { return bs }
		if bs < 0 {
			size = func() int { return 1 + rng.IntN(60) }
		}
		for _, sel := range []bool{false, true} {
			got := wtRun(t, c, mem, rng, size, sel)
			optest.Compare(t, fmt.Sprintf("batch=%d sel=%v", bs, sel), got, want)
			mem.AssertSize(t, 0)
		}
	}
}

// A random case's configuration is a window aggregate's.
var _ Config = optest.Config{}
