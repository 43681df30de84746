package topn

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/vector"
)

// Top-N throughput against a hand-written Go loop over the same data
// (issue #3; optest.BenchBatch).

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
		bb, ks, _, vs := optest.BenchBatch(mem, r, batch, int64(i*batch))
		data = append(data, in{bb, ks, vs})
	}
	rows := float64(batch * batches)
	b.Run("kernel", func(b *testing.B) {
		var out int64
		for b.Loop() {
			t, err := New(Config{Input: data[0].b.Schema(), Partition: []int{0}, Order: []SortKey{{Col: 2, Desc: true}}, Limit: limit, TimeCol: -1}, mem)
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
