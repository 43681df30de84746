package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// DeltaMeasure is an incremental checkpoint of a window aggregate's state
// after a fraction of its keys changed.
type DeltaMeasure struct {
	Groups, Changed int
	FullBytes       int64 // the full part before the change
	DeltaBytes      int64 // the delta part after it
	FullSnapshot    time.Duration
	DeltaSnapshot   time.Duration
	// Pause is the delta snapshot's synchronous part (what the operator
	// stops for); the rest is written asynchronously.
	Pause   time.Duration
	Restore time.Duration // read the chain (full + delta), merge, rebuild
}

// CheckpointDelta fills the sensors query's window aggregate with groups
// open groups, checkpoints it in full, updates changed of them and
// checkpoints again as a delta on the first, then restores the chain.
func CheckpointDelta(dir string, groups, changed int) (DeltaMeasure, error) {
	m := DeltaMeasure{Groups: groups, Changed: changed}
	wa, err := sensorsAgg()
	if err != nil {
		return m, err
	}
	add := func(from, n, tick int) error {
		ids := array.NewStringBuilder(memory.DefaultAllocator)
		ts := array.NewInt64Builder(memory.DefaultAllocator)
		temp := array.NewFloat64Builder(memory.DefaultAllocator)
		for s := from; s < from+n; s++ {
			ids.Append(fmt.Sprintf("sensor-%06d", s))
			ts.Append(1772352000000 + int64(tick)*1000)
			temp.Append(float64(150+(s*7919+tick*104729)%211) / 10)
		}
		cols := []arrow.Array{ids.NewArray(), ts.NewArray(), temp.NewArray()}
		rec := array.NewRecordBatch(sensorsSchema, cols, int64(n))
		for _, c := range cols {
			c.Release()
		}
		b := vector.New(rec)
		defer b.Release()
		return wa.Add(b)
	}
	if err := add(0, groups, 0); err != nil {
		return m, err
	}
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		return m, err
	}
	snap := func(id, completed uint64) (time.Duration, time.Duration, error) {
		start := time.Now()
		w, err := store.Begin(id)
		if err != nil {
			return 0, 0, err
		}
		s := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Completed: completed, MaxDeltas: 10, Go: w.Go,
			Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) {
				return w.Part("window_aggregate", 0, slots)
			},
			OpenDelta: func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error) {
				return w.DeltaPart("window_aggregate", 0, slots, chain)
			}}
		if err := wa.SnapshotState(s); err != nil {
			return 0, 0, err
		}
		pause := time.Since(start)
		if err := w.Commit(checkpoint.Meta{Job: "bench"}); err != nil {
			return 0, 0, err
		}
		return time.Since(start), pause, nil
	}
	if m.FullSnapshot, _, err = snap(1, 0); err != nil {
		return m, err
	}
	if err := add(0, changed, 1); err != nil {
		return m, err
	}
	if m.DeltaSnapshot, m.Pause, err = snap(2, 1); err != nil {
		return m, err
	}
	size := func(id uint64) (int64, error) {
		fi, err := os.Stat(filepath.Join(store.Path(id), "window_aggregate-0.arrow"))
		if err != nil {
			return 0, err
		}
		return fi.Size(), nil
	}
	if m.FullBytes, err = size(1); err != nil {
		return m, err
	}
	if m.DeltaBytes, err = size(2); err != nil {
		return m, err
	}
	start := time.Now()
	cp, err := store.Open(2)
	if err != nil {
		return m, err
	}
	if !cp.Manifest.Incremental() {
		return m, fmt.Errorf("checkpoint 2 is not incremental")
	}
	part, err := cp.ReadPart("window_aggregate", 0)
	if err != nil {
		return m, err
	}
	wa2, err := sensorsAgg()
	if err != nil {
		return m, err
	}
	if err := wa2.RestoreState(&op.Restore{ID: 2, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: 1, Parts: []*checkpoint.Part{part}}); err != nil {
		return m, err
	}
	part.Release()
	m.Restore = time.Since(start)
	if wa2.Groups() != groups {
		return m, fmt.Errorf("restored %d groups, want %d", wa2.Groups(), groups)
	}
	return m, nil
}

// Pauses reads the synchronous snapshot pause (manifest property
// sync_duration_ms) of every complete checkpoint in dir, ascending, and
// counts their delta parts.
func Pauses(dir string) (ms []float64, deltas int, err error) {
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		return nil, 0, err
	}
	list, err := store.List()
	if err != nil {
		return nil, 0, err
	}
	for _, c := range list {
		if !c.Complete {
			continue
		}
		cp, err := store.Open(c.ID)
		if err != nil {
			return nil, 0, err
		}
		var v float64
		if _, err := fmt.Sscan(cp.Manifest.Properties[checkpoint.PropSyncDuration], &v); err == nil {
			ms = append(ms, v)
		}
		for _, p := range cp.Manifest.Parts {
			if p.Delta {
				deltas++
			}
		}
	}
	slices.Sort(ms)
	return ms, deltas, nil
}
