package op

import (
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// GroupAgg is the unwindowed grouped aggregate: each input batch yields the
// changelog (+I, -U/+U) of the groups it changed.
type GroupAgg struct {
	Agg *kernels.GroupAgg
}

var (
	_ Operator      = (*GroupAgg)(nil)
	_ StatsReporter = (*GroupAgg)(nil)
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
