package opstate

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
)

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
