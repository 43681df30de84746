package op

import (
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// TopN keeps the first N rows per partition (ROW_NUMBER() ... WHERE rn <= N).
type TopN struct {
	T *kernels.TopN
}

var (
	_ Operator         = (*TopN)(nil)
	_ WatermarkHandler = (*TopN)(nil)
	_ Closer           = (*TopN)(nil)
	_ Stateful         = (*TopN)(nil)
)

// Process ranks a batch; unwindowed Top-N emits its changelog.
func (t *TopN) Process(b *vector.Batch, out Output) error {
	res, err := t.T.Add(b)
	b.Release()
	if err != nil || res == nil {
		return err
	}
	return out.Emit(res)
}

// OnWatermark emits the final rows of closed windows, then forwards.
func (t *TopN) OnWatermark(wm int64, out Output) error {
	res, err := t.T.Advance(wm)
	if err != nil {
		return err
	}
	if res != nil {
		if err := out.Emit(res); err != nil {
			return err
		}
	}
	return out.EmitWatermark(wm)
}

// Close releases retained rows.
func (t *TopN) Close() error { t.T.Close(); return nil }

// SnapshotState writes the kept rows of every partition.
func (t *TopN) SnapshotState(s *Snapshot) error { return snapshotKernel(s, t.T) }

// RestoreState loads the partitions of the key groups this subtask owns.
func (t *TopN) RestoreState(r *Restore) error {
	return t.T.Restore(r.Parts, r.Owns, nil)
}

// KeyColumns are the PARTITION BY columns: at parallelism > 1 a partition
// lives in the subtask owning its key group.
func (t *TopN) KeyColumns() []int { return t.T.KeyColumns() }
