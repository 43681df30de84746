package join

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/topn"
	"github.com/clink-dev/clink/vector"
)

// Interval join and Top-N throughput against hand-written Go loops over the
// same data (issue #3). Rows: int64 key (1000 distinct), int64 ts rising
// 1 ms per row per side, int64 value.

const benchKeys = 1000

func benchBatch(mem memory.Allocator, r *rand.Rand, n int, t0 int64) (*vector.Batch, []int64, []int64, []int64) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	ks, ts, vs := make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range ks {
		ks[i] = r.Int64N(benchKeys)
		ts[i] = t0 + int64(i)
		vs[i] = r.Int64N(1_000_000)
	}
	cols := make([]arrow.Array, 3)
	for c, vals := range [][]int64{ks, ts, vs} {
		b := array.NewInt64Builder(mem)
		b.AppendValues(vals, nil)
		cols[c] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return vector.New(rec), ks, ts, vs
}

func BenchmarkIntervalJoin(b *testing.B) {
	const batch, batches = 8192, 24
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(1, 2))
	type side struct {
		b          *vector.Batch
		ks, ts, vs []int64
	}
	var data [2][]side
	for s := 0; s < 2; s++ {
		for i := 0; i < batches; i++ {
			bb, ks, ts, vs := benchBatch(mem, r, batch, int64(i*batch))
			data[s] = append(data[s], side{bb, ks, ts, vs})
		}
	}
	schema := data[0][0].b.Schema()
	rows := float64(2 * batch * batches)
	b.Run("kernel", func(b *testing.B) {
		var out int64
		for b.Loop() {
			j, err := New(Config{Left: schema, Right: schema, LeftKeys: []int{0}, RightKeys: []int{0},
				Interval: &Interval{LeftTime: 1, RightTime: 1, Lower: -5000, Upper: 5000}}, mem)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < batches; i++ {
				for s := 0; s < 2; s++ {
					res, err := j.Add(s, data[s][i].b)
					if err != nil {
						b.Fatal(err)
					}
					if res != nil {
						out += int64(res.Len())
						res.Release()
					}
				}
				res, _ := j.Advance(int64((i+1)*batch) - 1)
				if res != nil {
					res.Release()
				}
			}
			j.Close()
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(out)/float64(b.N), "matches/op")
	})
	b.Run("handloop", func(b *testing.B) {
		type row struct{ ts, v int64 }
		var out int64
		for b.Loop() {
			// The output is materialized like the kernel's: six columns.
			var ok, ots, ov, rk, rts, rv []int64
			state := [2]map[int64][]row{{}, {}}
			for i := 0; i < batches; i++ {
				for s := 0; s < 2; s++ {
					d := data[s][i]
					other := state[1-s]
					for k, key := range d.ks {
						ts := d.ts[k]
						for _, o := range other[key] {
							lt, rt := ts, o.ts
							if s == 1 {
								lt, rt = o.ts, ts
							}
							if rt-5000 <= lt && lt <= rt+5000 {
								out++
								lv, rvv := d.vs[k], o.v
								if s == 1 {
									lv, rvv = o.v, d.vs[k]
								}
								ok, ots, ov = append(ok, key), append(ots, lt), append(ov, lv)
								rk, rts, rv = append(rk, key), append(rts, rt), append(rv, rvv)
							}
						}
						state[s][key] = append(state[s][key], row{ts, d.vs[k]})
					}
				}
				ok, ots, ov, rk, rts, rv = ok[:0], ots[:0], ov[:0], rk[:0], rts[:0], rv[:0]
				wm := int64((i+1)*batch) - 1
				for s := 0; s < 2; s++ {
					for key, l := range state[s] {
						kept := l[:0]
						for _, o := range l {
							if o.ts+5000 > wm {
								kept = append(kept, o)
							}
						}
						state[s][key] = kept
					}
				}
			}
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(out)/float64(b.N), "matches/op")
	})
}

func BenchmarkTopN(b *testing.B) {
	const batch, batches, limit = 8192, 24, 3
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(3, 4))
	type in struct {
		b      *vector.Batch
		ks, vs []int64
	}
	var data []in
	for i := 0; i < batches; i++ {
		bb, ks, _, vs := benchBatch(mem, r, batch, int64(i*batch))
		data = append(data, in{bb, ks, vs})
	}
	rows := float64(batch * batches)
	b.Run("kernel", func(b *testing.B) {
		var out int64
		for b.Loop() {
			t, err := topn.New(topn.Config{Input: data[0].b.Schema(), Partition: []int{0}, Order: []topn.SortKey{{Col: 2, Desc: true}}, Limit: limit, TimeCol: -1}, mem)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range data {
				res, err := t.Add(d.b)
				if err != nil {
					b.Fatal(err)
				}
				if res != nil {
					out += int64(res.Len())
					res.Release()
				}
			}
			t.Close()
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(out)/float64(b.N), "changes/op")
	})
	b.Run("handloop", func(b *testing.B) {
		var out int64
		for b.Loop() {
			// Changes are materialized: key, value, rank, kind per row.
			var ck, cv, crn []int64
			var kind []int8
			tops := map[int64][]int64{}
			for _, d := range data {
				for k, key := range d.ks {
					v := d.vs[k]
					l := tops[key]
					pos := len(l)
					for i, x := range l {
						if v > x {
							pos = i
							break
						}
					}
					if pos >= limit {
						continue
					}
					grew := len(l) < limit
					l = append(l, 0)
					copy(l[pos+1:], l[pos:])
					l[pos] = v
					if len(l) > limit {
						l = l[:limit]
					}
					tops[key] = l
					n := len(l) - pos
					out += int64(2 * n)
					if grew {
						out--
					}
					for rank := pos; rank < len(l); rank++ {
						ck, cv, crn, kind = append(ck, key), append(cv, l[rank]), append(crn, int64(rank+1)), append(kind, 2)
					}
				}
				if len(ck) > 1<<16 {
					ck, cv, crn, kind = ck[:0], cv[:0], crn[:0], kind[:0]
				}
			}
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(out)/float64(b.N), "changes/op")
	})
}
