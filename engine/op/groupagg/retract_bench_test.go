package groupagg

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// The retracting aggregate's benchmark is Nexmark q4's outer query,
//
//	SELECT cat, COUNT(*), SUM(v), AVG(f) FROM winners GROUP BY cat
//
// (and MAX(v) instead, for the multiset) over the changelog of an inner
// updating aggregate: 100k auctions, each in one of `keys` categories,
// whose winning bid rises now and then (-U old, +U new), and 1 in 20
// changes deletes an auction (-D) that comes back later (+I). f is v as a
// DOUBLE, as the binder casts AVG's argument. Batches of 8192 rows.
const (
	rbAuctions  = 100_000
	rbBatches   = 48
	rbBatchRows = 8192
)

type rbData struct {
	schema  *arrow.Schema
	batches []*vector.Batch
	rows    int
}

func rbGenerate(keys int) *rbData {
	rng := rand.New(rand.NewPCG(uint64(keys), 7))
	d := &rbData{schema: arrow.NewSchema([]arrow.Field{
		{Name: "cat", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	}, nil)}
	cat := make([]int64, rbAuctions)
	best := make([]int64, rbAuctions) // 0: not in the changelog's table
	for i := range cat {
		cat[i] = int64(rng.IntN(keys))
	}
	mem := memory.NewGoAllocator()
	for range rbBatches {
		cb, vb, fb := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewFloat64Builder(mem)
		var kinds []vector.RowKind
		add := func(k vector.RowKind, a int, v int64) {
			cb.Append(cat[a])
			vb.Append(v)
			fb.Append(float64(v))
			kinds = append(kinds, k)
		}
		for len(kinds) < rbBatchRows-1 {
			a := rng.IntN(rbAuctions)
			switch {
			case best[a] == 0:
				best[a] = 1 + rng.Int64N(1000)
				add(vector.Insert, a, best[a])
			case rng.IntN(20) == 0:
				add(vector.Delete, a, best[a])
				best[a] = 0
			default:
				add(vector.UpdateBefore, a, best[a])
				best[a] += 1 + rng.Int64N(100)
				add(vector.UpdateAfter, a, best[a])
			}
		}
		cols := []arrow.Array{cb.NewArray(), vb.NewArray(), fb.NewArray()}
		rec := array.NewRecordBatch(d.schema, cols, int64(len(kinds)))
		column.ReleaseAll(cols)
		cb.Release()
		vb.Release()
		fb.Release()
		b := vector.New(rec)
		b.Kinds = kinds
		d.batches = append(d.batches, b)
		d.rows += len(kinds)
	}
	return d
}

func rbConfig(d *rbData, max bool) Config {
	aggs := []agg.Spec{{Func: agg.CountStar, Arg: -1}, {Func: agg.Sum, Arg: 1}, {Func: agg.Avg, Arg: 2}}
	if max {
		aggs = []agg.Spec{{Func: agg.Max, Arg: 1}}
	}
	return Config{Input: d.schema, Keys: []int{0}, Aggs: aggs, Retract: true}
}

// rbRunner processes the changelog once and calls emit (when set) with
// each output batch before releasing it; it returns the output rows.
type rbRunner func(d *rbData, max bool, emit func(*vector.Batch)) int

func rbKernel(d *rbData, max bool, emit func(*vector.Batch)) int {
	g, err := New(rbConfig(d, max), memory.DefaultAllocator)
	if err != nil {
		panic(err)
	}
	out := 0
	for _, b := range d.batches {
		ch, err := g.Add(b)
		if err != nil {
			panic(err)
		}
		if ch != nil {
			out += ch.NumRows()
			if emit != nil {
				emit(ch)
			}
			ch.Release()
		}
	}
	return out
}

// rbGroup is the hand loop's state of a category: rows, the value sum and
// the float sum (plain: integral values add exactly), and for MAX the
// values held as value → count with the current maximum.
type rbGroup struct {
	rows, sum int64
	fsum      float64
	vals      map[int64]int64
	max       int64
}

// rbHandLoop is what one writes for exactly this query with a Go map: one
// change per row, -U/+U when the group's values change, +I for a new
// group, -D when its last row goes; output as Arrow columns per batch.
func rbHandLoop(d *rbData, isMax bool, emit func(*vector.Batch)) int {
	groups := map[int64]*rbGroup{}
	out := 0
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "cat", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	if isMax {
		schema = arrow.NewSchema([]arrow.Field{
			{Name: "cat", Type: arrow.PrimitiveTypes.Int64},
			{Name: "m", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		}, nil)
	}
	mem := memory.DefaultAllocator
	for _, b := range d.batches {
		cats := b.Column(0).(*array.Int64).Int64Values()
		vs := b.Column(1).(*array.Int64).Int64Values()
		fs := b.Column(2).(*array.Float64).Float64Values()
		kb, nb, sb, ab := array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewInt64Builder(mem), array.NewFloat64Builder(mem)
		var kinds []vector.RowKind
		row := func(k vector.RowKind, c int64, g rbGroup) {
			kinds = append(kinds, k)
			kb.Append(c)
			if isMax {
				nb.Append(g.max)
				return
			}
			nb.Append(g.rows)
			sb.Append(g.sum)
			ab.Append(g.fsum / float64(g.rows))
		}
		for r, c := range cats {
			g := groups[c]
			if g == nil {
				g = &rbGroup{}
				if isMax {
					g.vals = map[int64]int64{}
				}
				groups[c] = g
			}
			old := *g
			v := vs[r]
			neg := b.Kinds[r] == vector.UpdateBefore || b.Kinds[r] == vector.Delete
			if isMax {
				if !neg {
					g.vals[v]++
					g.max = maxOf(g.max, v, g.rows == 0)
				} else if g.vals[v]--; g.vals[v] == 0 {
					delete(g.vals, v)
					if v == g.max {
						g.max = 0
						for x := range g.vals {
							g.max = max(g.max, x)
						}
					}
				}
			} else if !neg {
				g.sum += v
				g.fsum += fs[r]
			} else {
				g.sum -= v
				g.fsum -= fs[r]
			}
			if neg {
				g.rows--
			} else {
				g.rows++
			}
			switch {
			case old.rows == 0:
				row(vector.Insert, c, *g)
			case g.rows == 0:
				row(vector.Delete, c, old)
				delete(groups, c)
			case isMax && old.max != g.max, !isMax && (old.sum != g.sum || old.rows != g.rows):
				row(vector.UpdateBefore, c, old)
				row(vector.UpdateAfter, c, *g)
			}
		}
		cols := []arrow.Array{kb.NewArray(), nb.NewArray()}
		if !isMax {
			cols = append(cols, sb.NewArray(), ab.NewArray())
		}
		for _, bl := range []array.Builder{kb, nb, sb, ab} {
			bl.Release()
		}
		rec := array.NewRecordBatch(schema, cols, int64(len(kinds)))
		column.ReleaseAll(cols)
		out += len(kinds)
		ob := vector.New(rec)
		ob.Kinds = kinds
		if emit != nil {
			emit(ob)
		}
		ob.Release()
	}
	return out
}

func maxOf(m, v int64, first bool) int64 {
	if first {
		return v
	}
	return max(m, v)
}

func rbBench(b *testing.B, d *rbData, max bool, run rbRunner) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := optest.CPUTime()
	rows := 0
	for b.Loop() {
		run(d, max, nil)
		rows += d.rows
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(rows)/(optest.CPUTime()-cpu0).Seconds(), "rows/cpu-s")
}

// BenchmarkGroupAggRetract compares the retracting aggregate with the
// hand loop over the same changelog.
func BenchmarkGroupAggRetract(b *testing.B) {
	for _, keys := range []int{10_000, 8} {
		d := rbGenerate(keys)
		for _, max := range []bool{false, true} {
			aggs := "count,sum,avg"
			if max {
				aggs = "max"
			}
			name := fmt.Sprintf("keys=%d,aggs=%s", keys, aggs)
			b.Run(name, func(b *testing.B) { rbBench(b, d, max, rbKernel) })
			b.Run("handloop,"+name, func(b *testing.B) { rbBench(b, d, max, rbHandLoop) })
		}
	}
}

// TestGroupAggRetractBenchQuery checks that the kernel and the hand loop
// emit the same changelog on the benchmark's data, so the benchmark
// compares equal work.
func TestGroupAggRetractBenchQuery(t *testing.T) {
	for _, keys := range []int{1000, 8} {
		d := rbGenerate(keys)
		for _, max := range []bool{false, true} {
			var got, want []string
			rbKernel(d, max, func(b *vector.Batch) { got = append(got, optest.Lines(t, rbRetain(b))...) })
			rbHandLoop(d, max, func(b *vector.Batch) { want = append(want, optest.Lines(t, rbRetain(b))...) })
			if len(want) < 100 {
				t.Fatalf("keys %d max %v: %d output rows from %d changes", keys, max, len(want), d.rows)
			}
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("keys %d max %v: row %d\ngot  %s\nwant %s", keys, max, i, got[i], want[i])
					}
				}
				t.Fatalf("keys %d max %v: %d rows, hand loop %d", keys, max, len(got), len(want))
			}
		}
	}
}

// rbRetain gives Lines (which releases) its own reference.
func rbRetain(b *vector.Batch) *vector.Batch {
	b.Rec.Retain()
	return &vector.Batch{Rec: b.Rec, Kinds: b.Kinds}
}
