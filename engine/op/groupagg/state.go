package groupagg

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels/column"
)

// State slot of the unwindowed aggregate (docs/state-format.md): one keyed
// row per group with the key's typed columns (key_<name>) and each
// aggregate's accumulators (agg_<column>_<what>). Every group in the table
// has emitted (a group's first row emits +I), and the values it emitted
// last are those of its accumulators, so they are all the next changelog
// row needs. Over a changelog (Retract) a row also holds the group's
// number of rows (row_count, never 0: an emptied group is forgotten).
const Slot = "group_agg"

// colRowCount is the group_agg column of a group's row count (Retract).
const colRowCount = "row_count"

// stateFields are the value columns of the group_agg slot: the keys, the
// row count (Retract), then each aggregate's accumulators; accs[i] is the
// range of aggregate i.
func (g *Agg) stateFields() (fields []arrow.Field, accs [][2]int) {
	for i, c := range g.cfg.Keys {
		fields = append(fields, arrow.Field{Name: "key_" + g.schema.Field(i).Name, Type: g.cfg.Input.Field(c).Type})
	}
	if g.cfg.Retract {
		fields = append(fields, arrow.Field{Name: colRowCount, Type: arrow.PrimitiveTypes.Int64})
	}
	for i, a := range g.accs {
		prefix := "agg_count_star_"
		if c := g.cfg.Aggs[i].Arg; c >= 0 {
			prefix = "agg_" + g.cfg.Input.Field(c).Name + "_"
		}
		from := len(fields)
		fields = append(fields, a.StateFields(prefix)...)
		accs = append(accs, [2]int{from, len(fields)})
	}
	opstate.UniqueNames(fields)
	return fields, accs
}

// stateSlots declares the slot of the aggregate's snapshot.
func (g *Agg) stateSlots() []checkpoint.Slot {
	fields, _ := g.stateFields()
	return []checkpoint.Slot{{Name: Slot, Values: fields}}
}

// snapshot writes every group into p, whose slots are stateSlots.
func (g *Agg) snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return g.writeIDs(p, mem, maxParallelism, g.liveIDs())
}

// writeIDs writes groups ids into p.
func (g *Agg) writeIDs(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int, ids []int32) error {
	fields, accs := g.stateFields()
	for lo := 0; lo < len(ids); lo += opstate.ChunkRows {
		if err := g.snapshotChunk(p, mem, maxParallelism, fields, accs, ids[lo:min(lo+opstate.ChunkRows, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

func (g *Agg) snapshotChunk(p *checkpoint.PartWriter, mem memory.Allocator, maxPar int, fields []arrow.Field, accs [][2]int, ids []int32) error {
	vals := map[string]arrow.Array{}
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	keys := make([]arrow.Array, len(g.tbl.Keys))
	for i, c := range g.tbl.Keys {
		keys[i] = c.Build(mem, ids)
		vals[fields[i].Name] = keys[i]
		owned = append(owned, keys[i])
	}
	groups, err := opstate.KeyGroups(keys, len(ids), maxPar)
	if err != nil {
		return err
	}
	if g.cfg.Retract {
		c := column.Int64(mem, len(ids), func(j int) int64 { return *g.nrows.At(ids[j]) })
		vals[colRowCount] = c
		owned = append(owned, c)
	}
	for i, a := range g.accs {
		for j, col := range a.StateColumns(mem, ids) {
			vals[fields[accs[i][0]+j].Name] = col
			owned = append(owned, col)
		}
	}
	return p.WriteSlot(checkpoint.SlotRows{Slot: Slot, KeyGroups: groups, Keys: opstate.RenderKeys(keys, len(ids)), Values: vals})
}

// restore loads the groups of the parts' group_agg rows whose key group
// owns accepts (nil: all) into an empty aggregate.
func (g *Agg) restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if g.tbl.N > 0 {
		return fmt.Errorf("group aggregate: restore into a used aggregate")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	fields, accs := g.stateFields()
	for _, p := range parts {
		for _, rec := range p.Records {
			rows, err := opstate.SlotRows(rec, owns, Slot)
			if err == nil {
				err = g.restoreRows(opstate.NewCols(rec, rows[Slot], mem), fields, accs)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p.Path, err)
			}
		}
	}
	return nil
}

func (g *Agg) restoreRows(sc *opstate.Cols, fields []arrow.Field, accs [][2]int) error {
	defer sc.Release()
	m := len(sc.Sel)
	if m == 0 {
		return nil
	}
	keys := make([]arrow.Array, len(g.cfg.Keys))
	for i, c := range g.cfg.Keys {
		var err error
		if keys[i], err = sc.Typed(fields[i].Name, g.cfg.Input.Field(c).Type); err != nil {
			return err
		}
	}
	ids := slices.Clone(g.tbl.Lookup(make([]int64, m), nil, keys, m))
	if len(g.tbl.NewIDs) != m {
		return fmt.Errorf("%d groups repeat the key of another row", m-len(g.tbl.NewIDs))
	}
	g.grow(g.tbl.Size())
	for _, id := range ids {
		*g.seen.At(id) = true
	}
	if g.cfg.Retract {
		n, err := sc.Int64s(colRowCount)
		if err != nil {
			return err
		}
		for j, id := range ids {
			if n[j] <= 0 {
				return fmt.Errorf("state column %s: a group of %d rows", colRowCount, n[j])
			}
			*g.nrows.At(id) = n[j]
		}
	}
	for i, a := range g.accs {
		cols := make([]arrow.Array, 0, accs[i][1]-accs[i][0])
		for _, f := range fields[accs[i][0]:accs[i][1]] {
			c, err := sc.Typed(f.Name, f.Type)
			if err != nil {
				return err
			}
			cols = append(cols, c)
		}
		if err := a.SetState(ids, cols); err != nil {
			return fmt.Errorf("state column %s: %w", fields[accs[i][0]].Name, err)
		}
	}
	return nil
}

// SnapshotState writes every group's key and accumulators.
//
// The snapshot is a delta (the groups changed since the newest complete
// checkpoint's snapshot and tombstones for the groups forgotten since) when
// one is allowed and smaller than half the state.
func (g *Agg) SnapshotState(s *op.Snapshot) error {
	inc := &g.inc
	base, chain, delta := inc.chains.Base(s)
	all := g.liveIDs()
	ids := all
	if delta {
		sel := ids[:0:0]
		for _, id := range ids {
			if int(id) < len(inc.mod) && inc.mod[id] > base {
				sel = append(sel, id)
			}
		}
		if 2*len(sel) > len(ids) {
			chain = nil // as big as the state: write it whole, start a new chain
		} else {
			ids = sel
		}
	}
	p, delta, err := inc.chains.Open(s, g.stateSlots(), chain)
	if err != nil {
		return err
	}
	if !delta {
		ids = all // also when the chain's files were gone
	}
	mem := s.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	err = g.writeIDs(p, mem, s.MaxParallelism, ids)
	if err == nil && delta {
		var t checkpoint.Tombstones
		for _, f := range inc.forgotten {
			if f.epoch > base {
				t.KeyGroups, t.Keys = append(t.KeyGroups, checkpoint.RawKeyGroup), append(t.Keys, f.key)
			}
		}
		t.Slot = Slot
		err = p.WriteTombstones(t)
	}
	oldest := inc.chains.Oldest(s.Completed)
	inc.forgotten = slices.DeleteFunc(inc.forgotten, func(f forgottenKey) bool { return f.epoch <= oldest })
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	return err
}

// RestoreState loads the groups of the key groups this subtask owns. The
// next snapshot is full.
func (g *Agg) RestoreState(r *op.Restore) error {
	g.inc = incState{}
	return g.restore(r.Parts, r.Owns, nil)
}

// incState is what incremental snapshots track.
type incState struct {
	chains    opstate.Chains
	mod       []uint32 // per group id: the epoch it last changed in
	forgotten []forgottenKey
}

// forgottenKey is a group emptied by retractions, as a tombstone names it.
type forgottenKey struct {
	key   string
	epoch uint32
}

// touch records that groups ids changed in the current epoch.
func (g *Agg) touch(ids []int32) {
	inc := &g.inc
	if n := g.tbl.Size(); n > len(inc.mod) {
		inc.mod = slices.Grow(inc.mod, max(n, 2*len(inc.mod))-len(inc.mod))[:n]
	}
	e := inc.chains.Epoch()
	for _, id := range ids {
		inc.mod[id] = e
	}
}

// forget records the keys of groups about to be removed, for the next
// deltas' tombstones (none before the first snapshot: no part holds them).
func (g *Agg) forget(ids []int32) error {
	if len(ids) == 0 || g.inc.chains.Epoch() == 1 {
		return nil
	}
	keys := make([]arrow.Array, len(g.tbl.Keys))
	for i, c := range g.tbl.Keys {
		keys[i] = c.Build(g.mem, ids)
		defer keys[i].Release()
	}
	e := g.inc.chains.Epoch()
	for _, key := range opstate.RenderKeys(keys, len(ids)) {
		g.inc.forgotten = append(g.inc.forgotten, forgottenKey{key: key, epoch: e})
	}
	return nil
}

func (g *Agg) liveIDs() []int32 {
	ids := make([]int32, 0, g.tbl.N)
	for id := range int32(g.tbl.Size()) {
		if g.tbl.Live(id) {
			ids = append(ids, id)
		}
	}
	return ids
}
