package topn

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// State slots of a Top-N (docs/state-format.md): one keyed row per kept
// row, keyed by the partition key: the whole row as typed columns
// (row_<column>; the partition key is among them), its position in its
// partition (the rank for unwindowed Top-N, arrival for window Top-N,
// which ranks when the window closes), the partition's first appearance
// (seq, which orders the output of windows closing together), its time
// (window Top-N) and its arrival (ties in the ranking keep arrival order);
// and one raw row with the sequence counter.
const Slot = "top_n"

// topnMetaFields follow a kept row's columns.
var topnMetaFields = []arrow.Field{{Name: "pos", Type: arrow.PrimitiveTypes.Int64}, {Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "time", Type: arrow.PrimitiveTypes.Int64}, {Name: "arrival", Type: arrow.PrimitiveTypes.Int64}}

// rowFields are the value columns holding the kept rows.
func (t *Ranker) rowFields() []arrow.Field {
	var fields []arrow.Field
	for _, f := range t.cfg.Input.Fields() {
		fields = append(fields, arrow.Field{Name: "row_" + f.Name, Type: f.Type})
	}
	opstate.UniqueNames(fields)
	return fields
}

// stateSlots declares the slots of the Top-N's snapshot.
func (t *Ranker) stateSlots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: Slot, Values: append(t.rowFields(), topnMetaFields...)},
		{Name: opstate.SlotOperator, Raw: true, Values: []arrow.Field{{Name: "next_seq", Type: arrow.PrimitiveTypes.Int64}}},
	}
}

// snapshot writes the kept rows and the sequence counter into p, whose
// slots are stateSlots.
func (t *Ranker) snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s := t.store
	part := make([]int32, len(s.RowB)) // stored row -> partition id + 1
	pos := make([]int32, len(s.RowB))
	for id, l := range t.lists {
		for k, idx := range l {
			part[idx], pos[idx] = int32(id+1), int32(k)
		}
	}
	var refs []int32
	for idx, id := range part {
		if id > 0 {
			refs = append(refs, int32(idx))
		}
	}
	fields := t.rowFields()
	for lo := 0; lo < len(refs); lo += opstate.ChunkRows {
		if err := t.snapshotRows(p, mem, maxParallelism, fields, refs[lo:min(lo+opstate.ChunkRows, len(refs))], part, pos); err != nil {
			return err
		}
	}
	seq := column.Int64(mem, 1, func(int) int64 { return t.nseq })
	defer seq.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: opstate.SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
		Values: map[string]arrow.Array{"next_seq": seq}})
}

func (t *Ranker) snapshotRows(p *checkpoint.PartWriter, mem memory.Allocator, maxPar int, fields []arrow.Field, refs, part, pos []int32) error {
	n := len(refs)
	vals := map[string]arrow.Array{}
	defer func() {
		for _, a := range vals {
			a.Release()
		}
	}()
	cols := make([]arrow.Array, len(fields))
	for c, f := range t.cfg.Input.Fields() {
		a, err := t.store.Gather(mem, f.Type, c, refs)
		if err != nil {
			return err
		}
		cols[c] = a
		vals[fields[c].Name] = a
	}
	keys := make([]arrow.Array, 0, len(t.cfg.Partition))
	for _, c := range t.cfg.Partition {
		keys = append(keys, cols[c])
	}
	groups, err := opstate.KeyGroups(keys, n, maxPar)
	if err != nil {
		return err
	}
	vals["pos"] = column.Int64(mem, n, func(k int) int64 { return int64(pos[refs[k]]) })
	vals["seq"] = column.Int64(mem, n, func(k int) int64 { return t.seq[part[refs[k]]-1] })
	if t.Windowed() {
		vals["time"] = column.Int64(mem, n, func(k int) int64 { return t.store.TS[refs[k]] })
	}
	vals["arrival"] = column.Int64(mem, n, func(k int) int64 { return int64(refs[k]) })
	return p.WriteSlot(checkpoint.SlotRows{Slot: Slot, KeyGroups: groups, Keys: opstate.RenderKeys(keys, n), Values: vals})
}

// restore loads the rows of the parts' top_n rows whose key group owns
// accepts (nil: all), and the sequence counter, into an empty Top-N.
func (t *Ranker) restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if len(t.store.RowB) > 0 || t.nseq > 0 {
		return fmt.Errorf("Top-N: restore into a used Top-N")
	}
	if mem == nil {
		mem = t.mem
	}
	var pos []int64 // per stored row
	for _, p := range parts {
		if err := t.restorePart(p, owns, mem, &pos); err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
	}
	for id, l := range t.lists {
		slices.SortFunc(l, func(a, b int32) int { return cmp.Compare(pos[a], pos[b]) })
		t.lists[id] = l
	}
	return nil
}

func (t *Ranker) restorePart(p *checkpoint.Part, owns func(int32) bool, mem memory.Allocator, pos *[]int64) error {
	for _, rec := range p.Records {
		rows, err := opstate.SlotRows(rec, owns, Slot, opstate.SlotOperator)
		if err != nil {
			return err
		}
		if sel := rows[opstate.SlotOperator]; len(sel) > 0 {
			sc := opstate.NewCols(rec, sel, mem)
			seq, err := sc.Int64s("next_seq")
			if err == nil {
				t.nseq = max(t.nseq, slices.Max(seq))
			}
			sc.Release()
			if err != nil {
				return fmt.Errorf("operator row: %w", err)
			}
		}
	}
	cols, err := opstate.SlotColumns(p, Slot, owns, mem, append(t.rowFields(), topnMetaFields...), "arrival")
	if err != nil || cols == nil {
		return err
	}
	defer column.ReleaseAll(cols)
	nc := t.cfg.Input.NumFields()
	m := cols[0].Len()
	meta := func(i int) []int64 { return cols[nc+i].(*array.Int64).Int64Values() }
	ps, seqs, ts := meta(0), meta(1), meta(2)
	keys := make([]arrow.Array, 0, len(t.cfg.Partition))
	for _, c := range t.cfg.Partition {
		keys = append(keys, cols[c])
	}
	ids := slices.Clone(t.tbl.Lookup(make([]int64, m), nil, keys, m))
	for len(t.lists) < t.tbl.Size() {
		t.lists = append(t.lists, nil)
		t.ends = append(t.ends, 0)
		t.seq = append(t.seq, 0)
	}
	b := vector.New(array.NewRecordBatch(t.cfg.Input, cols[:nc], int64(m)))
	defer b.Release()
	for r, id := range ids {
		idx := t.store.Add(b, int32(r), -1, -1)
		t.cacheKeys(b, int32(r))
		if t.Windowed() {
			t.store.TS[idx] = ts[r]
			t.ends[id] = ts[r]
		}
		t.seq[id] = seqs[r]
		t.lists[id] = append(t.lists[id], idx)
		*pos = append(*pos, ps[r])
	}
	return nil
}

// SnapshotState writes the kept rows of every partition.
func (t *Ranker) SnapshotState(s *op.Snapshot) error {
	return opstate.Write(s, t.stateSlots(), t.snapshot)
}

// RestoreState loads the partitions of the key groups this subtask owns.
func (t *Ranker) RestoreState(r *op.Restore) error {
	return t.restore(r.Parts, r.Owns, nil)
}
