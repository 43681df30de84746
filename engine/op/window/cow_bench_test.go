package window

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// BenchmarkWindowAggCheckpoint is the sensors query's window state with
// every open group updated between two full checkpoints (issue #17's
// worst case): per checkpoint, the pause at the barrier, the CPU of
// writing the part (its asynchronous half, waited for) and the CPU of
// the updates between checkpoints (which pay the copy-on-write copies),
// beside the updates alone.
func BenchmarkWindowAggCheckpoint(b *testing.B) {
	for _, groups := range []int{200_000, 1_000_000} {
		for _, ckpt := range []bool{false, true} {
			b.Run(fmt.Sprintf("groups=%dk,ckpt=%v", groups/1000, ckpt), func(b *testing.B) {
				benchWindowAggCheckpoint(b, groups, ckpt)
			})
		}
	}
}

func benchWindowAggCheckpoint(b *testing.B, groups int, ckpt bool) {
	{
		{
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "sensor_id", Type: arrow.BinaryTypes.String},
				{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
				{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64},
			}, nil)
			w, err := New(Config{
				Input: schema, TimeCol: 1, Keys: []int{0}, KeyNames: []string{"sensor_id"},
				Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10000},
				Aggs: []agg.Spec{{Func: agg.CountStar, Name: "readings"},
					{Func: agg.Avg, Arg: 2, Name: "avg_temp"},
					{Func: agg.Min, Arg: 2, Name: "min_temp"},
					{Func: agg.Max, Arg: 2, Name: "max_temp"}},
			}, memory.DefaultAllocator)
			if err != nil {
				b.Fatal(err)
			}
			var batches []*vector.Batch
			for lo := 0; lo < groups; lo += 8192 {
				hi := min(lo+8192, groups)
				ids := array.NewStringBuilder(memory.DefaultAllocator)
				ts := array.NewInt64Builder(memory.DefaultAllocator)
				temp := array.NewFloat64Builder(memory.DefaultAllocator)
				for s := lo; s < hi; s++ {
					ids.Append(fmt.Sprintf("sensor-%06d", s))
					ts.Append(1772352000000)
					temp.Append(float64(150+(s*7919)%211) / 10)
				}
				cols := []arrow.Array{ids.NewArray(), ts.NewArray(), temp.NewArray()}
				batches = append(batches, vector.New(array.NewRecordBatch(schema, cols, int64(hi-lo))))
				for _, c := range cols {
					c.Release()
				}
			}
			update := func() {
				for _, bt := range batches {
					if err := w.Add(bt); err != nil {
						b.Fatal(err)
					}
				}
			}
			update()
			store, err := checkpoint.NewStore(b.TempDir(), checkpoint.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var pause, write, upd time.Duration
			id := uint64(0)
			b.ResetTimer()
			for b.Loop() {
				c0 := optest.CPUTime()
				update()
				upd += optest.CPUTime() - c0
				if !ckpt {
					continue
				}
				id++
				cw, err := store.Begin(id)
				if err != nil {
					b.Fatal(err)
				}
				var fn func() error
				s := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Completed: id - 1, MaxDeltas: 10,
					Go:   func(f func() error) { fn = f },
					Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return cw.Part("w", 0, slots) },
					OpenDelta: func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error) {
						return cw.DeltaPart("w", 0, slots, chain)
					}}
				t0 := time.Now()
				if err := w.SnapshotState(s); err != nil {
					b.Fatal(err)
				}
				pause += time.Since(t0)
				c1 := optest.CPUTime()
				if err := fn(); err != nil {
					b.Fatal(err)
				}
				if err := cw.Commit(checkpoint.Meta{Job: "bench"}); err != nil {
					b.Fatal(err)
				}
				write += optest.CPUTime() - c1
				if err := store.Retain(1); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(pause.Microseconds())/1000/n, "pause-ms")
			b.ReportMetric(float64(write.Microseconds())/1000/n, "write-cpu-ms")
			b.ReportMetric(float64(upd.Microseconds())/1000/n, "update-cpu-ms")
			b.ReportMetric(0, "ns/op")
		}
	}
}
