package opstate

import (
	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
)

// Chains remembers the parts an incremental operator wrote, so that a
// snapshot can be a delta on the part of the newest complete checkpoint
// (docs/state-format.md#incremental-checkpoints). Epochs number the
// operator's snapshots: state changed after snapshot e carries an epoch
// above e, and a delta on a base holds what changed after the base's
// epoch. Epochs start at 1; 0 is "before any snapshot".
type Chains struct {
	epoch uint32 // the epoch changes are in now
	snaps map[uint64]written
}

type written struct {
	part  *checkpoint.PartWriter
	epoch uint32
}

// Epoch is the epoch changes made now belong to.
func (c *Chains) Epoch() uint32 {
	if c.epoch == 0 {
		c.epoch = 1
	}
	return c.epoch
}

// Base returns the epoch of the snapshot of the newest complete
// checkpoint and the chain a delta on it names; ok is false when s must
// be full (no such snapshot, a savepoint, or the chain is at its limit).
func (c *Chains) Base(s *op.Snapshot) (epoch uint32, chain []checkpoint.PartInfo, ok bool) {
	b, found := c.snaps[s.Completed]
	if !found || s.OpenDelta == nil || s.Completed == 0 {
		return 0, nil, false
	}
	chain, ok = b.part.Chain()
	if !ok || len(chain) > max(s.MaxDeltas, 0) {
		return 0, nil, false
	}
	return b.epoch, chain, true
}

// Open creates s's part: a delta on chain when chain is set (falling back
// to a full part when the chain's files are gone), else full. It closes
// the current epoch: changes after Open are in the next one.
func (c *Chains) Open(s *op.Snapshot, slots []checkpoint.Slot, chain []checkpoint.PartInfo) (p *checkpoint.PartWriter, delta bool, err error) {
	epoch := c.Epoch()
	if chain != nil {
		if p, err = s.OpenDelta(slots, chain); err == nil {
			delta = true
		}
	}
	if !delta {
		if p, err = s.Open(slots); err != nil {
			return nil, false, err
		}
	}
	if c.snaps == nil {
		c.snaps = map[uint64]written{}
	}
	for id := range c.snaps {
		if id < s.Completed {
			delete(c.snaps, id)
		}
	}
	c.snaps[s.ID] = written{part: p, epoch: epoch}
	c.epoch++
	return p, delta, nil
}

// Oldest is the epoch of the oldest snapshot a later delta may build on
// (0: none): what changed at or before it will never be asked for again.
func (c *Chains) Oldest(completed uint64) uint32 {
	if b, ok := c.snaps[completed]; ok {
		return b.epoch
	}
	return 0
}

// Reset forgets every part: the next snapshot is full (after a restore).
func (c *Chains) Reset() { c.snaps = nil }
