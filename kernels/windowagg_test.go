package kernels

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
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Columns of the random test input.
const (
	wtTS = iota
	wtKI64
	wtKStr
	wtKF32
	wtKBool
	wtVF64
	wtVI32
	wtVStr
	wtVBool
	wtVTS
	wtKI8
	wtNumCols
)

func wtSchema(tsTimestamp bool) *arrow.Schema {
	tsType := arrow.DataType(arrow.PrimitiveTypes.Int64)
	if tsTimestamp {
		tsType = arrow.FixedWidthTypes.Timestamp_ms
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: tsType, Nullable: true},
		{Name: "k_i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k_str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k_f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "k_bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "v_f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "v_i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "v_str", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "v_bool", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "v_ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "k_i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	}, nil)
}

// wtRow is one input row: typed values (nil = NULL) and the watermark its
// partition had before it.
type wtRow struct {
	vals  [wtNumCols]any
	rowWM int64
}

// wtEvent is a row or a watermark advance.
type wtEvent struct {
	row     *wtRow
	advance bool
	wm      int64
}

type wtCase struct {
	name     string
	cfg      WindowAggConfig
	events   []wtEvent
	useRowWM bool
	weakHash bool
}

func wtNull(rng *rand.Rand, p float64, v any) any {
	if rng.Float64() < p {
		return nil
	}
	return v
}

var wtStrs = []string{"", "a", "b", "ab", "key-with-a-longer-name-0001", "key-with-a-longer-name-0002", "ü€", "zz"}
var wtF32s = []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), 1.5, -2, float32(math.Inf(1))}

func wtRandomRow(rng *rand.Rand, ts int64, nkeys int, keyNull float64) [wtNumCols]any {
	var v [wtNumCols]any
	v[wtTS] = wtNull(rng, 0.02, ts)
	v[wtKI64] = wtNull(rng, keyNull, int64(rng.IntN(nkeys)-nkeys/2))
	v[wtKStr] = wtNull(rng, keyNull, wtStrs[rng.IntN(min(nkeys, len(wtStrs)))])
	v[wtKF32] = wtNull(rng, keyNull, wtF32s[rng.IntN(len(wtF32s))])
	v[wtKBool] = wtNull(rng, keyNull, rng.IntN(2) == 0)
	v[wtVF64] = wtNull(rng, 0.15, float64(rng.IntN(2001)-1000)/8)
	v[wtVI32] = wtNull(rng, 0.15, int32(rng.IntN(2_000_000_001)-1_000_000_000))
	s := make([]byte, rng.IntN(6))
	for i := range s {
		s[i] = "abcxyz"[rng.IntN(6)]
	}
	v[wtVStr] = wtNull(rng, 0.15, string(s))
	v[wtVBool] = wtNull(rng, 0.15, rng.IntN(3) == 0)
	v[wtVTS] = wtNull(rng, 0.15, rng.Int64N(1<<40)-(1<<39))
	v[wtKI8] = wtNull(rng, keyNull, int8(rng.IntN(5)-2))
	return v
}

var wtAggChoices = []AggSpec{
	{Func: AggCountStar, Arg: -1, Name: "cnt"},
	{Func: AggCount, Arg: wtVF64, Name: "cnt_f"},
	{Func: AggSum, Arg: wtVF64, Name: "sum_f"},
	{Func: AggAvg, Arg: wtVF64, Name: "avg_f"},
	{Func: AggMin, Arg: wtVF64, Name: "min_f"},
	{Func: AggMax, Arg: wtVF64, Name: "max_f"},
	{Func: AggSum, Arg: wtVI32, Name: "sum_i"},
	{Func: AggAvg, Arg: wtVI32, Name: "avg_i"},
	{Func: AggMin, Arg: wtVI32, Name: "min_i"},
	{Func: AggMax, Arg: wtVI32, Name: "max_i"},
	{Func: AggCount, Arg: wtVStr, Name: "cnt_s"},
	{Func: AggMin, Arg: wtVStr, Name: "min_s"},
	{Func: AggMax, Arg: wtVStr, Name: "max_s"},
	{Func: AggMin, Arg: wtVBool, Name: "min_b"},
	{Func: AggMax, Arg: wtVBool, Name: "max_b"},
	{Func: AggMin, Arg: wtVTS, Name: "min_ts"},
	{Func: AggMax, Arg: wtVTS, Name: "max_ts"},
	{Func: AggCount, Arg: wtKI64, Name: "cnt_k"},
}

func wtRandomSpec(rng *rand.Rand) WindowSpec {
	off := int64(0)
	if rng.IntN(2) == 0 {
		off = rng.Int64N(4001) - 2000
	}
	switch rng.IntN(4) {
	case 0:
		return WindowSpec{Kind: WindowTumble, Size: 1 + rng.Int64N(3000), Offset: off}
	case 1:
		size := 1 + rng.Int64N(3000)
		slide := 1 + rng.Int64N(size)
		if rng.IntN(6) == 0 {
			slide = size + rng.Int64N(500) // gaps between windows
		}
		return WindowSpec{Kind: WindowHop, Size: size, Slide: slide, Offset: off}
	case 2:
		step := 1 + rng.Int64N(800)
		return WindowSpec{Kind: WindowCumulate, Step: step, Size: step * (1 + rng.Int64N(6)), Offset: off}
	}
	return WindowSpec{Kind: WindowSession, Gap: 1 + rng.Int64N(600)}
}

func wtRandomCase(seed uint64) wtCase { return wtRandomCaseOf(seed, false) }

// wtRandomCaseOf is wtRandomCase, with sessionLate a SESSION window with
// allowed lateness.
func wtRandomCaseOf(seed uint64, sessionLate bool) wtCase {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	spec := wtRandomSpec(rng)
	if sessionLate {
		spec = WindowSpec{Kind: WindowSession, Gap: 1 + rng.Int64N(600)}
	}
	if spec.Kind == WindowHop && spec.Size/spec.Slide > 40 {
		spec.Slide = spec.Size / 40
	}
	// On a grid, times land exactly on window bounds and watermarks, which
	// tests the <= of "late if end <= watermark" and touching sessions.
	grid := int64(1)
	if rng.IntN(2) == 0 {
		grid = []int64{10, 100, 250}[rng.IntN(3)]
		up := func(v int64) int64 { return max(grid, v/grid*grid) }
		spec.Size, spec.Slide, spec.Gap = up(spec.Size), up(spec.Slide), up(spec.Gap)
		spec.Offset = spec.Offset / grid * grid
		if spec.Kind == WindowCumulate {
			spec.Step = up(spec.Step)
			spec.Size = spec.Step * (1 + rng.Int64N(6))
		}
	}
	var keys []int
	for _, k := range []int{wtKI64, wtKStr, wtKF32, wtKBool, wtKI8} {
		if rng.IntN(3) == 0 {
			keys = append(keys, k)
		}
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var aggs []AggSpec
	for _, a := range wtAggChoices {
		if rng.IntN(3) == 0 {
			aggs = append(aggs, a)
		}
	}
	if len(aggs) == 0 {
		aggs = append(aggs, wtAggChoices[0])
	}
	var keyNames []string
	if rng.IntN(2) == 0 {
		for i := range keys {
			keyNames = append(keyNames, fmt.Sprintf("key%d", i))
		}
	}
	c := wtCase{
		cfg: WindowAggConfig{
			Input:         wtSchema(rng.IntN(2) == 0),
			Window:        spec,
			TimeCol:       wtTS,
			Keys:          keys,
			KeyNames:      keyNames,
			Aggs:          aggs,
			MaxOutputRows: []int{0, 1, 5, 100}[rng.IntN(4)],
		},
		useRowWM: rng.IntN(4) != 0,
		weakHash: rng.IntN(4) == 0,
	}
	// Allowed lateness draws from its own stream, so the cases without it
	// stay the ones they were.
	if lr := rand.New(rand.NewPCG(seed, 0x1a7e)); sessionLate || lr.IntN(2) == 0 {
		c.cfg.AllowedLateness = max(grid, (1+lr.Int64N(3000))/grid*grid)
	}
	c.name = fmt.Sprintf("seed=%d/%s/keys=%v/aggs=%d/rowwm=%v/weak=%v/lateness=%d", seed, spec.Kind, keys, len(aggs), c.useRowWM, c.weakHash, c.cfg.AllowedLateness)

	// Event time drifts forward from a negative start with jitter, so rows
	// arrive out of order; partitions keep their own watermark (max ts
	// seen - lag) and the operator watermark is their minimum.
	n := 200 + rng.IntN(1800)
	nkeys := 1 + rng.IntN(12)
	parts := 1 + rng.IntN(4)
	rate := rng.Int64N(25)
	jitter := 1 + rng.Int64N(2500)
	lag := rng.Int64N(2*jitter+1) / grid * grid
	t0 := -rng.Int64N(40000)
	partWM := make([]int64, parts)
	for i := range partWM {
		partWM[i] = math.MinInt64
	}
	opWM := int64(math.MinInt64)
	pAdvance := []float64{0.001, 0.02, 0.2}[rng.IntN(3)]
	keyNull := []float64{0, 0.1}[rng.IntN(2)]
	for i := 0; i < n; i++ {
		ts := wtFloorDiv(t0+int64(i)*rate+rng.Int64N(2*jitter)-jitter, grid) * grid
		p := rng.IntN(parts)
		row := &wtRow{vals: wtRandomRow(rng, ts, nkeys, keyNull), rowWM: partWM[p]}
		c.events = append(c.events, wtEvent{row: row})
		if row.vals[wtTS] != nil && ts-lag > partWM[p] {
			partWM[p] = ts - lag
		}
		if rng.Float64() < pAdvance {
			wm := slices.Min(partWM)
			switch rng.IntN(30) {
			case 0, 1, 2:
				wm = opWM - rng.Int64N(100) // ignored: never decreases
			case 3:
				wm += rng.Int64N(5000) / grid * grid // a partition went idle
			}
			c.events = append(c.events, wtEvent{advance: true, wm: wm})
			opWM = max(opWM, wm)
		}
	}
	c.events = append(c.events, wtEvent{advance: true, wm: math.MaxInt64})
	return c
}

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

func (a *wtRefAcc) add(spec AggSpec, row *wtRow) {
	if spec.Func == AggCountStar {
		a.n++
		return
	}
	v := row.vals[spec.Arg]
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

func wtFmtFloat(f float64, bits int) string { return strconv.FormatFloat(f, 'g', -1, bits) }

func wtFmtVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return wtFmtFloat(x, 64)
	case float32:
		return wtFmtFloat(float64(x), 32)
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprint(v)
}

func (a *wtRefAcc) out(spec AggSpec, argSigned bool) string {
	switch spec.Func {
	case AggCountStar, AggCount:
		return strconv.FormatInt(a.n, 10)
	}
	if a.n == 0 {
		return "null"
	}
	switch spec.Func {
	case AggSum:
		if argSigned {
			return strconv.FormatInt(a.sumI, 10)
		}
		return wtFmtFloat(a.sumF, 64)
	case AggAvg:
		if argSigned {
			return wtFmtFloat(float64(a.sumI)/float64(a.n), 64)
		}
		return wtFmtFloat(a.sumF/float64(a.n), 64)
	case AggMin:
		return wtFmtVal(a.mn)
	}
	return wtFmtVal(a.mx)
}

func (g *wtRefGroup) line(cfg WindowAggConfig) string {
	parts := []string{strconv.FormatInt(g.start, 10), strconv.FormatInt(g.end, 10)}
	for _, k := range g.key {
		parts = append(parts, wtFmtVal(k))
	}
	for i, a := range cfg.Aggs {
		parts = append(parts, g.aggs[i].out(a, a.Arg == wtVI32))
	}
	return strings.Join(parts, ",")
}

func wtFloorDiv(a, b int64) int64 { return int64(math.Floor(float64(a) / float64(b))) }

// wtRefWindows lists the [start, end) windows of ts, computed plainly.
func wtRefWindows(s WindowSpec, ts int64) [][2]int64 {
	var out [][2]int64
	switch s.Kind {
	case WindowTumble:
		st := wtFloorDiv(ts-s.Offset, s.Size)*s.Size + s.Offset
		out = append(out, [2]int64{st, st + s.Size})
	case WindowHop:
		for k := wtFloorDiv(ts-s.Size-s.Offset, s.Slide); k <= wtFloorDiv(ts-s.Offset, s.Slide); k++ {
			st := k*s.Slide + s.Offset
			if st <= ts && ts < st+s.Size {
				out = append(out, [2]int64{st, st + s.Size})
			}
		}
	case WindowCumulate:
		base := wtFloorDiv(ts-s.Offset, s.Size)*s.Size + s.Offset
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
func wtReference(c wtCase) (lines []string, late, nullTime int64) {
	cfg := c.cfg
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
	for _, ev := range c.events {
		if ev.advance {
			if ev.wm <= wm {
				continue
			}
			wm = ev.wm
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
		row := ev.row
		if row.vals[wtTS] == nil {
			nullTime++
			continue
		}
		ts := row.vals[wtTS].(int64)
		lim := wm
		if c.useRowWM && row.rowWM > lim {
			lim = row.rowWM
		}
		lim = wtLessLateness(lim, L)
		key := make([]any, len(cfg.Keys))
		for i, k := range cfg.Keys {
			key[i] = wtCanonKey(row.vals[k])
		}
		ks := wtKeyString(key)
		if cfg.Window.Kind == WindowSession {
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

// ---- running the kernel ----

func wtAppend(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch bb := b.(type) {
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.(int64)))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int8Builder:
		bb.Append(v.(int8))
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	default:
		panic(fmt.Sprintf("wtAppend %T", b))
	}
}

// wtBatch builds a batch holding rows, optionally hidden among filler rows
// behind a selection vector and behind a slice offset.
func wtBatch(mem memory.Allocator, schema *arrow.Schema, rows []*wtRow, rng *rand.Rand, sel bool) *vector.Batch {
	var phys []*wtRow
	var selv []int32
	lead := 0
	if sel {
		lead = rng.IntN(3)
		for range lead {
			phys = append(phys, &wtRow{vals: wtRandomRow(rng, rng.Int64N(1e6), 5, 0), rowWM: rng.Int64()})
		}
		selv = []int32{}
		for _, r := range rows {
			for rng.IntN(3) == 0 {
				phys = append(phys, &wtRow{vals: wtRandomRow(rng, rng.Int64N(1e6)-5e5, 5, 0), rowWM: rng.Int64()})
			}
			selv = append(selv, int32(len(phys)-lead))
			phys = append(phys, r)
		}
		for range rng.IntN(3) {
			phys = append(phys, &wtRow{vals: wtRandomRow(rng, 0, 5, 0)})
		}
	} else {
		phys = rows
	}
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for _, r := range phys {
		for c := range wtNumCols {
			wtAppend(rb.Field(c), r.vals[c])
		}
	}
	rec := rb.NewRecordBatch()
	wms := make([]int64, len(phys))
	for i, r := range phys {
		wms[i] = r.rowWM
	}
	if lead > 0 || (sel && rng.IntN(2) == 0) {
		end := int64(len(phys))
		s := rec.NewSlice(int64(lead), end)
		rec.Release()
		rec = s
		wms = wms[lead:]
	}
	return &vector.Batch{Rec: rec, Sel: selv, RowWatermark: wms}
}

func wtLines(t testing.TB, recs []arrow.RecordBatch) []string {
	var out []string
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			parts := make([]string, rec.NumCols())
			for c := range parts {
				parts[c] = wtCell(t, rec.Column(c), i)
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	return out
}

func wtCell(t testing.TB, arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "null"
	}
	switch a := arr.(type) {
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Float64:
		return wtFmtFloat(a.Value(i), 64)
	case *array.Float32:
		return wtFmtFloat(float64(a.Value(i)), 32)
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	}
	t.Fatalf("unexpected output type %s", arr.DataType())
	return ""
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

func wtCheckRecords(t testing.TB, c wtCase, w *WindowAgg, recs []arrow.RecordBatch) {
	t.Helper()
	for _, r := range recs {
		if !r.Schema().Equal(w.OutputSchema()) {
			t.Fatalf("record schema %s != output schema %s", r.Schema(), w.OutputSchema())
		}
		if max := c.cfg.MaxOutputRows; max > 0 && r.NumRows() > int64(max) {
			t.Fatalf("record of %d rows > MaxOutputRows %d", r.NumRows(), max)
		}
	}
}

// wtTakeUpdates takes, checks and releases the changelog of the last Adds.
func wtTakeUpdates(t testing.TB, c wtCase, w *WindowAgg) []string {
	t.Helper()
	recs, kinds := w.TakeUpdates()
	if c.cfg.AllowedLateness == 0 && len(recs) > 0 {
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

type wtResult struct {
	lines          []string
	late, nullTime int64
}

// wtCountingAlloc is a cheap leak check for test input batches
// (memory.CheckedAllocator records a stack per allocation).
type wtCountingAlloc struct {
	mem  memory.Allocator
	size int
}

func (a *wtCountingAlloc) Allocate(n int) []byte {
	a.size += n
	return a.mem.Allocate(n)
}

func (a *wtCountingAlloc) Reallocate(n int, b []byte) []byte {
	a.size += n - len(b)
	return a.mem.Reallocate(n, b)
}

func (a *wtCountingAlloc) Free(b []byte) {
	a.size -= len(b)
	a.mem.Free(b)
}

// wtRun replays c through a WindowAgg, cutting the rows between watermark
// advances into batches of nextSize() rows. mem is the kernel's allocator.
func wtRun(t *testing.T, c wtCase, mem memory.Allocator, rng *rand.Rand, nextSize func() int, sel bool) wtResult {
	t.Helper()
	in := &wtCountingAlloc{mem: memory.NewGoAllocator()}
	defer func() {
		if in.size != 0 {
			t.Errorf("input batches: %d bytes not released", in.size)
		}
	}()
	w, err := NewWindowAgg(c.cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.weakHash {
		w.tbl.testMask = 0xc000000000000003
	}
	var res wtResult
	var pending []*wtRow
	flush := func() {
		for len(pending) > 0 {
			n := min(nextSize(), len(pending))
			b := wtBatch(in, c.cfg.Input, pending[:n], rng, sel)
			if !c.useRowWM {
				b.RowWatermark = nil
			}
			if err := w.Add(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
			pending = pending[n:]
			res.lines = append(res.lines, wtTakeUpdates(t, c, w)...)
		}
	}
	for _, ev := range c.events {
		if !ev.advance {
			pending = append(pending, ev.row)
			continue
		}
		flush()
		recs, err := w.Advance(ev.wm)
		if err != nil {
			t.Fatal(err)
		}
		wtCheckRecords(t, c, w, recs)
		res.lines = append(res.lines, wtKindLines(t, recs, nil)...)
		for _, r := range recs {
			r.Release()
		}
	}
	if g := w.Groups(); g != 0 {
		t.Fatalf("%d groups left after the final flush", g)
	}
	res.late, res.nullTime = w.LateRows(), w.NullTimeRows()
	return res
}

func wtCompare(t *testing.T, what string, got, want wtResult) {
	t.Helper()
	if got.late != want.late || got.nullTime != want.nullTime {
		t.Errorf("%s: late=%d nullTime=%d, want late=%d nullTime=%d", what, got.late, got.nullTime, want.late, want.nullTime)
	}
	if len(got.lines) != len(want.lines) {
		t.Errorf("%s: %d output rows, want %d", what, len(got.lines), len(want.lines))
	}
	for i := range min(len(got.lines), len(want.lines)) {
		if got.lines[i] != want.lines[i] {
			lo := max(0, i-2)
			t.Fatalf("%s: output row %d differs\n got: %q\nwant: %q", what, i,
				got.lines[lo:min(i+3, len(got.lines))], want.lines[lo:min(i+3, len(want.lines))])
		}
	}
	if len(got.lines) != len(want.lines) {
		t.FailNow()
	}
}

func TestWindowAggRandom(t *testing.T) {
	seeds := 60
	if testing.Short() || raceEnabled {
		seeds = 15
	}
	for seed := range uint64(seeds) {
		c := wtRandomCase(seed)
		t.Run(c.name, func(t *testing.T) { wtRunBatchSizes(t, c, seed) })
	}
}

// wtRunBatchSizes replays c at batch sizes 1, 7, 1024 and random, with and
// without selection vectors, and compares each run with the reference.
func wtRunBatchSizes(t *testing.T, c wtCase, seed uint64) {
	lines, late, nullTime := wtReference(c)
	wtCheckChangelog(t, lines, len(c.cfg.Keys))
	want := wtResult{lines: lines, late: late, nullTime: nullTime}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, bs := range []int{1, 7, 1024, -1} {
		size := func() int { return bs }
		if bs < 0 {
			size = func() int { return 1 + rng.IntN(60) }
		}
		for _, sel := range []bool{false, true} {
			got := wtRun(t, c, mem, rng, size, sel)
			wtCompare(t, fmt.Sprintf("batch=%d sel=%v", bs, sel), got, want)
			mem.AssertSize(t, 0)
		}
	}
}
