package op

import (
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// BinaryOperator consumes two inputs (a join, a union). ProcessSide owns b.
// Its watermark is the minimum of its inputs'; it receives it through
// WatermarkHandler when it implements it (and forwards it itself).
type BinaryOperator interface {
	ProcessSide(side int, b *vector.Batch, out Output) error
}

// Join runs a streaming equi-join (regular or interval).
type Join struct {
	J *kernels.Join
}

var (
	_ BinaryOperator   = (*Join)(nil)
	_ WatermarkHandler = (*Join)(nil)
	_ StatsReporter    = (*Join)(nil)
	_ Closer           = (*Join)(nil)
	_ Stateful         = (*Join)(nil)
)

// ProcessSide joins a batch of one side with the other side's state.
func (j *Join) ProcessSide(side int, b *vector.Batch, out Output) error {
	res, err := j.J.Add(side, b)
	b.Release()
	if err != nil || res == nil {
		return err
	}
	return out.Emit(res)
}

// OnWatermark drops interval-join state no future row can reach (emitting
// unmatched outer rows), then forwards the watermark.
func (j *Join) OnWatermark(wm int64, out Output) error {
	res, err := j.J.Advance(wm)
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

// Stats reports rows held and late rows dropped.
func (j *Join) Stats() map[string]int64 {
	return map[string]int64{"state_rows": int64(j.J.StateRows()), "late_rows_dropped": j.J.LateRows()}
}

// Close releases the join's state.
func (j *Join) Close() error { j.J.Close(); return nil }

// SnapshotState writes both sides' stored rows and the watermark.
func (j *Join) SnapshotState(s *Snapshot) error { return snapshotKernel(s, j.J) }

// RestoreState loads the stored rows of the key groups this subtask owns.
func (j *Join) RestoreState(r *Restore) error {
	return j.J.Restore(r.Parts, r.Owns, nil)
}

// Union concatenates two inputs of the same schema (UNION ALL).
type Union struct{}

// ProcessSide passes the batch on.
func (Union) ProcessSide(side int, b *vector.Batch, out Output) error { return out.Emit(b) }

// Stateless: a union keeps nothing between batches.
func (Union) Stateless() {}
