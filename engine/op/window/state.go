package window

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
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/kernels/hash"
	"github.com/clink-dev/clink/vector"
)

// State slots of a window aggregate (docs/state-format.md): one keyed row
// per open (window, key) group — or per session — with the key's typed
// columns (key_<name>), the group's first appearance (seq, which orders
// the output), whether it fired (allowed lateness keeps fired windows) and
// the accumulators (agg_<column>_<what>); and one raw row with the
// operator's watermark and sequence counter.
const Slot = "window_agg"

func (w *Agg) keyFieldName(i int) string {
	name := w.cfg.Input.Field(w.cfg.Keys[i]).Name
	if w.cfg.KeyNames != nil {
		name = w.cfg.KeyNames[i]
	}
	return "key_" + name
}

func (w *Agg) statePrefix(i int) string {
	c := w.aggs.Cols[i]
	if c < 0 {
		return "agg_count_star_"
	}
	name := w.cfg.Input.Field(c).Name
	if _, ok := w.aggs.States[i].(*agg.DistinctState); ok {
		return "agg_" + name + "_distinct_"
	}
	return "agg_" + name + "_"
}

// stateSlots declares the slots of the aggregate's snapshot.
func (w *Agg) stateSlots() []checkpoint.Slot {
	var vals []arrow.Field
	for i, c := range w.cfg.Keys {
		vals = append(vals, arrow.Field{Name: w.keyFieldName(i), Type: w.cfg.Input.Field(c).Type})
	}
	vals = append(vals, arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "fired", Type: arrow.FixedWidthTypes.Boolean})
	for i, st := range w.aggs.States {
		vals = append(vals, st.StateFields(w.statePrefix(i))...)
	}
	return []checkpoint.Slot{
		{Name: Slot, Values: vals},
		{Name: opstate.SlotOperator, Raw: true, Values: []arrow.Field{
			{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
			{Name: "next_seq", Type: arrow.PrimitiveTypes.Int64}}},
	}
}

// stateGroups lists the live groups in output order, with their key ids,
// window bounds and whether they fired.
func (w *Agg) stateGroups() (gids, kids []int32, starts, ends []int64, fired []bool) {
	if s := w.sess; s != nil {
		for g := 0; g < s.used; g++ {
			if s.live[g] {
				gids = append(gids, int32(g))
			}
		}
		slices.SortFunc(gids, s.firingOrder)
		for _, g := range gids {
			kids = append(kids, s.kid[g])
			starts = append(starts, s.start[g])
			ends = append(ends, s.end[g])
			fired = append(fired, s.fired[g])
		}
		return
	}
	for _, win := range w.wins {
		from := len(gids)
		gids = append(gids, win.gids...)
		seq := w.gseq
		slices.SortFunc(gids[from:], func(a, b int32) int { return cmp.Compare(seq[a], seq[b]) })
		for range win.gids {
			starts = append(starts, win.start)
			ends = append(ends, win.end)
			fired = append(fired, win.fired)
		}
	}
	return gids, gids, starts, ends, fired
}

func (w *Agg) seqOf(g int32) int64 {
	if w.sess != nil {
		return w.sess.seq[g]
	}
	return w.gseq[g]
}

// snapshot writes the aggregate's state into p, whose slots are
// stateSlots.
func (w *Agg) snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	gids, kids, starts, ends, fired := w.stateGroups()
	for lo := 0; lo < len(gids); lo += opstate.ChunkRows {
		hi := min(lo+opstate.ChunkRows, len(gids))
		if err := w.snapshotChunk(p, mem, maxParallelism, gids[lo:hi], kids[lo:hi], starts[lo:hi], ends[lo:hi], fired[lo:hi]); err != nil {
			return err
		}
	}
	wm := array.NewInt64Builder(mem)
	defer wm.Release()
	wm.Append(w.wm)
	wmArr := wm.NewArray()
	defer wmArr.Release()
	wm.Append(w.seq)
	seqArr := wm.NewArray()
	defer seqArr.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: opstate.SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
		Values: map[string]arrow.Array{"watermark": wmArr, "next_seq": seqArr}})
}

func (w *Agg) snapshotChunk(p *checkpoint.PartWriter, mem memory.Allocator, maxPar int, gids, kids []int32, starts, ends []int64, fired []bool) error {
	n := len(gids)
	vals := map[string]arrow.Array{}
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	add := func(name string, a arrow.Array) {
		vals[name] = a
		owned = append(owned, a)
	}
	keys := make([]arrow.Array, len(w.tbl.Keys))
	for i, c := range w.tbl.Keys {
		keys[i] = c.Build(mem, kids)
		add(w.keyFieldName(i), keys[i])
	}
	hs, err := hash.KeyHashes(keys, n)
	if err != nil {
		return err
	}
	groups := make([]int32, n)
	for k, h := range hs {
		groups[k] = checkpoint.KeyGroupOf(h, maxPar)
	}
	add("seq", column.Int64(mem, n, func(j int) int64 { return w.seqOf(gids[j]) }))
	fb := array.NewBooleanBuilder(mem)
	fb.AppendValues(fired, nil)
	add("fired", fb.NewArray())
	fb.Release()
	for i, st := range w.aggs.States {
		fields := st.StateFields(w.statePrefix(i))
		for j, a := range st.StateColumns(mem, gids) {
			add(fields[j].Name, a)
		}
	}
	return p.WriteSlot(checkpoint.SlotRows{Slot: Slot, KeyGroups: groups, Keys: opstate.RenderKeys(keys, n),
		Starts: starts, Ends: ends, Values: vals})
}

// restore loads the groups of the parts' window_agg rows whose key group
// owns accepts (nil: all), and the operator row, into an empty aggregate.
func (w *Agg) restore(parts []*checkpoint.Part, owns func(int32) bool, mem memory.Allocator) error {
	if w.Groups() > 0 || w.seq > 0 {
		return fmt.Errorf("window aggregate: restore into a used aggregate")
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	for _, p := range parts {
		for _, rec := range p.Records {
			if err := w.restoreRecord(rec, owns, mem); err != nil {
				return fmt.Errorf("%s: %w", p.Path, err)
			}
		}
	}
	return nil
}

func (w *Agg) restoreRecord(rec arrow.RecordBatch, owns func(int32) bool, mem memory.Allocator) error {
	slot := rec.Column(0).(*array.String)
	kg := rec.Column(1).(*array.Int32)
	var sel []int32
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		switch slot.Value(i) {
		case opstate.SlotOperator:
			wm, err := column.ReadInt64(checkpoint.Column(rec, "watermark"))
			if err != nil {
				return fmt.Errorf("operator row: watermark: %w", err)
			}
			seq, err := column.ReadInt64(checkpoint.Column(rec, "next_seq"))
			if err != nil {
				return fmt.Errorf("operator row: next_seq: %w", err)
			}
			w.wm = max(w.wm, wm[i])
			w.seq = max(w.seq, seq[i])
		case Slot:
			if owns == nil || owns(kg.Value(i)) {
				sel = append(sel, int32(i))
			}
		default:
			return fmt.Errorf("row %d: unknown slot %q", i, slot.Value(i))
		}
	}
	if len(sel) == 0 {
		return nil
	}
	col := func(name string) (arrow.Array, error) {
		a := checkpoint.Column(rec, name)
		if a == nil {
			return nil, fmt.Errorf("no column %q", name)
		}
		if len(sel) == n {
			a.Retain()
			return a, nil
		}
		return vector.Take(mem, a, sel), nil
	}
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	get := func(name string) arrow.Array {
		a, err := col(name)
		if err != nil {
			return nil
		}
		owned = append(owned, a)
		return a
	}
	m := len(sel)
	keys := make([]arrow.Array, len(w.cfg.Keys))
	for i, c := range w.cfg.Keys {
		keys[i] = get(w.keyFieldName(i))
		if keys[i] == nil || !arrow.TypeEqual(keys[i].DataType(), w.cfg.Input.Field(c).Type) {
			return fmt.Errorf("key column %s: missing or of another type than %s", w.keyFieldName(i), w.cfg.Input.Field(c).Type)
		}
	}
	startA, endA := get(checkpoint.ColWindowStart), get(checkpoint.ColWindowEnd)
	seqs, err := column.ReadInt64(get("seq"))
	if err != nil {
		return fmt.Errorf("seq: %w", err)
	}
	firedA, _ := get("fired").(*array.Boolean)
	if firedA == nil {
		return fmt.Errorf("no boolean column fired")
	}
	starts, ends := startA.(*array.Int64).Int64Values(), endA.(*array.Int64).Int64Values()

	var gids []int32
	if w.sess != nil {
		gids = w.restoreSessions(keys, starts, ends, seqs, firedA, m)
	} else {
		ends := slices.Clone(ends)
		ids := slices.Clone(w.tbl.Lookup(ends, nil, keys, m))
		if len(w.tbl.NewIDs) != m {
			return fmt.Errorf("%d groups repeat a (window, key) of another row", m-len(w.tbl.NewIDs))
		}
		if sz := w.tbl.Size(); sz > len(w.gseq) {
			w.gseq = append(w.gseq, make([]int64, sz-len(w.gseq))...)
			w.aggs.Grow(sz)
		}
		order := make([]int, m)
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(seqs[a], seqs[b]) })
		for _, k := range order {
			w.register(ids[k], ends[k], seqs[k])
			if firedA.Value(k) {
				w.winByEnd[ends[k]].fired = true
			}
		}
		gids = ids
	}
	for i, st := range w.aggs.States {
		fields := st.StateFields(w.statePrefix(i))
		cols := make([]arrow.Array, len(fields))
		for j, f := range fields {
			if cols[j] = get(f.Name); cols[j] == nil {
				return fmt.Errorf("no state column %q", f.Name)
			}
		}
		if err := st.SetState(gids, cols); err != nil {
			return fmt.Errorf("state column %s…: %w", fields[0].Name, err)
		}
	}
	return nil
}

// restoreSessions recreates m sessions and returns their group ids.
func (w *Agg) restoreSessions(keys []arrow.Array, starts, ends, seqs []int64, fired *array.Boolean, m int) []int32 {
	s := w.sess
	zeros := make([]int64, m)
	kids := slices.Clone(w.tbl.Lookup(zeros, nil, keys, m))
	for len(s.head) < w.tbl.Size() {
		s.head = append(s.head, -1)
	}
	for _, id := range w.tbl.NewIDs {
		s.head[id] = -1
	}
	gids := make([]int32, m)
	for k, kid := range kids {
		g := s.alloc(w)
		s.start[g], s.end[g], s.seq[g] = starts[k], ends[k], seqs[k]
		s.kid[g] = kid
		s.live[g] = true
		s.fired[g] = fired.Value(k)
		s.next[g] = s.head[kid]
		s.head[kid] = g
		s.n++
		s.push(winSessItem{at: ends[k], gid: g, gen: s.gen[g]})
		gids[k] = g
	}
	return gids
}

// SnapshotState writes the open windows' groups and the watermark.
func (w *Agg) SnapshotState(s *op.Snapshot) error {
	return opstate.Write(s, w.stateSlots(), w.snapshot)
}

// RestoreState loads the groups of the key groups this subtask owns.
func (w *Agg) RestoreState(r *op.Restore) error {
	return w.restore(r.Parts, r.Owns, nil)
}
