package checkpoint

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Incremental checkpoints (docs/state-format.md#incremental-checkpoints).
//
// An operator subtask may write a delta part instead of a full one: the
// rows that changed since the part it builds on, and tombstones for what
// went away. The manifest lists the delta with its chain — a full part of
// an earlier checkpoint and the deltas after it — whose files stay in the
// directories of the checkpoints that wrote them. Reading the subtask's
// state (Checkpoint.ReadPart) reads the chain and merges it, so restores
// and the state tools see one part, as if it had been written in full.
//
// A keyed row is identified by (slot, key, window): a newer row replaces
// an older one with the same identity. Raw rows are operator-wide and each
// delta carries all of them: the newest part's raw rows are the state's.

// DeltaPart creates the part of one operator subtask as a delta on chain:
// the parts, oldest (full) first, of the subtask's state in the complete
// checkpoint the delta builds on, that checkpoint's own part last. Every
// file of the chain must exist; else the caller writes a full part.
func (w *Writer) DeltaPart(operator string, subtask int, slots []Slot, chain []PartInfo) (*PartWriter, error) {
	if len(chain) == 0 {
		return nil, fmt.Errorf("checkpoint %d: operator %s: a delta needs the chain it builds on", w.id, operator)
	}
	for k, c := range chain {
		if c.Operator != operator || c.Subtask != subtask || c.Checkpoint == 0 || c.Checkpoint >= w.id || c.Delta != (k > 0) || len(c.Chain) > 0 {
			return nil, fmt.Errorf("checkpoint %d: operator %s subtask %d: chain[%d] (%s of checkpoint %d) does not belong to its chain", w.id, operator, subtask, k, c.File, c.Checkpoint)
		}
		name := joinName(chkName(c.Checkpoint), c.File)
		path := w.store.fs.Path(name)
		size, err := w.store.fs.Stat(name)
		if err != nil || size != c.Bytes {
			return nil, fmt.Errorf("checkpoint %d: operator %s subtask %d: chain part %s is gone or changed", w.id, operator, subtask, path)
		}
	}
	l, err := newDeltaLayout(slots)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %d: operator %s: %w", w.id, operator, err)
	}
	p, err := w.part(operator, subtask, l)
	if err != nil {
		return nil, err
	}
	p.info.Delta = true
	p.info.Chain = slices.Clone(chain)
	return p, nil
}

// Info is the part's manifest entry once it is closed (ok false before).
// Its Checkpoint is set, so that a later delta can name it in its chain.
func (p *PartWriter) Info() (info PartInfo, ok bool) {
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	if !p.done || p.err != nil {
		return PartInfo{}, false
	}
	info = p.info
	info.Checkpoint = p.w.id
	info.Chain = nil
	return info, true
}

// Chain is the chain a later delta on this part names: this part's chain
// and the part itself (ok false while the part is not closed).
func (p *PartWriter) Chain() (chain []PartInfo, ok bool) {
	info, ok := p.Info()
	if !ok {
		return nil, false
	}
	p.w.mu.Lock()
	chain = append(slices.Clone(p.info.Chain), info)
	p.w.mu.Unlock()
	return chain, true
}

// Tombstones delete rows of Slot from the parts before a delta: the rows
// whose window is one of Starts/Ends (nil: any window) and, with Keys,
// whose key is Keys[i] (nil: any key) in key group KeyGroups[i].
type Tombstones struct {
	Slot         string
	KeyGroups    []int32 // with Keys
	Keys         []string
	Starts, Ends []int64
}

// WriteTombstones writes deletions into a delta part: one row per window
// (Keys nil) or per key (with that key's window when Starts is set).
func (p *PartWriter) WriteTombstones(t Tombstones) error {
	if !p.layout.delta {
		return p.fail(fmt.Errorf("checkpoint: %s: tombstones in a full part", p.path))
	}
	n := len(t.Keys)
	if t.Keys == nil {
		n = len(t.Starts)
	}
	if (t.Keys != nil && len(t.KeyGroups) != n) || (t.Starts != nil && (len(t.Starts) != n || len(t.Ends) != n)) {
		return p.fail(fmt.Errorf("checkpoint: %s: tombstones of slot %q: columns of different lengths", p.path, t.Slot))
	}
	if n == 0 {
		return nil
	}
	if _, ok := p.layout.index[t.Slot]; !ok || t.Slot == TombstoneSlot {
		return p.fail(fmt.Errorf("checkpoint: %s: tombstones of undeclared slot %q", p.path, t.Slot))
	}
	kgs := t.KeyGroups
	if kgs == nil {
		kgs = make([]int32, n)
		for i := range kgs {
			kgs[i] = RawKeyGroup
		}
	}
	of := repeated(p.w.store.opts.Allocator, t.Slot, n)
	defer of.Release()
	return p.WriteSlot(SlotRows{Slot: TombstoneSlot, KeyGroups: kgs, Keys: t.Keys, Starts: t.Starts, Ends: t.Ends,
		Values: map[string]arrow.Array{ColTombstoneFor: of}})
}

// mergeChain merges the parts of one subtask's chain, oldest first, into
// one part that reads as a full one: the newest row of each identity, no
// row a later tombstone deletes, the newest part's raw rows. The parts are
// released.
func mergeChain(parts []*Part) (*Part, error) {
	head := parts[len(parts)-1]
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	l, err := newLayout(head.Slots[:len(head.Slots)-1])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", head.Path, err)
	}
	md := head.Schema.Metadata()
	var keys, vals []string
	for i, k := range md.Keys() {
		if k != MetaDelta {
			keys, vals = append(keys, k), append(vals, md.Values()[i])
		}
	}
	meta := arrow.NewMetadata(keys, vals)
	schema := l.schema(&meta)
	out := &Part{Path: head.Path, Operator: head.Operator, Subtask: head.Subtask, CheckpointID: head.CheckpointID,
		MaxParallelism: head.MaxParallelism, Slots: l.slots, Schema: schema}
	seen := map[string]struct{}{}
	tombs := map[string]*tombSet{} // by slot, from the parts newer than the one being read
	rawDone := map[string]bool{}   // raw slots a newer part had
	var id []byte
	// Newest first: a row is kept when no newer part has its identity or
	// deletes it.
	for pi := len(parts) - 1; pi >= 0; pi-- {
		p := parts[pi]
		var newTombs []tombstone
		rawHere := map[string]bool{}
		for _, rec := range p.Records {
			slot := rec.Column(0).(*array.String)
			kg := rec.Column(1).(*array.Int32)
			key := rec.Column(2).(*array.String)
			ws := rec.Column(3).(*array.Int64)
			we := rec.Column(4).(*array.Int64)
			n := int(rec.NumRows())
			keep := make([]bool, n)
			var forCol *array.String
			if a := Column(rec, ColTombstoneFor); a != nil {
				forCol, _ = a.(*array.String)
			}
			for i := 0; i < n; i++ {
				name := slot.Value(i)
				if name == TombstoneSlot {
					if forCol == nil || forCol.IsNull(i) {
						return nil, fileErr(p.Path, ErrCorrupt, "tombstone row %d names no slot", i)
					}
					t := tombstone{slot: forCol.Value(i), hasKey: key.IsValid(i), hasWin: ws.IsValid(i)}
					if t.hasKey {
						t.key = key.Value(i)
					}
					if t.hasWin {
						t.win = [2]int64{ws.Value(i), we.Value(i)}
					}
					newTombs = append(newTombs, t)
					continue
				}
				if kg.Value(i) == RawKeyGroup {
					if !rawDone[name] {
						keep[i] = true
						rawHere[name] = true
					}
					continue
				}
				k := key.Value(i)
				id = identity(id[:0], name, k, ws, we, i)
				if _, dup := seen[string(id)]; dup {
					continue
				}
				if tombs[name].deletes(k, ws, we, i) {
					continue
				}
				seen[string(id)] = struct{}{}
				keep[i] = true
			}
			r, err := project(rec, keep, schema)
			if err != nil {
				return nil, fileErr(p.Path, ErrCorrupt, "%v", err)
			}
			if r != nil {
				out.Records = append(out.Records, r)
			}
		}
		for name := range rawHere {
			rawDone[name] = true
		}
		for _, t := range newTombs {
			ts := tombs[t.slot]
			if ts == nil {
				ts = &tombSet{}
				tombs[t.slot] = ts
			}
			ts.add(t)
		}
	}
	// Oldest rows first, as a full part would hold them.
	slices.Reverse(out.Records)
	return out, nil
}

// tombstone is one deletion of a delta: rows of slot with key (any when
// !hasKey) and window (any when !hasWin).
type tombstone struct {
	slot   string
	key    string
	hasKey bool
	win    [2]int64
	hasWin bool
}

// tombSet holds the tombstones of one slot.
type tombSet struct {
	all     bool
	windows map[[2]int64]bool
	keys    map[string]bool
	keyWins map[string]map[[2]int64]bool
}

func (s *tombSet) add(t tombstone) {
	switch {
	case !t.hasKey && !t.hasWin:
		s.all = true
	case !t.hasKey:
		if s.windows == nil {
			s.windows = map[[2]int64]bool{}
		}
		s.windows[t.win] = true
	case !t.hasWin:
		if s.keys == nil {
			s.keys = map[string]bool{}
		}
		s.keys[t.key] = true
	default:
		if s.keyWins == nil {
			s.keyWins = map[string]map[[2]int64]bool{}
		}
		if s.keyWins[t.key] == nil {
			s.keyWins[t.key] = map[[2]int64]bool{}
		}
		s.keyWins[t.key][t.win] = true
	}
}

// deletes reports whether row i, of key and window ws/we, is deleted.
func (s *tombSet) deletes(key string, ws, we *array.Int64, i int) bool {
	if s == nil {
		return false
	}
	if s.all || s.keys[key] {
		return true
	}
	if !ws.IsValid(i) {
		return false
	}
	w := [2]int64{ws.Value(i), we.Value(i)}
	return s.windows[w] || s.keyWins[key][w]
}

func identity(b []byte, slot, key string, ws, we *array.Int64, i int) []byte {
	b = binary.AppendUvarint(b, uint64(len(slot)))
	b = append(b, slot...)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	if ws.IsValid(i) {
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint64(b, uint64(ws.Value(i)))
		b = binary.LittleEndian.AppendUint64(b, uint64(we.Value(i)))
	}
	return b
}

// project keeps the rows of rec marked in keep, as a record of schema
// (rec's columns by name; its extra tombstone column is dropped). nil when
// no row is kept.
func project(rec arrow.RecordBatch, keep []bool, schema *arrow.Schema) (arrow.RecordBatch, error) {
	var runs [][2]int
	for i := 0; i < len(keep); {
		if !keep[i] {
			i++
			continue
		}
		j := i
		for j < len(keep) && keep[j] {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	if len(runs) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	rows := 0
	for _, r := range runs {
		rows += r[1] - r[0]
	}
	for c, f := range schema.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("a part of the chain lacks column %q", f.Name)
		}
		src := rec.Column(idx[0])
		if !arrow.TypeEqual(src.DataType(), f.Type) {
			return nil, fmt.Errorf("column %q is %s in one part of the chain and %s in another", f.Name, src.DataType(), f.Type)
		}
		if len(runs) == 1 {
			cols[c] = array.NewSlice(src, int64(runs[0][0]), int64(runs[0][1]))
			continue
		}
		pieces := make([]arrow.Array, len(runs))
		for k, r := range runs {
			pieces[k] = array.NewSlice(src, int64(r[0]), int64(r[1]))
		}
		a, err := array.Concatenate(pieces, memory.DefaultAllocator)
		for _, p := range pieces {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
		cols[c] = a
	}
	return array.NewRecordBatch(schema, cols, int64(rows)), nil
}
