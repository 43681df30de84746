package join

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels/column"
)

// State slots of a join (docs/state-format.md): one keyed row per stored
// row of each side, keyed by the side's join key: the whole row as typed
// columns (l_<column> for the left side, r_<column> for the right; the key
// is among them), its event time (interval joins), how many partners it
// has met (outer joins retract or emit the NULL-padded row while it has
// none) and its arrival, which orders a side's rows and so the output; and
// one raw row with the watermark.
const (
	SlotLeft  = "join_left"
	SlotRight = "join_right"
)

var joinSlots = [2]string{SlotLeft, SlotRight}

// joinMetaFields follow a stored row's columns: its event time, partners
// met and arrival (the order of a side's rows).
var joinMetaFields = []arrow.Field{{Name: "time", Type: arrow.PrimitiveTypes.Int64},
	{Name: "matches", Type: arrow.PrimitiveTypes.Int64}, {Name: "arrival", Type: arrow.PrimitiveTypes.Int64}}

func (j *Join) sideSchema(side int) *arrow.Schema {
	if side == 0 {
		return j.cfg.Left
	}
	return j.cfg.Right
}

func (j *Join) sideKeys(side int) []int {
	if side == 0 {
		return j.cfg.LeftKeys
	}
	return j.cfg.RightKeys
}

// SideKeyColumns are the join key's columns of side 0 (left) or 1
// (right): the state of both sides is keyed by them.
func (j *Join) SideKeyColumns(side int) []int { return slices.Clone(j.sideKeys(side)) }

// OutputKeyColumns are the output columns every row's key is in: the
// left key's for inner and left joins (a right row appears only matched),
// the right key's for right joins; none for full joins (an unmatched row
// of either side has only its own side's key).
func (j *Join) OutputKeyColumns() []int {
	switch j.cfg.Kind {
	case Inner, Left:
		return slices.Clone(j.cfg.LeftKeys)
	case Right:
		out := make([]int, len(j.cfg.RightKeys))
		for i, c := range j.cfg.RightKeys {
			out[i] = j.cfg.Left.NumFields() + c
		}
		return out
	}
	return nil
}

var (
	_ op.KeyedBinary = (*Join)(nil)
	_ op.KeyedOutput = (*Join)(nil)
)

// rowFields are the value columns holding a side's rows.
func (j *Join) rowFields(side int) []arrow.Field {
	prefix := [2]string{"l_", "r_"}[side]
	var fields []arrow.Field
	for _, f := range j.sideSchema(side).Fields() {
		fields = append(fields, arrow.Field{Name: prefix + f.Name, Type: f.Type})
	}
	opstate.UniqueNames(fields)
	return fields
}

// stateSlots declares the slots of the join's snapshot.
func (j *Join) stateSlots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: SlotLeft, Values: append(j.rowFields(0), joinMetaFields...)},
		{Name: SlotRight, Values: append(j.rowFields(1), joinMetaFields...)},
		{Name: opstate.SlotOperator, Raw: true, Values: []arrow.Field{{Name: "watermark", Type: arrow.PrimitiveTypes.Int64}}},
	}
}

// snapshot writes both sides' live rows and the watermark into p, whose
// slots are stateSlots.
func (j *Join) snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	for side, s := range j.sides {
		fields := j.rowFields(side)
		var live []int32
		for idx := int32(0); idx < s.len(); idx++ {
			if !s.dead.at(idx) {
				live = append(live, idx)
			}
		}
		for lo := 0; lo < len(live); lo += opstate.ChunkRows {
			if err := j.snapshotRows(p, mem, maxParallelism, side, fields, live[lo:min(lo+opstate.ChunkRows, len(live))]); err != nil {
				return err
			}
		}
	}
	wm := column.Int64(mem, 1, func(int) int64 { return j.wm })
	defer wm.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: opstate.SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
		Values: map[string]arrow.Array{"watermark": wm}})
}

func (j *Join) snapshotRows(p *checkpoint.PartWriter, mem memory.Allocator, maxPar, side int, fields []arrow.Field, refs []int32) error {
	s := j.sides[side]
	n := len(refs)
	vals := map[string]arrow.Array{}
	defer func() {
		for _, a := range vals {
			a.Release()
		}
	}()
	cols := make([]arrow.Array, len(fields))
	for c, f := range j.sideSchema(side).Fields() {
		a, err := s.gather(mem, f.Type, c, refs)
		if err != nil {
			return err
		}
		cols[c] = a
		vals[fields[c].Name] = a
	}
	keys := make([]arrow.Array, 0, len(j.sideKeys(side)))
	for _, c := range j.sideKeys(side) {
		keys = append(keys, cols[c])
	}
	groups, err := opstate.KeyGroups(keys, n, maxPar)
	if err != nil {
		return err
	}
	if j.cfg.Interval != nil {
		vals["time"] = column.Int64(mem, n, func(k int) int64 { return s.ts.at(refs[k]) })
	}
	vals["matches"] = column.Int64(mem, n, func(k int) int64 { return int64(s.matches.at(refs[k])) })
	vals["arrival"] = column.Int64(mem, n, func(k int) int64 { return int64(refs[k]) })
	return p.WriteSlot(checkpoint.SlotRows{Slot: joinSlots[side], KeyGroups: groups, Keys: opstate.RenderKeys(keys, n), Values: vals})
}

// restore loads the rows of the parts' join rows whose key group owns
// accepts (nil: all), and the watermark, into an empty join. A side's rows
// keep their arrival order.
func (j *Join) restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if j.sides[0].len()+j.sides[1].len() > 0 || j.wm != math.MinInt64 {
		return fmt.Errorf("join: restore into a used join")
	}
	if mem == nil {
		mem = j.mem
	}
	for _, p := range parts {
		if err := j.restorePart(p, owns, mem); err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
	}
	return nil
}

func (j *Join) restorePart(p *checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	for _, rec := range p.Records {
		rows, err := opstate.SlotRows(rec, owns, SlotLeft, SlotRight, opstate.SlotOperator)
		if err != nil {
			return err
		}
		if sel := rows[opstate.SlotOperator]; len(sel) > 0 {
			sc := opstate.NewCols(rec, sel, mem)
			wm, err := sc.Int64s("watermark")
			if err == nil {
				j.wm = max(j.wm, slices.Max(wm))
			}
			sc.Release()
			if err != nil {
				return fmt.Errorf("operator row: %w", err)
			}
		}
	}
	for side, slot := range joinSlots {
		fields := append(j.rowFields(side), joinMetaFields...)
		cols, err := opstate.SlotColumns(p, slot, owns, mem, fields, "arrival")
		if err == nil && cols != nil {
			err = j.restoreSide(side, cols)
			column.ReleaseAll(cols)
		}
		if err != nil {
			return fmt.Errorf("%s rows: %w", slot, err)
		}
	}
	return nil
}

// restoreSide stores rows given as the side's columns followed by the
// meta columns.
func (j *Join) restoreSide(side int, cols []arrow.Array) error {
	schema := j.sideSchema(side)
	nc := schema.NumFields()
	m := cols[0].Len()
	ts, matches := cols[nc].(*array.Int64).Int64Values(), cols[nc+1].(*array.Int64).Int64Values()
	keys := make([]arrow.Array, 0, len(j.sideKeys(side)))
	for _, c := range j.sideKeys(side) {
		keys = append(keys, cols[c])
	}
	ids := j.tbl.Lookup(make([]int64, m), nil, keys, m)
	j.growKeys()
	rows := make([]int32, m)
	for r := range rows {
		rows[r] = int32(r)
	}
	s := j.sides[side]
	first := s.add(cols[:nc], rows, ids[:m], -1)
	for _, id := range ids[:m] {
		j.keyRows[id]++
	}
	for r := range rows {
		idx := first + int32(r)
		s.matches.set(idx, int32(matches[r]))
		if j.cfg.Interval != nil {
			s.ts.set(idx, ts[r])
		}
		rows[r] = idx
	}
	if j.cfg.Interval != nil {
		s.addRun(rows)
	}
	return nil
}

// SnapshotState writes both sides' stored rows and the watermark.
func (j *Join) SnapshotState(s *op.Snapshot) error {
	return opstate.Write(s, j.stateSlots(), j.snapshot)
}

// RestoreState loads the stored rows of the key groups this subtask owns.
func (j *Join) RestoreState(r *op.Restore) error {
	return j.restore(r.Parts, r.Owns, nil)
}
