package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
			ts[s] = append(ts[s], int64(i)+r.Int64N(20)) // slightly out of order
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
				b := int64Batch(mem, keys[s][from:to], ts[s][from:to], vals[s][from:to])
				if j == nil {
					var err error
					j, err = NewJoin(JoinConfig{Left: b.Schema(), Right: b.Schema(), LeftKeys: []int{0}, RightKeys: []int{0},
						Interval: &IntervalSpec{LeftTime: 1, RightTime: 1, Lower: lo, Upper: hi}}, mem)
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
			if j.StateRows() != live || j.tbl.n != len(liveKeys) {
				t.Fatalf("batch %d, watermark %d: %d rows and %d keys of state, want %d and %d", bs, wm, j.StateRows(), j.tbl.n, live, len(liveKeys))
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

func int64Batch(mem memory.Allocator, cols ...[]int64) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	arrs := make([]arrow.Array, len(cols))
	for c := range cols {
		bl := array.NewInt64Builder(mem)
		bl.AppendValues(cols[c], nil)
		arrs[c] = bl.NewArray()
		bl.Release()
	}
	rec := array.NewRecordBatch(schema, arrs, int64(len(cols[0])))
	for _, a := range arrs {
		a.Release()
	}
	return vector.New(rec)
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
