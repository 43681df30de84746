package join

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/vector"
)

// Interval join throughput against a hand-written Go loop over the same
// data (issue #3; optest.BenchBatch).

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
			bb, ks, ts, vs := optest.BenchBatch(mem, r, batch, int64(i*batch))
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
