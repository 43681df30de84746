package op

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// GroupAgg is the unwindowed grouped aggregate: each input batch yields the
// changelog (+I, -U/+U, and -D for a group emptied by retractions) of the
// groups it changed. Its input may be a changelog when the kernel was
// configured to retract (kernels.GroupAggConfig.Retract).
type GroupAgg struct {
	Agg *kernels.GroupAgg
}

var (
	_ Operator      = (*GroupAgg)(nil)
	_ StatsReporter = (*GroupAgg)(nil)
	_ Stateful      = (*GroupAgg)(nil)
)

// Process folds the batch and emits the changes.
func (g *GroupAgg) Process(b *vector.Batch, out Output) error {
	changes, err := g.Agg.Add(b)
	b.Release()
	if err != nil || changes == nil {
		return err
	}
	return out.Emit(changes)
}

// Stats reports the number of groups held.
func (g *GroupAgg) Stats() map[string]int64 {
	return map[string]int64{"groups": int64(g.Agg.Groups())}
}

// SnapshotState writes every group's key and accumulators.
func (g *GroupAgg) SnapshotState(s *Snapshot) error { return snapshotKernel(s, g.Agg) }

// RestoreState loads the groups of the key groups this subtask owns.
func (g *GroupAgg) RestoreState(r *Restore) error {
	return g.Agg.Restore(r.Parts, r.Owns, nil)
}

// stateKernel is a kernel that writes its state as one part.
type stateKernel interface {
	StateSlots() []checkpoint.Slot
	Snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error
}

// snapshotKernel writes k's state into the subtask's part.
func snapshotKernel(s *Snapshot, k stateKernel) error {
	p, err := s.Open(k.StateSlots())
	if err != nil {
		return err
	}
	if err := k.Snapshot(p, s.Mem, s.MaxParallelism); err != nil {
		p.Close()
		return err
	}
	return p.Close()
}

// KeyColumns are the GROUP BY columns: at parallelism > 1 a group lives in
// the subtask owning its key group.
func (g *GroupAgg) KeyColumns() []int { return g.Agg.KeyColumns() }
