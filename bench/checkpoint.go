package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/window"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// StateMeasure is the checkpoint of one window aggregate's state.
type StateMeasure struct {
	Groups        int
	Bytes         int64 // the part file
	Snapshot      time.Duration
	Restore       time.Duration // read, verify, decode and rebuild the table
	BytesPerGroup float64
}

var sensorsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// sensorsAgg is the sensors query's window aggregate.
func sensorsAgg() (*window.Agg, error) {
	return window.New(window.Config{
		Input: sensorsSchema, TimeCol: 1, Keys: []int{0}, KeyNames: []string{"sensor_id"},
		Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 10000},
		Aggs: []agg.Spec{{Func: agg.CountStar, Name: "readings"},
			{Func: agg.Avg, Arg: 2, Name: "avg_temp"},
			{Func: agg.Min, Arg: 2, Name: "min_temp"},
			{Func: agg.Max, Arg: 2, Name: "max_temp"}},
	}, memory.DefaultAllocator)
}

// CheckpointState fills the sensors query's window aggregate with one open
// window for each of sensors sensors (ids like the workload's), checkpoints
// it into dir and restores it into a new aggregate.
func CheckpointState(dir string, sensors int) (StateMeasure, error) {
	m := StateMeasure{Groups: sensors}
	wa, err := sensorsAgg()
	if err != nil {
		return m, err
	}
	ids := array.NewStringBuilder(memory.DefaultAllocator)
	ts := array.NewInt64Builder(memory.DefaultAllocator)
	temp := array.NewFloat64Builder(memory.DefaultAllocator)
	for tick := 0; tick < 3; tick++ {
		for s := 0; s < sensors; s++ {
			ids.Append(fmt.Sprintf("sensor-%06d", s))
			ts.Append(1772352000000 + int64(tick)*1000)
			temp.Append(float64(150+(s*7919+tick*104729)%211) / 10)
		}
	}
	cols := []arrow.Array{ids.NewArray(), ts.NewArray(), temp.NewArray()}
	rec := array.NewRecordBatch(sensorsSchema, cols, int64(3*sensors))
	for _, c := range cols {
		c.Release()
	}
	b := vector.New(rec)
	if err := wa.Add(b); err != nil {
		return m, err
	}
	b.Release()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		return m, err
	}
	id, err := store.NextID()
	if err != nil {
		return m, err
	}
	start := time.Now()
	w, err := store.Begin(id)
	if err != nil {
		return m, err
	}
	snap := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) {
			return w.Part("window_aggregate", 0, slots)
		}}
	if err := wa.SnapshotState(snap); err != nil {
		return m, err
	}
	if err := w.Commit(checkpoint.Meta{Job: "bench"}); err != nil {
		return m, err
	}
	m.Snapshot = time.Since(start)
	fi, err := os.Stat(filepath.Join(store.Path(id), "window_aggregate-0.arrow"))
	if err != nil {
		return m, err
	}
	m.Bytes = fi.Size()
	m.BytesPerGroup = float64(m.Bytes) / float64(sensors)

	start = time.Now()
	cp, err := store.Open(id)
	if err != nil {
		return m, err
	}
	part, err := cp.ReadPart("window_aggregate", 0)
	if err != nil {
		return m, err
	}
	wa2, err := sensorsAgg()
	if err != nil {
		return m, err
	}
	restore := &op.Restore{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: 1, Parts: []*checkpoint.Part{part}}
	if err := wa2.RestoreState(restore); err != nil {
		return m, err
	}
	part.Release()
	m.Restore = time.Since(start)
	if wa2.Groups() != sensors {
		return m, fmt.Errorf("restored %d groups, want %d", wa2.Groups(), sensors)
	}
	return m, nil
}
