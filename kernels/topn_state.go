package kernels

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
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
const SlotTopN = "top_n"

// topnMetaFields follow a kept row's columns.
var topnMetaFields = []arrow.Field{{Name: "pos", Type: arrow.PrimitiveTypes.Int64}, {Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "time", Type: arrow.PrimitiveTypes.Int64}, {Name: "arrival", Type: arrow.PrimitiveTypes.Int64}}

// rowFields are the value columns holding the kept rows.
func (t *TopN) rowFields() []arrow.Field {
	var fields []arrow.Field
	for _, f := range t.cfg.Input.Fields() {
		fields = append(fields, arrow.Field{Name: "row_" + f.Name, Type: f.Type})
	}
	uniqueStateNames(fields)
	return fields
}

// StateSlots declares the slots of the Top-N's snapshot.
func (t *TopN) StateSlots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: SlotTopN, Values: append(t.rowFields(), topnMetaFields...)},
		{Name: SlotOperator, Raw: true, Values: []arrow.Field{{Name: "next_seq", Type: arrow.PrimitiveTypes.Int64}}},
	}
}

// Snapshot writes the kept rows and the sequence counter into p, whose
// slots are StateSlots.
func (t *TopN) Snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	s := t.store
	part := make([]int32, len(s.rowB)) // stored row -> partition id + 1
	pos := make([]int32, len(s.rowB))
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
	for lo := 0; lo < len(refs); lo += snapshotChunk {
		if err := t.snapshotRows(p, mem, maxParallelism, fields, refs[lo:min(lo+snapshotChunk, len(refs))], part, pos); err != nil {
			return err
		}
	}
	seq := int64Col(mem, 1, func(int) int64 { return t.nseq })
	defer seq.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
		Values: map[string]arrow.Array{"next_seq": seq}})
}

func (t *TopN) snapshotRows(p *checkpoint.PartWriter, mem memory.Allocator, maxPar int, fields []arrow.Field, refs, part, pos []int32) error {
	n := len(refs)
	vals := map[string]arrow.Array{}
	defer func() {
		for _, a := range vals {
			a.Release()
		}
	}()
	cols := make([]arrow.Array, len(fields))
	for c, f := range t.cfg.Input.Fields() {
		a, err := t.store.gather(mem, f.Type, c, refs)
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
	groups, err := keyGroups(keys, n, maxPar)
	if err != nil {
		return err
	}
	vals["pos"] = int64Col(mem, n, func(k int) int64 { return int64(pos[refs[k]]) })
	vals["seq"] = int64Col(mem, n, func(k int) int64 { return t.seq[part[refs[k]]-1] })
	if t.Windowed() {
		vals["time"] = int64Col(mem, n, func(k int) int64 { return t.store.ts[refs[k]] })
	}
	vals["arrival"] = int64Col(mem, n, func(k int) int64 { return int64(refs[k]) })
	return p.WriteSlot(checkpoint.SlotRows{Slot: SlotTopN, KeyGroups: groups, Keys: RenderKeys(keys, n), Values: vals})
}

// Restore loads the rows of the parts' top_n rows whose key group owns
// accepts (nil: all), and the sequence counter, into an empty Top-N.
func (t *TopN) Restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if len(t.store.rowB) > 0 || t.nseq > 0 {
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

func (t *TopN) restorePart(p *checkpoint.Part, owns func(int32) bool, mem memory.Allocator, pos *[]int64) error {
	for _, rec := range p.Records {
		rows, err := stateSlotRows(rec, owns, SlotTopN, SlotOperator)
		if err != nil {
			return err
		}
		if sel := rows[SlotOperator]; len(sel) > 0 {
			sc := newStateCols(rec, sel, mem)
			seq, err := sc.int64s("next_seq")
			if err == nil {
				t.nseq = max(t.nseq, slices.Max(seq))
			}
			sc.release()
			if err != nil {
				return fmt.Errorf("operator row: %w", err)
			}
		}
	}
	cols, err := slotColumns(p, SlotTopN, owns, mem, append(t.rowFields(), topnMetaFields...), "arrival")
	if err != nil || cols == nil {
		return err
	}
	defer releaseAll(cols)
	nc := t.cfg.Input.NumFields()
	m := cols[0].Len()
	meta := func(i int) []int64 { return cols[nc+i].(*array.Int64).Int64Values() }
	ps, seqs, ts := meta(0), meta(1), meta(2)
	keys := make([]arrow.Array, 0, len(t.cfg.Partition))
	for _, c := range t.cfg.Partition {
		keys = append(keys, cols[c])
	}
	ids := slices.Clone(t.tbl.lookup(make([]int64, m), nil, keys, m))
	for len(t.lists) < t.tbl.size() {
		t.lists = append(t.lists, nil)
		t.ends = append(t.ends, 0)
		t.seq = append(t.seq, 0)
	}
	b := vector.New(array.NewRecordBatch(t.cfg.Input, cols[:nc], int64(m)))
	defer b.Release()
	for r, id := range ids {
		idx := t.store.store(b, int32(r), -1, -1)
		t.cacheKeys(b, int32(r))
		if t.Windowed() {
			t.store.ts[idx] = ts[r]
			t.ends[id] = ts[r]
		}
		t.seq[id] = seqs[r]
		t.lists[id] = append(t.lists[id], idx)
		*pos = append(*pos, ps[r])
	}
	return nil
}
