package window

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/kernels/hash"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// Config configures a grouped window aggregation.
type Config struct {
	Input  *arrow.Schema
	Window kwindow.Spec
	// TimeCol is the event-time column: int64 epoch-ms or timestamp(ms).
	TimeCol int
	// Keys are the GROUP BY columns besides the window (int8/16/32/64,
	// float32/64, string, bool, date32, timestamp). NULL is a group of its
	// own; NaN groups with NaN and -0 with +0.
	Keys []int
	// KeyNames name the key output columns; nil: the input field names.
	KeyNames []string
	Aggs     []agg.Spec
	// MaxOutputRows caps the rows of each record Advance returns
	// (0: 8192, the engine's micro-batch size).
	MaxOutputRows int
	// AllowedLateness keeps a window's state for this many ms after it
	// fired: rows are late only when window end + AllowedLateness <= their
	// watermark (SESSION: ts + gap + AllowedLateness), and a row landing in
	// a fired window updates it (TakeUpdates returns the changelog).
	AllowedLateness int64
}

// Agg is a grouped window aggregation (TUMBLE, HOP, CUMULATE,
// SESSION) over event time, with DESIGN §3 semantics: per-row lateness
// against the row's own partition watermark, windows firing when the
// watermark reaches their end.
//
// Rows are processed column-wise: windows are assigned into a []int64 of
// window ends (HOP and CUMULATE expand to (row, window) entries), keys are
// hashed into a []uint64 one key column at a time, an open-addressing table
// that persists across batches maps each (window, key) entry to a dense
// int32 group id, and every accumulator then updates its typed columns in
// one loop over (gid[k], value[k]). Nothing on that path allocates per row,
// uses maps or calls through an interface per row.
//
// State is columnar and enumerable for snapshots: the table's ids with
// their window end and key columns (hash.Table), the open windows and their
// group ids in first-appearance order (wins), and the accumulator columns
// indexed by group id (aggs). For SESSION the table maps keys to key ids
// and sessions are groups of their own (winSessions).
type Agg struct {
	cfg    Config
	spec   kwindow.Spec
	mem    memory.Allocator
	schema *arrow.Schema
	tbl    *hash.Table
	aggs   *agg.Plan
	maxOut int
	colIDs []arrow.Type // expected type IDs of used input columns, by index

	wm       int64
	late     int64
	nullTime int64
	seq      int64 // entries consumed: orders groups by first appearance

	// TUMBLE/HOP/CUMULATE: group id == table id; the window end is part of
	// the table key and identifies the window for all three kinds.
	gseq     column.Chunked[int64] // per gid: seq of the entry that created it
	gn       int                   // gids gseq and the accumulators have room for
	wins     []*winWindow
	winByEnd map[int64]*winWindow
	lastWin  *winWindow
	curStart int64 // TUMBLE assignment cache: the last window seen
	curEnd   int64
	spare    []column.Mapped[int32] // group lists of freed windows, for reuse

	sess *winSessions

	// Scratch reused across calls.
	ends   []int64 // per entry: window end (SESSION: the row's ts)
	closed []int64 // SESSION, per entry: sessions ending at or before it are closed for the row
	rows   []int32 // per entry: physical row
	iota   []int32
	zeros  []int64
	cols   []arrow.Array
	fired  []int32
	fstart []int64
	fend   []int64

	updates []arrow.RecordBatch // -U/+U rows of fired windows (allowed lateness)
	ukinds  [][]vector.RowKind

	inc incState // incremental snapshots
}

// winWindow is one open TUMBLE/HOP/CUMULATE window.
type winWindow struct {
	start, end int64
	fired      bool                 // emitted once; kept open for allowed lateness
	gids       []int32              // creation order = first appearance, unless unsorted
	gmem       column.Mapped[int32] // holds gids
	lastSeq    int64
	unsorted   bool // a re-probed group was created out of order
}

// New validates cfg and returns an empty aggregation. mem
// allocates the output records.
func New(cfg Config, mem memory.Allocator) (*Agg, error) {
	if cfg.Input == nil {
		return nil, fmt.Errorf("window aggregate: no input schema")
	}
	if err := cfg.Window.Validate(); err != nil {
		return nil, fmt.Errorf("window aggregate: %w", err)
	}
	if cfg.AllowedLateness < 0 {
		return nil, fmt.Errorf("window aggregate: allowed lateness must not be negative")
	}
	nf := cfg.Input.NumFields()
	if cfg.TimeCol < 0 || cfg.TimeCol >= nf {
		return nil, fmt.Errorf("window aggregate: time column %d out of range [0,%d)", cfg.TimeCol, nf)
	}
	tf := cfg.Input.Field(cfg.TimeCol)
	if err := kwindow.CheckTimeType(tf.Type); err != nil {
		return nil, fmt.Errorf("window aggregate: column %q: %w", tf.Name, err)
	}
	if cfg.KeyNames != nil && len(cfg.KeyNames) != len(cfg.Keys) {
		return nil, fmt.Errorf("window aggregate: %d key names for %d keys", len(cfg.KeyNames), len(cfg.Keys))
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	w := &Agg{
		cfg:      cfg,
		spec:     cfg.Window,
		mem:      mem,
		maxOut:   cfg.MaxOutputRows,
		wm:       kwindow.NoWatermark,
		winByEnd: map[int64]*winWindow{},
		curStart: math.MaxInt64,
		curEnd:   math.MinInt64,
		colIDs:   make([]arrow.Type, nf),
	}
	if w.maxOut <= 0 {
		w.maxOut = 8192
	}
	for i := range w.colIDs {
		w.colIDs[i] = arrow.NULL
	}
	w.colIDs[cfg.TimeCol] = tf.Type.ID()

	fields := []arrow.Field{
		{Name: "window_start", Type: arrow.PrimitiveTypes.Int64},
		{Name: "window_end", Type: arrow.PrimitiveTypes.Int64},
	}
	keys := make([]hash.KeyCol, len(cfg.Keys))
	for i, c := range cfg.Keys {
		if c < 0 || c >= nf {
			return nil, fmt.Errorf("window aggregate: key %d: column %d out of range [0,%d)", i, c, nf)
		}
		f := cfg.Input.Field(c)
		kc, err := hash.NewKeyCol(f.Type)
		if err != nil {
			return nil, fmt.Errorf("window aggregate: key column %q: %w", f.Name, err)
		}
		keys[i] = kc
		w.colIDs[c] = f.Type.ID()
		name := f.Name
		if cfg.KeyNames != nil {
			name = cfg.KeyNames[i]
		}
		fields = append(fields, arrow.Field{Name: name, Type: f.Type, Nullable: f.Nullable})
	}
	plan, err := agg.NewPlan(cfg.Input, cfg.Aggs)
	if err != nil {
		return nil, fmt.Errorf("window aggregate: %w", err)
	}
	for _, c := range plan.Cols {
		if c >= 0 {
			w.colIDs[c] = cfg.Input.Field(c).Type.ID()
		}
	}
	w.aggs = plan
	w.schema = arrow.NewSchema(append(fields, plan.Fields...), nil)
	w.tbl = hash.NewTable(keys)
	w.cols = make([]arrow.Array, len(keys))
	if cfg.Window.Kind == kwindow.Session {
		w.sess = &winSessions{gap: cfg.Window.Gap}
	}
	return w, nil
}

// OutputSchema is window_start, window_end (int64), the key columns, then
// the aggregates.
func (w *Agg) OutputSchema() *arrow.Schema { return w.schema }

// Watermark is the last watermark passed to Advance.
func (w *Agg) Watermark() int64 { return w.wm }

// LateRows counts rows dropped as late from at least one of their windows
// (a HOP/CUMULATE row late for some windows still counts in the others).
func (w *Agg) LateRows() int64 { return w.late }

// NullTimeRows counts rows dropped because their event time was NULL.
func (w *Agg) NullTimeRows() int64 { return w.nullTime }

// Groups is the number of live (window, key) groups (sessions for SESSION).
func (w *Agg) Groups() int {
	if w.sess != nil {
		return w.sess.n
	}
	return w.tbl.N
}

func (w *Agg) check(b *vector.Batch) error {
	if b.Rec.NumCols() != int64(len(w.colIDs)) {
		return fmt.Errorf("window aggregate: batch has %d columns, schema has %d", b.Rec.NumCols(), len(w.colIDs))
	}
	for i, id := range w.colIDs {
		if id != arrow.NULL && b.Column(i).DataType().ID() != id {
			return fmt.Errorf("window aggregate: column %d (%s) is %s, want %s",
				i, w.cfg.Input.Field(i).Name, b.Column(i).DataType(), w.cfg.Input.Field(i).Type)
		}
	}
	if b.RowWatermark != nil && len(b.RowWatermark) != b.NumRows() {
		return fmt.Errorf("window aggregate: %d row watermarks for %d rows", len(b.RowWatermark), b.NumRows())
	}
	return nil
}

// Add folds the live rows of b into their windows. Rows with a NULL event
// time are dropped (NullTimeRows); a row is late for a window whose end is
// <= max(its RowWatermark, the current watermark) and is dropped from that
// window only. b stays owned by the caller.
func (w *Agg) Add(b *vector.Batch) error {
	if err := w.check(b); err != nil {
		return err
	}
	n := w.assign(b)
	if n == 0 {
		return nil
	}
	rows := w.rows[:n]
	if w.spec.Kind != kwindow.Hop && w.spec.Kind != kwindow.Cumulate && b.Sel == nil && n == b.NumRows() {
		rows = nil // every row is an entry, in order
	}
	for i, c := range w.cfg.Keys {
		w.cols[i] = b.Column(c)
	}
	if w.sess != nil {
		w.addSessions(b, rows, n)
		return nil
	}
	ids := w.tbl.Lookup(w.ends, rows, w.cols, n)
	if sz := w.tbl.Size(); sz > w.gn {
		w.grow(sz)
	}
	for j, id := range w.tbl.NewIDs {
		k := w.tbl.NewK[j]
		w.register(id, w.ends[k], w.seq+int64(k))
	}
	if w.cfg.AllowedLateness > 0 {
		w.addLate(b, ids, rows, n)
	} else {
		w.update(b, ids, rows)
	}
	w.seq += int64(n)
	return nil
}

// grow makes room for group ids < sz. gseq and the accumulators grow by
// chunks, which copy-on-write snapshots share (SnapshotState).
func (w *Agg) grow(sz int) {
	w.gseq.Grow(sz)
	w.aggs.Grow(sz)
	w.gn = sz
}

// addLate folds entries into their groups when windows may have fired
// (allowed lateness). An entry for a fired window is folded in on its own
// and queues its change: -U old and +U new values, or +I for a group the
// window did not have. One change per entry, in entry order, makes the
// changelog the same at any batch size.
func (w *Agg) addLate(b *vector.Batch, ids, rows []int32, n int) {
	var fresh map[int32]bool // groups this Add created, not emitted yet
	var win *winWindow
	seg := 0 // entries [seg, k) are not folded in yet
	for k := 0; k < n; k++ {
		if win == nil || win.end != w.ends[k] {
			win = w.winByEnd[w.ends[k]]
		}
		if !win.fired {
			continue
		}
		if seg < k {
			w.update(b, ids[seg:k], w.rowsOf(rows, seg, k, n))
		}
		seg = k + 1
		if fresh == nil {
			fresh = make(map[int32]bool, len(w.tbl.NewIDs))
			for _, id := range w.tbl.NewIDs {
				fresh[id] = true
			}
		}
		g := ids[k : k+1]
		st, en := []int64{win.start}, []int64{win.end}
		kind := vector.Insert
		if fresh[g[0]] {
			delete(fresh, g[0])
		} else {
			w.queueUpdates(g, g, st, en, []vector.RowKind{vector.UpdateBefore})
			kind = vector.UpdateAfter
		}
		w.update(b, g, []int32{w.rowOf(rows, k)})
		w.queueUpdates(g, g, st, en, []vector.RowKind{kind})
	}
	if seg < n {
		w.update(b, ids[seg:], w.rowsOf(rows, seg, n, n))
	}
}

// queueUpdates emits the current rows of groups gids (key ids kids) as
// changelog rows of the given kinds, for TakeUpdates.
func (w *Agg) queueUpdates(gids, kids []int32, starts, ends []int64, kinds []vector.RowKind) {
	off := 0
	for _, r := range w.emit(gids, kids, starts, ends) {
		w.updates = append(w.updates, r)
		w.ukinds = append(w.ukinds, kinds[off:off+int(r.NumRows())])
		off += int(r.NumRows())
	}
}

func (w *Agg) update(b *vector.Batch, gids []int32, rows []int32) {
	w.touch(gids)
	for i, st := range w.aggs.States {
		var arr arrow.Array
		if c := w.aggs.Cols[i]; c >= 0 {
			arr = b.Column(c)
		}
		st.Update(gids, arr, rows)
	}
}

// assign fills w.ends and w.rows with the batch's (row, window end)
// entries that are not late (SESSION: w.ends holds the row's time) and
// returns their number.
func (w *Agg) assign(b *vector.Batch) int {
	nrows := b.NumRows()
	live := b.Sel
	if live == nil {
		if len(w.iota) < nrows {
			w.iota = make([]int32, nrows)
			for i := range w.iota {
				w.iota[i] = int32(i)
			}
		}
		live = w.iota[:nrows]
	}
	tsArr := b.Column(w.cfg.TimeCol)
	tsv := arrow.GetValues[int64](tsArr.Data(), 1)
	var nullBM []byte
	nullOff := tsArr.Data().Offset()
	if tsArr.NullN() > 0 {
		nullBM = tsArr.NullBitmapBytes()
	}
	rwm := b.RowWatermark
	wm := w.wm
	sp := w.spec

	switch sp.Kind {
	case kwindow.Tumble, kwindow.Session:
		ends := column.Grow(w.ends, len(live))
		rows := column.Grow(w.rows, len(live))
		w.ends, w.rows = ends, rows
		j := 0
		if sp.Kind == kwindow.Session {
			closed := column.Grow(w.closed, len(live))
			w.closed = closed
			for _, r := range live {
				if nullBM != nil && !bitutil.BitIsSet(nullBM, nullOff+int(r)) {
					w.nullTime++
					continue
				}
				ts := tsv[r]
				lim := wm
				if rwm != nil && rwm[r] > lim {
					lim = rwm[r]
				}
				lim = w.lessLateness(lim)
				if ts+sp.Gap <= lim {
					w.late++
					continue
				}
				ends[j], rows[j], closed[j] = ts, r, lim
				j++
			}
			return j
		}
		cs, ce := w.curStart, w.curEnd
		for _, r := range live {
			if nullBM != nil && !bitutil.BitIsSet(nullBM, nullOff+int(r)) {
				w.nullTime++
				continue
			}
			ts := tsv[r]
			if ts < cs || ts >= ce {
				cs = kwindow.Align(ts, sp.Size, sp.Offset)
				ce = cs + sp.Size
			}
			lim := wm
			if rwm != nil && rwm[r] > lim {
				lim = rwm[r]
			}
			lim = w.lessLateness(lim)
			if ce <= lim {
				w.late++
				continue
			}
			ends[j], rows[j] = ce, r
			j++
		}
		w.curStart, w.curEnd = cs, ce
		return j

	case kwindow.Hop:
		ends, rows := w.ends[:0], w.rows[:0]
		for _, r := range live {
			if nullBM != nil && !bitutil.BitIsSet(nullBM, nullOff+int(r)) {
				w.nullTime++
				continue
			}
			ts := tsv[r]
			lim := wm
			if rwm != nil && rwm[r] > lim {
				lim = rwm[r]
			}
			lim = w.lessLateness(lim)
			last := kwindow.Align(ts, sp.Slide, sp.Offset) // latest start <= ts
			d := ts - last
			if d >= sp.Size {
				continue // size < slide: the row falls between windows
			}
			late := false
			// Starts last-m*slide for m < ceil((size-d)/slide), oldest first.
			for m := (sp.Size - d + sp.Slide - 1) / sp.Slide; m > 0; m-- {
				end := last - (m-1)*sp.Slide + sp.Size
				if end <= lim {
					late = true
					continue
				}
				ends = append(ends, end)
				rows = append(rows, r)
			}
			if late {
				w.late++
			}
		}
		w.ends, w.rows = ends, rows
		return len(ends)

	case kwindow.Cumulate:
		ends, rows := w.ends[:0], w.rows[:0]
		steps := sp.Size / sp.Step
		for _, r := range live {
			if nullBM != nil && !bitutil.BitIsSet(nullBM, nullOff+int(r)) {
				w.nullTime++
				continue
			}
			ts := tsv[r]
			lim := wm
			if rwm != nil && rwm[r] > lim {
				lim = rwm[r]
			}
			lim = w.lessLateness(lim)
			base := kwindow.Align(ts, sp.Size, sp.Offset)
			late := false
			for j := (ts-base)/sp.Step + 1; j <= steps; j++ {
				end := base + j*sp.Step
				if end <= lim {
					late = true
					continue
				}
				ends = append(ends, end)
				rows = append(rows, r)
			}
			if late {
				w.late++
			}
		}
		w.ends, w.rows = ends, rows
		return len(ends)
	}
	return 0
}

// sortBySeq orders gids by first appearance.
func (w *Agg) sortBySeq(gids []int32) {
	seq := &w.gseq
	slices.SortFunc(gids, func(a, b int32) int { return cmp.Compare(*seq.At(a), *seq.At(b)) })
}

// windowStart is the start of the TUMBLE/HOP/CUMULATE window ending at end.
func (w *Agg) windowStart(end int64) int64 {
	if w.spec.Kind == kwindow.Cumulate {
		return kwindow.Align(end-1, w.spec.Size, w.spec.Offset)
	}
	return end - w.spec.Size
}

func (w *Agg) register(id int32, end, seq int64) {
	win := w.lastWin
	if win == nil || win.end != end {
		win = w.winByEnd[end]
		if win == nil {
			// A window the watermark already passed (a row within the
			// allowed lateness opened it) counts as fired: its groups
			// are emitted as they change.
			win = &winWindow{start: w.windowStart(end), end: end, fired: end <= w.wm, lastSeq: math.MinInt64}
			if n := len(w.spare); n > 0 {
				win.gmem = w.spare[n-1]
				win.gids = win.gmem.S[:0]
				w.spare = w.spare[:n-1]
			}
			w.winByEnd[end] = win
			i, _ := slices.BinarySearchFunc(w.wins, end, func(x *winWindow, e int64) int { return cmp.Compare(x.end, e) })
			w.wins = slices.Insert(w.wins, i, win)
		}
		w.lastWin = win
	}
	if seq < win.lastSeq {
		win.unsorted = true
	}
	win.lastSeq = seq
	if len(win.gids) == cap(win.gids) { // double: append grows big lists by 1.25x
		m := column.NewMapped[int32](max(2*len(win.gids), 64))
		copy(m.S, win.gids)
		old := win.gmem
		win.gmem, win.gids = m, m.S[:len(win.gids)]
		old.Free()
	}
	win.gids = append(win.gids, id)
	*w.gseq.W(id) = seq
}

// Advance moves the watermark to wm (a smaller wm is ignored) and returns
// the rows of every window with end <= wm, ordered by window end, window
// start, then the group's first appearance, in records of at most
// MaxOutputRows rows. The state of those windows is freed. The caller owns
// the records. Advance(math.MaxInt64) is the end-of-input flush.
func (w *Agg) Advance(wm int64) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	err := w.advance(wm, func(r arrow.RecordBatch) error {
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// advance is Advance handing each record to emit as soon as it is built,
// so that firing a large window holds one output record at a time rather
// than the whole window's. emit owns the record, also when it fails; its
// error stops the firing.
func (w *Agg) advance(wm int64, emit func(arrow.RecordBatch) error) error {
	if wm <= w.wm {
		return nil
	}
	w.wm = wm
	if w.sess != nil {
		recs := w.fireSessions(wm)
		for i, r := range recs {
			if err := emit(r); err != nil {
				for _, r := range recs[i+1:] {
					r.Release()
				}
				return err
			}
		}
		return nil
	}
	L := w.cfg.AllowedLateness
	nf := 0 // windows the watermark reached: fire those not fired yet
	for nf < len(w.wins) && w.wins[nf].end <= wm {
		nf++
	}
	nfree := 0 // windows past their allowed lateness: free them
	for nfree < nf && w.wins[nfree].end <= w.lessLatenessOf(wm, L) {
		nfree++
	}
	// The fired windows' groups, in order, make records of maxOut rows
	// (a record may hold the end of one window and the start of the next).
	gids, starts, ends := w.fired[:0], w.fstart[:0], w.fend[:0]
	flush := func() error {
		defer func() { gids, starts, ends = gids[:0], starts[:0], ends[:0] }()
		for _, r := range w.emit(gids, gids, starts, ends) {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
	for _, win := range w.wins[:nf] {
		if win.fired {
			continue
		}
		win.fired = true
		if win.unsorted {
			w.sortBySeq(win.gids)
			win.unsorted = false
		}
		for rest := win.gids; len(rest) > 0; {
			n := min(len(rest), w.maxOut-len(gids))
			gids = append(gids, rest[:n]...)
			for range n {
				starts = append(starts, win.start)
				ends = append(ends, win.end)
			}
			rest = rest[n:]
			if len(gids) == w.maxOut {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(gids) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	w.fired, w.fstart, w.fend = gids, starts, ends
	if nfree == 0 {
		return nil
	}
	free := w.wins[0].gids
	if nfree > 1 {
		free = nil
		for _, win := range w.wins[:nfree] {
			free = append(free, win.gids...)
		}
	}
	w.untouch(free)
	w.aggs.Reset(free)
	w.tbl.Remove(free)
	for _, win := range w.wins[:nfree] {
		delete(w.winByEnd, win.end)
		w.spare = append(w.spare, win.gmem)
		if w.lastWin == win {
			w.lastWin = nil
		}
	}
	clear(w.wins[:nfree])
	w.wins = append(w.wins[:0], w.wins[nfree:]...)
	return nil
}

// lessLateness lowers a lateness limit by the allowed lateness.
func (w *Agg) lessLateness(lim int64) int64 {
	return w.lessLatenessOf(lim, w.cfg.AllowedLateness)
}

func (w *Agg) lessLatenessOf(lim, l int64) int64 {
	if l <= 0 || lim == math.MaxInt64 {
		return lim
	}
	if lim < math.MinInt64+l {
		return math.MinInt64
	}
	return lim - l
}

// TakeUpdates returns the changelog rows that the Adds since the last call
// caused in windows that had already fired (allowed lateness), in records
// of at most MaxOutputRows rows, and their kinds: for TUMBLE/HOP/CUMULATE
// -U old and +U new values, or +I for a group new to the window; for
// SESSION see lateSessionRow. nil without allowed lateness. The caller
// owns the records.
func (w *Agg) TakeUpdates() ([]arrow.RecordBatch, [][]vector.RowKind) {
	recs, kinds := w.updates, w.ukinds
	w.updates, w.ukinds = nil, nil
	if len(recs) < 2 {
		return recs, kinds
	}
	// Late rows come one change at a time: join them into fewer records.
	var outR []arrow.RecordBatch
	var outK [][]vector.RowKind
	for lo := 0; lo < len(recs); {
		hi, rows := lo+1, recs[lo].NumRows()
		for hi < len(recs) && rows+recs[hi].NumRows() <= int64(w.maxOut) {
			rows += recs[hi].NumRows()
			hi++
		}
		if hi == lo+1 {
			outR, outK = append(outR, recs[lo]), append(outK, kinds[lo])
			lo = hi
			continue
		}
		cols, err := winConcat(w.mem, recs[lo:hi], w.schema.NumFields())
		if err != nil { // cannot happen below 2 GiB of strings; keep them apart
			outR, outK = append(outR, recs[lo:hi]...), append(outK, kinds[lo:hi]...)
			lo = hi
			continue
		}
		var ks []vector.RowKind
		for i, r := range recs[lo:hi] {
			ks = append(ks, kinds[lo+i]...)
			r.Release()
		}
		outR = append(outR, array.NewRecordBatch(w.schema, cols, rows))
		outK = append(outK, ks)
		for _, a := range cols {
			a.Release()
		}
		lo = hi
	}
	return outR, outK
}

// winConcat concatenates the columns of recs.
func winConcat(mem memory.Allocator, recs []arrow.RecordBatch, ncols int) ([]arrow.Array, error) {
	cols := make([]arrow.Array, 0, ncols)
	parts := make([]arrow.Array, len(recs))
	for c := range ncols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			for _, a := range cols {
				a.Release()
			}
			return nil, err
		}
		cols = append(cols, a)
	}
	return cols, nil
}

// emit builds output records for groups gids with key ids kids.
func (w *Agg) emit(gids, kids []int32, starts, ends []int64) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	cols := make([]arrow.Array, w.schema.NumFields())
	for lo := 0; lo < len(gids); lo += w.maxOut {
		hi := min(lo+w.maxOut, len(gids))
		cols = cols[:0]
		cols = append(cols, winInt64Array(w.mem, starts[lo:hi]), winInt64Array(w.mem, ends[lo:hi]))
		for _, c := range w.tbl.Keys {
			cols = append(cols, c.Build(w.mem, kids[lo:hi]))
		}
		for _, o := range w.aggs.Outs {
			cols = append(cols, w.aggs.States[o.State].Build(w.mem, o.Func, gids[lo:hi]))
		}
		recs = append(recs, array.NewRecordBatch(w.schema, cols, int64(hi-lo)))
		for _, c := range cols {
			c.Release()
		}
	}
	return recs
}

func winInt64Array(mem memory.Allocator, v []int64) arrow.Array {
	o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(v))
	copy(o.Vals, v)
	return o.Finish()
}

// KeyColumns are the input columns of the group key (besides the window).
func (w *Agg) KeyColumns() []int { return append([]int(nil), w.cfg.Keys...) }

// OutputKeyColumns: the key columns follow window_start and window_end.
func (w *Agg) OutputKeyColumns() []int {
	out := make([]int, len(w.cfg.Keys))
	for i := range out {
		out[i] = 2 + i
	}
	return out
}

var (
	_ op.Operator         = (*Agg)(nil)
	_ op.WatermarkHandler = (*Agg)(nil)
	_ op.StatsReporter    = (*Agg)(nil)
	_ op.Stateful         = (*Agg)(nil)
	_ op.Keyed            = (*Agg)(nil)
	_ op.KeyedOutput      = (*Agg)(nil)
)

// Updating reports whether the output is a changelog: with allowed
// lateness, first firings are +I and late updates -U/+U.
func (w *Agg) Updating() bool { return w.cfg.AllowedLateness > 0 }

// Process folds the live rows into the open windows.
func (w *Agg) Process(b *vector.Batch, out op.Output) error {
	err := w.Add(b)
	b.Release()
	if err != nil {
		return err
	}
	// With allowed lateness, rows landing in fired windows update them.
	recs, kinds := w.TakeUpdates()
	for i, r := range recs {
		nb := vector.New(r)
		nb.Kinds = kinds[i]
		if err := out.Emit(nb); err != nil {
			for _, r := range recs[i+1:] {
				r.Release()
			}
			return err
		}
	}
	return nil
}

// OnWatermark emits the windows the watermark closed, then forwards it.
func (w *Agg) OnWatermark(wm int64, out op.Output) error {
	updating := w.Updating()
	err := w.advance(wm, func(r arrow.RecordBatch) error {
		nb := vector.New(r)
		if updating {
			nb.Kinds = make([]vector.RowKind, r.NumRows()) // all +I
		}
		return out.Emit(nb)
	})
	if err != nil {
		return err
	}
	return out.EmitWatermark(wm)
}

// Stats reports late rows and open groups.
func (w *Agg) Stats() map[string]int64 {
	return map[string]int64{
		"late_rows_dropped": w.LateRows(),
		"null_time_rows":    w.NullTimeRows(),
		"open_groups":       int64(w.Groups()),
	}
}
