package window

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
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

// groupRun is a window's share of a snapshot's list of groups: the next
// n groups of the list have these window bounds and fired flag.
type groupRun struct {
	start, end int64
	fired      bool
	n          int
}

// stateGroups lists the live groups in output order, with their key ids
// and their windows.
func (w *Agg) stateGroups() (gids, kids []int32, runs []groupRun) {
	if s := w.sess; s != nil {
		for g := 0; g < s.used; g++ {
			if s.live[g] {
				gids = append(gids, int32(g))
			}
		}
		slices.SortFunc(gids, s.firingOrder)
		for _, g := range gids {
			kids = append(kids, s.kid[g])
			runs = append(runs, groupRun{start: s.start[g], end: s.end[g], fired: s.fired[g], n: 1})
		}
		return
	}
	n := 0
	for _, win := range w.wins {
		n += len(win.gids)
	}
	if p := w.inc.spare.Swap(nil); p != nil && cap(*p) >= n {
		gids = (*p)[:0] // the list of a snapshot written since
	} else {
		gids = make([]int32, 0, n)
	}
	runs = make([]groupRun, 0, len(w.wins))
	for _, win := range w.wins {
		from := len(gids)
		gids = append(gids, win.gids...)
		if win.unsorted {
			w.sortBySeq(gids[from:])
		}
		runs = append(runs, groupRun{start: win.start, end: win.end, fired: win.fired, n: len(win.gids)})
	}
	return gids, gids, runs
}

func (w *Agg) seqOf(g int32) int64 {
	if w.sess != nil {
		return w.sess.seq[g]
	}
	return *w.gseq.At(g)
}

// snapshot writes the aggregate's state into p, whose slots are
// stateSlots, synchronously (sessions; tests).
func (w *Agg) snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	gids, kids, runs := w.stateGroups()
	c := w.capture(mem, w.liveSource(), gids, kids, runs)
	c.build()
	return c.write(p, maxParallelism)
}

// stateSource is what a capture reads the groups' keys, order and
// accumulators from: the live state, or a frozen copy of it.
type stateSource struct {
	keys   []hash.KeyCol
	states []agg.State
	seq    func(g int32) int64
	seqs   *column.Chunked[int64] // when set, seq reads it
}

func (w *Agg) liveSource() stateSource {
	return stateSource{keys: w.tbl.Keys, states: w.aggs.States, seq: w.seqOf}
}

// frozenSource freezes the state under h (copy-on-write: O(chunks), the
// aggregate goes on and copies a chunk when it first writes it); ok is
// false, with nothing frozen, when an accumulator cannot be frozen.
func (w *Agg) frozenSource(h *column.Hold) (src stateSource, ok bool) {
	states, ok := w.aggs.Freeze(h)
	if !ok {
		return src, false
	}
	seq := w.gseq.Freeze(h)
	return stateSource{keys: w.tbl.FreezeKeys(h), states: states, seqs: &seq}, true
}

// captured is the state of a snapshot's groups at a barrier: what the
// asynchronous half of a snapshot writes while the aggregate goes on.
// Either its chunks are built (copies taken at the barrier), or they are
// built while writing from a frozen source, whose hold write releases.
type captured struct {
	keyNames []string
	mem      memory.Allocator
	src      stateSource
	prefixes []string // of each state's fields
	hold     *column.Hold
	spare    *atomic.Pointer[[]int32] // takes gids back once written
	gids     []int32
	kids     []int32
	runs     []groupRun
	chunks   []capturedChunk
	wm       int64
	seq      int64
	tombs    checkpoint.Tombstones // windows gone since the delta's base
}

type capturedChunk struct {
	n            int
	keys         []arrow.Array
	names        []string // value column of each array in vals
	vals         []arrow.Array
	starts, ends []int64
}

func (ch *capturedChunk) release() {
	column.ReleaseAll(ch.keys)
	column.ReleaseAll(ch.vals)
}

func (c *captured) release() {
	for i := range c.chunks {
		c.chunks[i].release()
	}
	c.chunks = nil
	c.hold.Release()
	if c.spare != nil && cap(c.gids) > 0 {
		g := c.gids
		c.spare.Store(&g)
	}
	c.gids, c.kids = nil, nil
}

// capture describes groups gids (key ids kids, windows runs) of src.
func (w *Agg) capture(mem memory.Allocator, src stateSource, gids, kids []int32, runs []groupRun) *captured {
	c := &captured{wm: w.wm, seq: w.seq, mem: mem, src: src, gids: gids, kids: kids, runs: runs}
	for i := range w.tbl.Keys {
		c.keyNames = append(c.keyNames, w.keyFieldName(i))
	}
	for i := range w.aggs.States {
		c.prefixes = append(c.prefixes, w.statePrefix(i))
	}
	return c
}

// build copies every chunk out of the source.
func (c *captured) build() {
	c.each(func(ch capturedChunk) error {
		c.chunks = append(c.chunks, ch)
		return nil
	})
}

// each builds the groups' keys, order, fired flags and accumulators into
// arrays, in chunks of opstate.ChunkRows groups, and hands each to fn,
// which owns it.
func (c *captured) each(fn func(capturedChunk) error) error {
	r, used := 0, 0 // the run of the next group, and its groups before it
	var fired []bool
	for lo := 0; lo < len(c.gids); lo += opstate.ChunkRows {
		hi := min(lo+opstate.ChunkRows, len(c.gids))
		g, n := c.gids[lo:hi], hi-lo
		ch := capturedChunk{n: n, starts: make([]int64, 0, n), ends: make([]int64, 0, n)}
		fired = fired[:0]
		for len(ch.starts) < n {
			for used == c.runs[r].n {
				r, used = r+1, 0
			}
			run := c.runs[r]
			k := min(run.n-used, n-len(ch.starts))
			for range k {
				ch.starts = append(ch.starts, run.start)
				ch.ends = append(ch.ends, run.end)
				fired = append(fired, run.fired)
			}
			used += k
		}
		mem := c.mem
		for _, col := range c.src.keys {
			ch.keys = append(ch.keys, col.Build(mem, c.kids[lo:hi]))
		}
		add := func(name string, a arrow.Array) {
			ch.names = append(ch.names, name)
			ch.vals = append(ch.vals, a)
		}
		if seqs := c.src.seqs; seqs != nil {
			o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, n)
			for j, id := range g {
				o.Vals[j] = *seqs.At(id)
			}
			add("seq", o.Finish())
		} else {
			seq := c.src.seq
			add("seq", column.Int64(mem, n, func(j int) int64 { return seq(g[j]) }))
		}
		fb := column.NewBool(mem, n)
		for j, f := range fired {
			if f {
				bitutil.SetBit(fb.Bits, j)
			}
		}
		add("fired", fb.Finish())
		for i, st := range c.src.states {
			fields := st.StateFields(c.prefixes[i])
			for j, a := range st.StateColumns(mem, g) {
				add(fields[j].Name, a)
			}
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
	return nil
}

// write writes the captured state into p (rows, tombstones, the operator
// row); it releases the captured arrays and the hold on a frozen source.
func (c *captured) write(p *checkpoint.PartWriter, maxPar int) error {
	defer c.release()
	writeChunk := func(ch capturedChunk) error {
		defer ch.release()
		hs, err := hash.KeyHashes(ch.keys, ch.n)
		if err != nil {
			return err
		}
		groups := make([]int32, ch.n)
		for k, h := range hs {
			groups[k] = checkpoint.KeyGroupOf(h, maxPar)
		}
		vals := make(map[string]arrow.Array, len(ch.keys)+len(ch.vals))
		for i, a := range ch.vals {
			vals[ch.names[i]] = a
		}
		for i, a := range ch.keys {
			vals[c.keyNames[i]] = a
		}
		keys := opstate.RenderKeyArray(memory.DefaultAllocator, ch.keys, ch.n)
		defer keys.Release()
		return p.WriteSlot(checkpoint.SlotRows{Slot: Slot, KeyGroups: groups, KeyArray: keys,
			Starts: ch.starts, Ends: ch.ends, Values: vals})
	}
	if c.chunks == nil { // built here, one chunk at a time
		pool := &chunkPool{mem: c.mem, free: map[int][][]byte{}}
		c.mem = pool
		defer pool.close()
	} else {
		for i, ch := range c.chunks {
			c.chunks[i] = capturedChunk{}
			if err := writeChunk(ch); err != nil {
				return err
			}
		}
	}
	if c.chunks == nil {
		if err := c.each(writeChunk); err != nil {
			return err
		}
	}
	if len(c.tombs.Starts) > 0 {
		if err := p.WriteTombstones(c.tombs); err != nil {
			return err
		}
	}
	mem := memory.DefaultAllocator
	wm := array.NewInt64Builder(mem)
	defer wm.Release()
	wm.Append(c.wm)
	wmArr := wm.NewArray()
	defer wmArr.Release()
	wm.Append(c.seq)
	seqArr := wm.NewArray()
	defer seqArr.Release()
	return p.WriteSlot(checkpoint.SlotRows{Slot: opstate.SlotOperator, KeyGroups: []int32{checkpoint.RawKeyGroup},
		Values: map[string]arrow.Array{"watermark": wmArr, "next_seq": seqArr}})
}

// chunkPool allocates the arrays of a snapshot built and written one chunk
// at a time: a buffer freed when a chunk is written is reused, as it is,
// for the next chunk's array of the same size (every array built from it
// writes all its bytes), so a snapshot allocates one chunk's buffers
// instead of every chunk's. Buffers come from mem and go back at close.
type chunkPool struct {
	mem    memory.Allocator
	mu     sync.Mutex
	free   map[int][][]byte
	closed bool
}

func (p *chunkPool) Allocate(n int) []byte {
	p.mu.Lock()
	if l := p.free[n]; len(l) > 0 {
		b := l[len(l)-1]
		p.free[n] = l[:len(l)-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	return p.mem.Allocate(n)
}

func (p *chunkPool) Reallocate(n int, b []byte) []byte {
	nb := p.Allocate(n)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *chunkPool) Free(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.mem.Free(b)
		return
	}
	p.free[len(b)] = append(p.free[len(b)], b)
}

func (p *chunkPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.free {
		for _, b := range l {
			p.mem.Free(b)
		}
	}
	p.free, p.closed = nil, true
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
		if sz := w.tbl.Size(); sz > w.gn {
			w.grow(sz)
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

// incState is what incremental snapshots of TUMBLE, HOP and CUMULATE
// windows track (sessions are snapshotted in full).
type incState struct {
	chains opstate.Chains
	mod    []uint32                // per group id: the epoch its accumulators last changed in
	fired  map[int64]uint32        // window end: epoch of the first snapshot that saw it fired
	known  map[int64]int64         // windows (end: start) of the last snapshot
	purged []purgedWindow          // windows gone since, with the epoch they went in
	spare  atomic.Pointer[[]int32] // a written snapshot's list of groups, for reuse

	// perEpoch[e-from] counts the live groups whose accumulators last
	// changed in epoch e (epochs before from no delta can build on), so
	// that a snapshot of a state that mostly changed knows it is full
	// without scanning the groups.
	perEpoch []int
	from     uint32
}

type purgedWindow struct {
	start, end int64
	epoch      uint32
}

// touch records that groups gids changed in the current epoch.
func (w *Agg) touch(gids []int32) {
	if w.sess != nil {
		return
	}
	inc := &w.inc
	if n := w.tbl.Size(); n > len(inc.mod) {
		inc.mod = slices.Grow(inc.mod, max(n, 2*len(inc.mod))-len(inc.mod))[:n]
	}
	e := inc.chains.Epoch()
	if inc.from == 0 {
		inc.from = e
	}
	for int(e-inc.from) >= len(inc.perEpoch) {
		inc.perEpoch = append(inc.perEpoch, 0)
	}
	mod, counts, from := inc.mod, inc.perEpoch, inc.from
	n := 0
	for _, g := range gids {
		if old := mod[g]; old != e {
			if old >= from {
				counts[old-from]--
			}
			n++
			mod[g] = e
		}
	}
	counts[e-from] += n
}

// untouch forgets the change epochs of groups gids, which are freed.
func (w *Agg) untouch(gids []int32) {
	inc := &w.inc
	for _, g := range gids {
		if int(g) < len(inc.mod) {
			if old := inc.mod[g]; old >= inc.from && old != 0 {
				inc.perEpoch[old-inc.from]--
			}
			inc.mod[g] = 0
		}
	}
}

// forget drops the counts of epochs up to oldest, which no delta builds
// on any more.
func (inc *incState) forget(oldest uint32) {
	if oldest < inc.from || inc.from == 0 {
		return
	}
	k := min(int(oldest-inc.from)+1, len(inc.perEpoch))
	inc.perEpoch = append(inc.perEpoch[:0], inc.perEpoch[k:]...)
	inc.from += uint32(k)
}

// SnapshotState writes the open windows' groups and the watermark. For
// TUMBLE, HOP and CUMULATE the state is frozen at the barrier
// (copy-on-write: the pause is a copy of the group list, not of the
// groups) and written asynchronously, as a delta (the groups changed since
// the newest complete checkpoint's snapshot and the windows gone since)
// when one is allowed and smaller than half the state. Accumulators that
// cannot be frozen (strings, DISTINCT) are copied at the barrier instead.
func (w *Agg) SnapshotState(s *op.Snapshot) error {
	if w.sess != nil {
		return opstate.Write(s, w.stateSlots(), w.snapshot)
	}
	mem := s.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	inc := &w.inc
	epoch := inc.chains.Epoch()
	if inc.fired == nil {
		inc.fired, inc.known = map[int64]uint32{}, map[int64]int64{}
	}
	live := make(map[int64]bool, len(w.wins))
	for _, win := range w.wins {
		live[win.end] = true
		inc.known[win.end] = win.start
		if _, ok := inc.fired[win.end]; win.fired && !ok {
			inc.fired[win.end] = epoch
		}
	}
	for end, start := range inc.known {
		if !live[end] {
			inc.purged = append(inc.purged, purgedWindow{start: start, end: end, epoch: epoch})
			delete(inc.known, end)
			delete(inc.fired, end)
		}
	}
	all, _, allRuns := w.stateGroups()
	gids, runs := all, allRuns
	base, chain, delta := inc.chains.Base(s)
	if delta {
		if sel, selRuns, ok := w.changedSince(base, all, allRuns); ok {
			gids, runs = sel, selRuns
		} else {
			chain = nil // as big as the state: write it whole and start a new chain
		}
	}
	p, delta, err := inc.chains.Open(s, w.stateSlots(), chain)
	if err != nil {
		return err
	}
	if !delta {
		gids, runs = all, allRuns
	}
	h := column.NewHold()
	src, frozen := w.frozenSource(h)
	if !frozen {
		src = w.liveSource()
	}
	c := w.capture(mem, src, gids, gids, runs)
	if len(all) > 0 {
		if len(gids) > 0 && &gids[0] == &all[0] {
			c.spare = &inc.spare // given back once written
		} else {
			inc.spare.Store(&all) // a delta holds a selection of it
		}
	}
	if frozen {
		c.hold = h
	} else {
		c.build()
	}
	if delta {
		for _, pw := range inc.purged {
			if pw.epoch > base {
				c.tombs.Starts = append(c.tombs.Starts, pw.start)
				c.tombs.Ends = append(c.tombs.Ends, pw.end)
			}
		}
		c.tombs.Slot = Slot
	}
	oldest := inc.chains.Oldest(s.Completed)
	inc.purged = slices.DeleteFunc(inc.purged, func(pw purgedWindow) bool { return pw.epoch <= oldest })
	inc.forget(oldest)
	maxPar := s.MaxParallelism
	return s.Async(func() error {
		err := c.write(p, maxPar)
		if cerr := p.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// changedSince selects, of groups all in windows runs, those changed
// since epoch base (every group of a window that fired since); ok is false
// when they are more than half.
func (w *Agg) changedSince(base uint32, all []int32, runs []groupRun) (sel []int32, selRuns []groupRun, ok bool) {
	inc := &w.inc
	half := len(all) / 2
	// Without a scan: the groups changed since base, and those of windows
	// fired since, are each at most how many the scan would select.
	if base+1 >= inc.from && inc.from > 0 {
		changed, fired := 0, 0
		for e := int(base + 1 - inc.from); e < len(inc.perEpoch); e++ {
			changed += inc.perEpoch[e]
		}
		for _, r := range runs {
			if inc.fired[r.end] > base {
				fired += r.n
			}
		}
		if max(changed, fired) > half {
			return nil, nil, false
		}
	}
	mod := inc.mod
	off := 0
	for _, r := range runs {
		whole := inc.fired[r.end] > base
		from := len(sel)
		for _, g := range all[off : off+r.n] {
			if whole || int(g) < len(mod) && mod[g] > base {
				if len(sel) == half {
					return nil, nil, false
				}
				sel = append(sel, g)
			}
		}
		if n := len(sel) - from; n > 0 {
			selRuns = append(selRuns, groupRun{start: r.start, end: r.end, fired: r.fired, n: n})
		}
		off += r.n
	}
	return sel, selRuns, true
}

// RestoreState loads the groups of the key groups this subtask owns. The
// next snapshot is full.
func (w *Agg) RestoreState(r *op.Restore) error {
	w.inc.chains.Reset()
	return w.restore(r.Parts, r.Owns, nil)
}
