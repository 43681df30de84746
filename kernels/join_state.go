package kernels

import (
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// State slots of a join (docs/state-format.md): one keyed row per stored
// row of each side, keyed by the side's join key: the whole row as typed
// columns (l_<column> for the left side, r_<column> for the right; the key
// is among them), its event time (interval joins), how many partners it
// has met (outer joins retract or emit the NULL-padded row while it has
// none) and its arrival, which orders a side's rows and so the output; and
// one raw row with the watermark.
const (
	SlotJoinLeft  = "join_left"
	SlotJoinRight = "join_right"
)

var joinSlots = [2]string{SlotJoinLeft, SlotJoinRight}

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

// rowFields are the value columns holding a side's rows.
func (j *Join) rowFields(side int) []arrow.Field {
	prefix := [2]string{"l_", "r_"}[side]
	var fields []arrow.Field
	for _, f := range j.sideSchema(side).Fields() {
		fields = append(fields, arrow.Field{Name: prefix + f.Name, Type: f.Type})
	}
	uniqueStateNames(fields)
	return fields
}

// StateSlots declares the slots of the join's snapshot.
func (j *Join) StateSlots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: SlotJoinLeft, Values: append(j.rowFields(0), joinMetaFields...)},
		{Name: SlotJoinRight, Values: append(j.rowFields(1), joinMetaFields...)},
		{Name: SlotOperator, Raw: true, Values: []arrow.Field{{Name: "watermark", Type: arrow.PrimitiveTypes.Int64}}},
	}
}

// Snapshot writes both sides' live rows and the watermark into p, whose
// slots are StateSlots.
func (j *Join) Snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	for side, s := range j.sides {
		fields := j.rowFields(side)
		var live []int32
		for idx, dead := range s.dead {
			if !dead {
				live = append(live, int32(idx))
			}
		}
		for lo := 0; lo < len(live); lo += snapshotChunk {
			if err := j.snapshotRows(p, mem, maxParallelism, side, fields, live[lo:min(lo+snapshotChunk, len(live))]); err != nil {
				return err
			}
		}
	}
	wm := int64Col(mem, 1, func(int) int64 { return j.wm })
	defer wm.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
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
	groups, err := keyGroups(keys, n, maxPar)
	if err != nil {
		return err
	}
	if j.cfg.Interval != nil {
		vals["time"] = int64Col(mem, n, func(k int) int64 { return s.ts[refs[k]] })
	}
	vals["matches"] = int64Col(mem, n, func(k int) int64 { return int64(s.matches[refs[k]]) })
	vals["arrival"] = int64Col(mem, n, func(k int) int64 { return int64(refs[k]) })
	return p.WriteSlot(checkpoint.SlotRows{Slot: joinSlots[side], KeyGroups: groups, Keys: RenderKeys(keys, n), Values: vals})
}

// Restore loads the rows of the parts' join rows whose key group owns
// accepts (nil: all), and the watermark, into an empty join. A side's rows
// keep their arrival order.
func (j *Join) Restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if len(j.sides[0].rowB)+len(j.sides[1].rowB) > 0 || j.wm != math.MinInt64 {
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
		rows, err := stateSlotRows(rec, owns, SlotJoinLeft, SlotJoinRight, SlotOperator)
		if err != nil {
			return err
		}
		if sel := rows[SlotOperator]; len(sel) > 0 {
			sc := newStateCols(rec, sel, mem)
			wm, err := sc.int64s("watermark")
			if err == nil {
				j.wm = max(j.wm, slices.Max(wm))
			}
			sc.release()
			if err != nil {
				return fmt.Errorf("operator row: %w", err)
			}
		}
	}
	for side, slot := range joinSlots {
		fields := append(j.rowFields(side), joinMetaFields...)
		cols, err := slotColumns(p, slot, owns, mem, fields, "arrival")
		if err == nil && cols != nil {
			err = j.restoreSide(side, cols)
			releaseAll(cols)
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
	ids := slices.Clone(j.tbl.lookup(make([]int64, m), nil, keys, m))
	j.growKeys()
	b := vector.New(array.NewRecordBatch(schema, cols[:nc], int64(m)))
	defer b.Release()
	s := j.sides[side]
	var run []int32
	for r, id := range ids {
		idx := s.store(b, int32(r), id, -1)
		j.keyRows[id]++
		s.matches[idx] = int32(matches[r])
		if j.cfg.Interval != nil {
			s.ts[idx] = ts[r]
			run = append(run, idx)
		}
	}
	s.addRun(run)
	return nil
}
