package optest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
)

// Columns of the random test input.
const (
	TS = iota
	KI64
	KStr
	KF32
	KBool
	VF64
	VI32
	VStr
	VBool
	VTS
	KI8
	NumCols
)

// Schema is the random input's schema, ts a TIMESTAMP(3) or a BIGINT.
func Schema(tsTimestamp bool) *arrow.Schema {
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

// Row is one input row: typed values (nil = NULL) and the watermark its
// partition had before it.
type Row struct {
	Vals  [NumCols]any
	RowWM int64
}

// Event is a row or a watermark advance.
type Event struct {
	Row     *Row
	Advance bool
	WM      int64
}

// Config mirrors window.Config field for field, so that a Case's Cfg can
// be passed as one (an unnamed struct type is assignable to it): the harness
// cannot import the operator packages whose tests use it.
type Config = struct {
	Input           *arrow.Schema
	Window          kwindow.Spec
	TimeCol         int
	Keys            []int
	KeyNames        []string
	Aggs            []agg.Spec
	MaxOutputRows   int
	AllowedLateness int64
}

// Case is a random input for an operator: a window aggregate's
// configuration (whose input schema, keys and aggregates other operators'
// tests reuse) and its events.
type Case struct {
	Name     string
	Cfg      Config
	Events   []Event
	UseRowWM bool
	WeakHash bool
}

func wtNull(rng *rand.Rand, p float64, v any) any {
	if rng.Float64() < p {
		return nil
	}
	return v
}

var wtStrs = []string{"", "a", "b", "ab", "key-with-a-longer-name-0001", "key-with-a-longer-name-0002", "ü€", "zz"}
var wtF32s = []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), 1.5, -2, float32(math.Inf(1))}

func wtRandomRow(rng *rand.Rand, ts int64, nkeys int, keyNull float64) [NumCols]any {
	var v [NumCols]any
	v[TS] = wtNull(rng, 0.02, ts)
	v[KI64] = wtNull(rng, keyNull, int64(rng.IntN(nkeys)-nkeys/2))
	v[KStr] = wtNull(rng, keyNull, wtStrs[rng.IntN(min(nkeys, len(wtStrs)))])
	v[KF32] = wtNull(rng, keyNull, wtF32s[rng.IntN(len(wtF32s))])
	v[KBool] = wtNull(rng, keyNull, rng.IntN(2) == 0)
	v[VF64] = wtNull(rng, 0.15, float64(rng.IntN(2001)-1000)/8)
	v[VI32] = wtNull(rng, 0.15, int32(rng.IntN(2_000_000_001)-1_000_000_000))
	s := make([]byte, rng.IntN(6))
	for i := range s {
		s[i] = "abcxyz"[rng.IntN(6)]
	}
	v[VStr] = wtNull(rng, 0.15, string(s))
	v[VBool] = wtNull(rng, 0.15, rng.IntN(3) == 0)
	v[VTS] = wtNull(rng, 0.15, rng.Int64N(1<<40)-(1<<39))
	v[KI8] = wtNull(rng, keyNull, int8(rng.IntN(5)-2))
	return v
}

var wtAggChoices = []agg.Spec{
	{Func: agg.CountStar, Arg: -1, Name: "cnt"},
	{Func: agg.Count, Arg: VF64, Name: "cnt_f"},
	{Func: agg.Sum, Arg: VF64, Name: "sum_f"},
	{Func: agg.Avg, Arg: VF64, Name: "avg_f"},
	{Func: agg.Min, Arg: VF64, Name: "min_f"},
	{Func: agg.Max, Arg: VF64, Name: "max_f"},
	{Func: agg.Sum, Arg: VI32, Name: "sum_i"},
	{Func: agg.Avg, Arg: VI32, Name: "avg_i"},
	{Func: agg.Min, Arg: VI32, Name: "min_i"},
	{Func: agg.Max, Arg: VI32, Name: "max_i"},
	{Func: agg.Count, Arg: VStr, Name: "cnt_s"},
	{Func: agg.Min, Arg: VStr, Name: "min_s"},
	{Func: agg.Max, Arg: VStr, Name: "max_s"},
	{Func: agg.Min, Arg: VBool, Name: "min_b"},
	{Func: agg.Max, Arg: VBool, Name: "max_b"},
	{Func: agg.Min, Arg: VTS, Name: "min_ts"},
	{Func: agg.Max, Arg: VTS, Name: "max_ts"},
	{Func: agg.Count, Arg: KI64, Name: "cnt_k"},
}

func wtRandomSpec(rng *rand.Rand) kwindow.Spec {
	off := int64(0)
	if rng.IntN(2) == 0 {
		off = rng.Int64N(4001) - 2000
	}
	switch rng.IntN(4) {
	case 0:
		return kwindow.Spec{Kind: kwindow.Tumble, Size: 1 + rng.Int64N(3000), Offset: off}
	case 1:
		size := 1 + rng.Int64N(3000)
		slide := 1 + rng.Int64N(size)
		if rng.IntN(6) == 0 {
			slide = size + rng.Int64N(500) // gaps between windows
		}
		return kwindow.Spec{Kind: kwindow.Hop, Size: size, Slide: slide, Offset: off}
	case 2:
		step := 1 + rng.Int64N(800)
		return kwindow.Spec{Kind: kwindow.Cumulate, Step: step, Size: step * (1 + rng.Int64N(6)), Offset: off}
	}
	return kwindow.Spec{Kind: kwindow.Session, Gap: 1 + rng.Int64N(600)}
}

// RandomCase is the random case of seed.
func RandomCase(seed uint64) Case { return RandomCaseOf(seed, false) }

// RandomCaseOf is RandomCase, with sessionLate a SESSION window with
// allowed lateness.
func RandomCaseOf(seed uint64, sessionLate bool) Case {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	spec := wtRandomSpec(rng)
	if sessionLate {
		spec = kwindow.Spec{Kind: kwindow.Session, Gap: 1 + rng.Int64N(600)}
	}
	if spec.Kind == kwindow.Hop && spec.Size/spec.Slide > 40 {
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
		if spec.Kind == kwindow.Cumulate {
			spec.Step = up(spec.Step)
			spec.Size = spec.Step * (1 + rng.Int64N(6))
		}
	}
	var keys []int
	for _, k := range []int{KI64, KStr, KF32, KBool, KI8} {
		if rng.IntN(3) == 0 {
			keys = append(keys, k)
		}
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var aggs []agg.Spec
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
	c := Case{
		Cfg: Config{
			Input:         Schema(rng.IntN(2) == 0),
			Window:        spec,
			TimeCol:       TS,
			Keys:          keys,
			KeyNames:      keyNames,
			Aggs:          aggs,
			MaxOutputRows: []int{0, 1, 5, 100}[rng.IntN(4)],
		},
		UseRowWM: rng.IntN(4) != 0,
		WeakHash: rng.IntN(4) == 0,
	}
	// Allowed lateness draws from its own stream, so the cases without it
	// stay the ones they were.
	if lr := rand.New(rand.NewPCG(seed, 0x1a7e)); sessionLate || lr.IntN(2) == 0 {
		c.Cfg.AllowedLateness = max(grid, (1+lr.Int64N(3000))/grid*grid)
	}
	c.Name = fmt.Sprintf("seed=%d/%s/keys=%v/aggs=%d/rowwm=%v/weak=%v/lateness=%d", seed, spec.Kind, keys, len(aggs), c.UseRowWM, c.WeakHash, c.Cfg.AllowedLateness)

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
		ts := FloorDiv(t0+int64(i)*rate+rng.Int64N(2*jitter)-jitter, grid) * grid
		p := rng.IntN(parts)
		row := &Row{Vals: wtRandomRow(rng, ts, nkeys, keyNull), RowWM: partWM[p]}
		c.Events = append(c.Events, Event{Row: row})
		if row.Vals[TS] != nil && ts-lag > partWM[p] {
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
			c.Events = append(c.Events, Event{Advance: true, WM: wm})
			opWM = max(opWM, wm)
		}
	}
	c.Events = append(c.Events, Event{Advance: true, WM: math.MaxInt64})
	return c
}
