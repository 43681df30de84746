package opstate

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels/hash"
)

// SlotOperator is the raw slot of an operator's own state (its watermark,
// counters).
const SlotOperator = "operator"

// ChunkRows bounds the groups per state record.
const ChunkRows = 8192

// UniqueNames renames value columns whose name is taken, compared
// case-insensitively as the state format requires (also against the fixed
// columns): the second "agg_x_sum" becomes "agg_x_sum_2". Names depend only
// on the operator's configuration, so a restore derives the same ones.
func UniqueNames(fields []arrow.Field) {
	taken := map[string]bool{}
	for _, f := range []string{checkpoint.ColSlot, checkpoint.ColKeyGroup, checkpoint.ColKey, checkpoint.ColWindowStart, checkpoint.ColWindowEnd} {
		taken[f] = true
	}
	for i, f := range fields {
		name := f.Name
		for n := 2; taken[strings.ToLower(name)]; n++ {
			name = fmt.Sprintf("%s_%d", f.Name, n)
		}
		taken[strings.ToLower(name)] = true
		fields[i].Name = name
	}
}

// KeyGroups returns the key group of each of the n rows of the key columns.
func KeyGroups(keys []arrow.Array, n, maxPar int) ([]int32, error) {
	hs, err := hash.KeyHashes(keys, n)
	if err != nil {
		return nil, err
	}
	groups := make([]int32, n)
	for k, h := range hs {
		groups[k] = checkpoint.KeyGroupOf(h, maxPar)
	}
	return groups, nil
}

// Write opens the subtask's part of s with slots, lets write fill it (with
// the snapshot's allocator and number of key groups) and closes it.
func Write(s *op.Snapshot, slots []checkpoint.Slot, write func(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error) error {
	p, err := s.Open(slots)
	if err != nil {
		return err
	}
	if err := write(p, s.Mem, s.MaxParallelism); err != nil {
		p.Close()
		return err
	}
	return p.Close()
}
