package op

import (
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// WindowAgg is the streaming window aggregate: rows update per-(window,
// key) accumulators; a watermark fires every window whose end it reached.
type WindowAgg struct {
	Agg *kernels.WindowAgg
	// Updating: with allowed lateness the output is a changelog (first
	// firings +I, late updates -U/+U).
	Updating bool
}

var (
	_ Operator         = (*WindowAgg)(nil)
	_ WatermarkHandler = (*WindowAgg)(nil)
	_ StatsReporter    = (*WindowAgg)(nil)
	_ Stateful         = (*WindowAgg)(nil)
)

// Process folds the live rows into the open windows.
func (w *WindowAgg) Process(b *vector.Batch, out Output) error {
	err := w.Agg.Add(b)
	b.Release()
	if err != nil {
		return err
	}
	// With allowed lateness, rows landing in fired windows update them.
	recs, kinds := w.Agg.TakeUpdates()
	for i, r := range recs {
		nb := vector.New(r)
		nb.Kinds = kinds[i]
		if err := out.Emit(nb); err != nil {
			for _, r := range recs[i+1:] {
				r.Release()
			}
			return err
		}
	}
	return nil
}

// OnWatermark emits the windows the watermark closed, then forwards it.
func (w *WindowAgg) OnWatermark(wm int64, out Output) error {
	recs, err := w.Agg.Advance(wm)
	if err != nil {
		return err
	}
	for i, r := range recs {
		nb := vector.New(r)
		if w.Updating {
			nb.Kinds = make([]vector.RowKind, r.NumRows()) // all +I
		}
		if err := out.Emit(nb); err != nil {
			for _, r := range recs[i+1:] {
				r.Release()
			}
			return err
		}
	}
	return out.EmitWatermark(wm)
}

// Stats reports late rows and open groups.
func (w *WindowAgg) Stats() map[string]int64 {
	return map[string]int64{
		"late_rows_dropped": w.Agg.LateRows(),
		"null_time_rows":    w.Agg.NullTimeRows(),
		"open_groups":       int64(w.Agg.Groups()),
	}
}

// SnapshotState writes the open windows' groups and the watermark.
func (w *WindowAgg) SnapshotState(s *Snapshot) error {
	p, err := s.Open(w.Agg.StateSlots())
	if err != nil {
		return err
	}
	if err := w.Agg.Snapshot(p, s.Mem, s.MaxParallelism); err != nil {
		p.Close()
		return err
	}
	return p.Close()
}

// RestoreState loads the groups of the key groups this subtask owns.
func (w *WindowAgg) RestoreState(r *Restore) error {
	return w.Agg.Restore(r.Parts, r.Owns, nil)
}

// KeyColumns are the GROUP BY columns besides the window.
func (w *WindowAgg) KeyColumns() []int { return w.Agg.KeyColumns() }
