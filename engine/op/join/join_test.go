package join

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/vector"
)

// TestIntervalJoinReference checks the interval join against a nested-loop
// reference on random streams large enough to compact state, at several
// batch sizes; the allocator must be back to zero after Close.
func TestIntervalJoinReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n = 20000
	var keys, ts, vals [2][]int64
	for s := 0; s < 2; s++ {
		for i := 0; i < n; i++ {
			keys[s] = append(keys[s], int64(i/200)*10+r.Int64N(50)) // keys come and go
			ts[s] = append(ts[s], int64(i)+r.Int64N(20))            // slightly out of order
			vals[s] = append(vals[s], int64(s*1_000_000+i))
		}
	}
	const lo, hi = -30, 15
	var want []string
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if keys[0][i] == keys[1][j] && ts[1][j]+lo <= ts[0][i] && ts[0][i] <= ts[1][j]+hi {
				want = append(want, fmt.Sprint(vals[0][i], vals[1][j]))
			}
		}
	}
	slices.Sort(want)
	for _, bs := range []int{1 << 12, 777, 5000} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var got []string
		var j *Join
		for from := 0; from < n; from += bs {
			to := min(from+bs, n)
			for s := 0; s < 2; s++ {
				b := optest.Int64Batch(mem, keys[s][from:to], ts[s][from:to], vals[s][from:to])
				if j == nil {
					var err error
					j, err = New(Config{Left: b.Schema(), Right: b.Schema(), LeftKeys: []int{0}, RightKeys: []int{0},
						Interval: &Interval{LeftTime: 1, RightTime: 1, Lower: lo, Upper: hi}}, mem)
					if err != nil {
						t.Fatal(err)
					}
				}
				res, err := j.Add(s, b)
				b.Release()
				if err != nil {
					t.Fatal(err)
				}
				got = appendPairs(got, res)
			}
			// Rows may be up to 20 ms behind the newest: watermark lags 20.
			wm := int64(to) - 21
			res, err := j.Advance(wm)
			if err != nil {
				t.Fatal(err)
			}
			got = appendPairs(got, res)
			// State holds exactly the rows a future partner can reach.
			// and its table exactly their keys.
			live := 0
			liveKeys := map[int64]bool{}
			for i := 0; i < to; i++ {
				if ts[0][i]-lo > wm {
					live++
					liveKeys[keys[0][i]] = true
				}
				if ts[1][i]+hi > wm {
					live++
					liveKeys[keys[1][i]] = true
				}
			}
			if j.StateRows() != live || !j.unindexed[0] && !j.unindexed[1] && j.tbl.N != len(liveKeys) {
				t.Fatalf("batch %d, watermark %d: %d rows and %d keys of state, want %d and %d", bs, wm, j.StateRows(), j.tbl.N, live, len(liveKeys))
			}
		}
		if res, err := j.Advance(math.MaxInt64); err != nil || res != nil || j.StateRows() != 0 {
			t.Fatalf("final watermark: %v, %d rows of state left", err, j.StateRows())
		}
		j.Close()
		mem.AssertSize(t, 0)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("batch %d: %d pairs, want %d", bs, len(got), len(want))
		}
	}
}

func appendPairs(out []string, res *vector.Batch) []string {
	if res == nil {
		return out
	}
	lv, rv := res.Column(2).(*array.Int64), res.Column(5).(*array.Int64)
	res.Rows(func(i int) { out = append(out, fmt.Sprint(lv.Value(i), rv.Value(i))) })
	res.Release()
	return out
}

// TestIntervalJoinSkewed: when one side is much more frequent, the join
// stops indexing it and finds its rows by scanning time ranges; results
// equal the nested-loop reference at every batch size, for inner and
// outer joins, with the state freed as before. When the rare side becomes
// frequent, the scans cost too much and the side is indexed again.
func TestIntervalJoinSkewed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 30000
	var keys, ts, vals [2][]int64
	var at [2][]int // position in time of each row
	for i := range n {
		for s := range 2 {
			// Side 1 is sparse for the first two thirds, then dense.
			if s == 1 && i < 2*n/3 && i%97 != 0 {
				continue
			}
			keys[s] = append(keys[s], int64(i/500)*3+r.Int64N(400))
			ts[s] = append(ts[s], int64(i)+r.Int64N(20))
			vals[s] = append(vals[s], int64(s*1_000_000+i))
			at[s] = append(at[s], i)
		}
	}
	const lo, hi = -6000, 40 // state of about 6000 rows a side
	for _, kind := range []Kind{Inner, Left} {
		var want []string
		matched := make([]bool, len(keys[0]))
		for i := range keys[0] {
			for k := range keys[1] {
				if keys[0][i] == keys[1][k] && ts[1][k]+lo <= ts[0][i] && ts[0][i] <= ts[1][k]+hi {
					want = append(want, fmt.Sprint(vals[0][i], vals[1][k]))
					matched[i] = true
				}
			}
			if kind == Left && !matched[i] {
				want = append(want, fmt.Sprint(vals[0][i], " <nil>"))
			}
		}
		slices.Sort(want)
		for _, bs := range []int{1 << 12, 777} {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var got []string
			var j *Join
			wasUnindexed := false
			var from [2]int
			for end := bs; from[0] < len(keys[0]) || from[1] < len(keys[1]); end += bs {
				for s := range 2 {
					to := from[s]
					for to < len(at[s]) && at[s][to] < end {
						to++
					}
					if to == from[s] {
						continue
					}
					b := optest.Int64Batch(mem, keys[s][from[s]:to], ts[s][from[s]:to], vals[s][from[s]:to])
					from[s] = to
					if j == nil {
						var err error
						j, err = New(Config{Kind: kind, Left: b.Schema(), Right: b.Schema(), LeftKeys: []int{0}, RightKeys: []int{0},
							Interval: &Interval{LeftTime: 1, RightTime: 1, Lower: lo, Upper: hi}}, mem)
						if err != nil {
							t.Fatal(err)
						}
					}
					res, err := j.Add(s, b)
					b.Release()
					if err != nil {
						t.Fatal(err)
					}
					got = appendJoined(got, res)
					wasUnindexed = wasUnindexed || j.unindexed[0]
				}
				res, err := j.Advance(int64(end) - 21)
				if err != nil {
					t.Fatal(err)
				}
				got = appendJoined(got, res)
			}
			res, err := j.Advance(math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			got = appendJoined(got, res)
			if j.StateRows() != 0 {
				t.Fatalf("%d rows of state left", j.StateRows())
			}
			if !wasUnindexed || j.unindexed[0] {
				t.Errorf("kind %d batch %d: the frequent side was unindexed %v, is at the end %v", kind, bs, wasUnindexed, j.unindexed[0])
			}
			j.Close()
			mem.AssertSize(t, 0)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("kind %d batch %d: %d rows, want %d; %s", kind, bs, len(got), len(want), diffStrings(got, want))
			}
		}
	}
}

// diffStrings names a few rows only one side has.
func diffStrings(got, want []string) string {
	count := map[string]int{}
	for _, r := range got {
		count[r]++
	}
	for _, r := range want {
		count[r]--
	}
	var out []string
	for r, c := range count {
		if c != 0 && len(out) < 6 {
			out = append(out, fmt.Sprintf("%q x%+d", r, c))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// appendJoined is appendPairs with NULLs shown.
func appendJoined(out []string, res *vector.Batch) []string {
	if res == nil {
		return out
	}
	lv, rv := res.Column(2).(*array.Int64), res.Column(5).(*array.Int64)
	res.Rows(func(i int) {
		r := " <nil>"
		if rv.IsValid(i) {
			r = fmt.Sprint(" ", rv.Value(i))
		}
		out = append(out, fmt.Sprint(lv.Value(i), r))
	})
	res.Release()
	return out
}

// TestKeysEqual: the scan's key compare (a stored row against an input
// row) agrees with the hash table's
// notion of equality for every key type it accepts.
func TestKeysEqual(t *testing.T) {
	mem := memory.NewGoAllocator()
	build := func(dt arrow.DataType, vals ...any) arrow.RecordBatch {
		bl := array.NewBuilder(mem, dt)
		defer bl.Release()
		for _, v := range vals {
			switch x := bl.(type) {
			case *array.StringBuilder:
				x.Append(v.(string))
			case *array.Float64Builder:
				x.Append(v.(float64))
			case *array.Int32Builder:
				x.Append(v.(int32))
			case *array.BooleanBuilder:
				x.Append(v.(bool))
			}
		}
		a := bl.NewArray()
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: dt}}, nil), []arrow.Array{a}, int64(a.Len()))
	}
	nan := math.NaN()
	for _, tc := range []struct {
		dt   arrow.DataType
		vals []any // rows 0 and 1 equal, row 2 different
	}{
		{arrow.BinaryTypes.String, []any{"é", "é", "e"}},
		{arrow.PrimitiveTypes.Float64, []any{nan, nan, 0.0}},
		{arrow.PrimitiveTypes.Int32, []any{int32(-3), int32(-3), int32(3)}},
		{arrow.FixedWidthTypes.Boolean, []any{true, true, false}},
	} {
		rec := build(tc.dt, tc.vals...)
		s := newStore(rec.Schema())
		s.add(rec.Columns(), []int32{0}, nil, -1)
		if !s.keysEqual(0, []int{0}, rec, 1, []int{0}) || s.keysEqual(0, []int{0}, rec, 2, []int{0}) {
			t.Errorf("%s: equal rows differ or different rows match", tc.dt)
		}
		if !scannable(tc.dt) {
			t.Errorf("%s is not scannable", tc.dt)
		}
		rec.Release()
	}
}
