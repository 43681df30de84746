package kernels

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// JoinKind is the SQL join type.
type JoinKind uint8

const (
	JoinInner JoinKind = iota
	JoinLeft
	JoinRight
	JoinFull
)

func (k JoinKind) outer(side int) bool {
	return k == JoinFull || (side == 0 && k == JoinLeft) || (side == 1 && k == JoinRight)
}

// IntervalSpec makes a join an interval join: rows match only when
// right.time + Lower <= left.time <= right.time + Upper (inclusive bounds).
type IntervalSpec struct {
	LeftTime, RightTime int
	Lower, Upper        int64
}

// JoinConfig describes an equi-join of two streams.
type JoinConfig struct {
	Left, Right         *arrow.Schema
	LeftKeys, RightKeys []int
	Kind                JoinKind
	// Residual, when set, is evaluated on the joined row (left columns then
	// right columns); a pair matches only where it is TRUE.
	Residual Expr
	Interval *IntervalSpec
}

// Join is a streaming equi-join. Both inputs must be insert-only.
//
// Regular join: both sides keep every row; a row joins the other side's
// rows with the same key as it arrives. Inner joins emit inserts only;
// outer joins emit a null-padded row for a row without partner and retract
// it (-D) when a partner arrives, as Flink does.
//
// Interval join: a row joins only partners within the time bounds, and its
// state is dropped once the watermark shows no future partner can come (a
// left row when watermark >= left.time - Lower, a right row when watermark
// >= right.time + Upper). A row whose time is <= its partition's watermark
// before it is late: dropped and counted, so that results do not depend on
// batch boundaries or on how the inputs interleave. Outer interval joins
// emit the null-padded row when an unmatched row's state is dropped, so
// they emit inserts only.
type Join struct {
	cfg    JoinConfig
	mem    memory.Allocator
	tbl    *htTable
	sides  [2]*joinSide
	schema *arrow.Schema
	late   int64
	wm     int64 // highest watermark Advance saw
	gone   [2][]int32
	// keyRows counts the stored rows of each key id on both sides;
	// freeKeys are ids whose count fell to zero.
	keyRows  []int32
	freeKeys []int32
	// An interval join may stop indexing its frequent side (see adapt):
	// unindexed by side, arrivals (decayed) by side, rows scanned since,
	// and whether the key types allow it.
	unindexed [2]bool
	arrivals  [2]int64
	scanned   int64
	scanKeys  bool
	found     []int32

	zeros []int64
	cols  []arrow.Array
	iota  []int32
}

// joinSide is one input's retained rows. A stored row is an index into
// rowB/rowR (its batch and row there).
type joinSide struct {
	batches []arrow.RecordBatch
	liveIn  []int // live rows per batch
	rowB    []int32
	rowR    []int32
	ts      []int64
	matches []int32
	dead    []bool
	// Each key's stored rows, in store order, are a list: head and tail
	// by key id, next by row (-1 ends), keyOf by row (-1: none). Plain
	// int32 arrays, so the garbage collector has nothing to scan.
	head, tail  []int32
	next, keyOf []int32
	nDead       int
	// runs index an interval join's stored rows by time so that Advance
	// visits only the rows it drops: each run is the rows stored from one
	// input batch sorted by time and consumed from its front as the
	// watermark passes them; runs is a min-heap by the time of each run's
	// next row.
	runs []*joinRun
}

// joinRun is rows (store indices) in time order; rows[pos:] are pending.
type joinRun struct {
	rows []int32
	pos  int
}

// runTime is the time of a run's next row.
func (s *joinSide) runTime(r *joinRun) int64 { return s.ts[r.rows[r.pos]] }

// addRun indexes rows just stored by their time.
func (s *joinSide) addRun(rows []int32) {
	if len(rows) == 0 {
		return
	}
	if !slices.IsSortedFunc(rows, func(a, b int32) int { return cmp.Compare(s.ts[a], s.ts[b]) }) {
		slices.SortStableFunc(rows, func(a, b int32) int { return cmp.Compare(s.ts[a], s.ts[b]) })
	}
	s.runs = append(s.runs, &joinRun{rows: rows})
	s.siftUp(len(s.runs) - 1)
}

func (s *joinSide) siftUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.runTime(s.runs[p]) <= s.runTime(s.runs[i]) {
			return
		}
		s.runs[p], s.runs[i] = s.runs[i], s.runs[p]
		i = p
	}
}

func (s *joinSide) siftDown(i int) {
	n := len(s.runs)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.runTime(s.runs[r]) < s.runTime(s.runs[l]) {
			m = r
		}
		if s.runTime(s.runs[i]) <= s.runTime(s.runs[m]) {
			return
		}
		s.runs[i], s.runs[m] = s.runs[m], s.runs[i]
		i = m
	}
}

// expired appends to gone the live rows with time <= limit (taking them
// out of the runs), in store order.
func (s *joinSide) expired(limit int64, gone []int32) []int32 {
	from := len(gone)
	for len(s.runs) > 0 {
		r := s.runs[0]
		for r.pos < len(r.rows) && s.ts[r.rows[r.pos]] <= limit {
			if idx := r.rows[r.pos]; !s.dead[idx] {
				gone = append(gone, idx)
			}
			r.pos++
		}
		if r.pos < len(r.rows) {
			if s.siftDown(0); s.runTime(s.runs[0]) > limit {
				break
			}
			continue
		}
		last := len(s.runs) - 1
		s.runs[0] = s.runs[last]
		s.runs[last] = nil
		s.runs = s.runs[:last]
		if last > 0 {
			s.siftDown(0)
		}
	}
	slices.Sort(gone[from:])
	return gone
}

// remapRuns applies compact's index map to the runs.
func (s *joinSide) remapRuns(remap []int32) {
	kept := s.runs[:0]
	for _, r := range s.runs {
		rows := r.rows[:0]
		for _, idx := range r.rows[r.pos:] {
			if n := remap[idx]; n >= 0 {
				rows = append(rows, n)
			}
		}
		if len(rows) > 0 {
			r.rows, r.pos = rows, 0
			kept = append(kept, r)
		}
	}
	clear(s.runs[len(kept):])
	s.runs = kept
	for i := len(s.runs)/2 - 1; i >= 0; i-- {
		s.siftDown(i)
	}
}

// NewJoin validates cfg.
func NewJoin(cfg JoinConfig, mem memory.Allocator) (*Join, error) {
	if len(cfg.LeftKeys) != len(cfg.RightKeys) || len(cfg.LeftKeys) == 0 {
		return nil, fmt.Errorf("join needs at least one equality between the two sides")
	}
	var keys []htKeyCol
	for i, lk := range cfg.LeftKeys {
		lt, rt := cfg.Left.Field(lk).Type, cfg.Right.Field(cfg.RightKeys[i]).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, fmt.Errorf("join keys %s and %s have different types (%s, %s)", cfg.Left.Field(lk).Name, cfg.Right.Field(cfg.RightKeys[i]).Name, SQLTypeName(lt), SQLTypeName(rt))
		}
		kc, err := newHTKeyCol(lt)
		if err != nil {
			return nil, err
		}
		keys = append(keys, kc)
	}
	if iv := cfg.Interval; iv != nil && iv.Lower > iv.Upper {
		return nil, fmt.Errorf("interval join: lower bound %d ms is above upper bound %d ms", iv.Lower, iv.Upper)
	}
	fields := append(append([]arrow.Field{}, cfg.Left.Fields()...), cfg.Right.Fields()...)
	for i := range fields {
		fields[i].Nullable = true
	}
	j := &Join{cfg: cfg, mem: mem, tbl: newHTTable(keys), sides: [2]*joinSide{{}, {}}, schema: arrow.NewSchema(fields, nil), wm: math.MinInt64, scanKeys: true}
	for _, lk := range cfg.LeftKeys {
		j.scanKeys = j.scanKeys && scannable(cfg.Left.Field(lk).Type)
	}
	return j, nil
}

// OutputSchema is the left columns then the right columns.
func (j *Join) OutputSchema() *arrow.Schema { return j.schema }

// Updating reports whether the output holds retractions (regular outer
// joins).
func (j *Join) Updating() bool { return j.cfg.Interval == nil && j.cfg.Kind != JoinInner }

// LateRows counts interval-join rows dropped as late.
func (j *Join) LateRows() int64 { return j.late }

// StateRows is the number of rows held.
func (j *Join) StateRows() int {
	n := 0
	for _, s := range j.sides {
		n += len(s.rowB) - s.nDead
	}
	return n
}

// Close releases the retained batches.
func (j *Join) Close() {
	for _, s := range j.sides {
		for i, b := range s.batches {
			if b != nil {
				b.Release()
				s.batches[i] = nil
			}
		}
	}
}

// joinOut is one output row: stored rows of each side (-1 = NULLs).
type joinOut struct {
	kind        vector.RowKind
	left, right int32
}

// Add joins the live rows of b (from side 0 = left or 1 = right) with the
// other side and returns what they produce (nil for nothing). b stays owned
// by the caller.
func (j *Join) Add(side int, b *vector.Batch) (*vector.Batch, error) {
	rows, err := insertRows(b, &j.iota, "joins")
	if err != nil {
		return nil, err
	}
	keyCols := j.cfg.LeftKeys
	timeCol := -1
	if side == 1 {
		keyCols = j.cfg.RightKeys
	}
	if iv := j.cfg.Interval; iv != nil {
		timeCol = iv.LeftTime
		if side == 1 {
			timeCol = iv.RightTime
		}
	}
	// Drop rows that can never join: NULL keys (kept by an outer side) and
	// late rows of an interval join.
	var keep, padNow []int32
	for _, r := range rows {
		nullKey := false
		for _, c := range keyCols {
			if b.Column(c).IsNull(int(r)) {
				nullKey = true
			}
		}
		if timeCol >= 0 {
			tc := b.Column(timeCol)
			if tc.IsNull(int(r)) || (b.RowWatermark != nil && joinTime(tc, int(r)) <= b.RowWatermark[r]) {
				j.late++
				continue
			}
		}
		if nullKey {
			if j.cfg.Kind.outer(side) {
				padNow = append(padNow, r)
			}
			continue
		}
		keep = append(keep, r)
	}
	me, other := j.sides[side], j.sides[1-side]
	var outs []joinOut
	// Rows that can never match are padded at once (regular joins) or when
	// evicted (interval joins: they are not stored, so at once as well).
	var toKill []int32
	for _, r := range padNow {
		idx := me.store(b, r, -1, timeCol)
		toKill = append(toKill, idx)
		outs = append(outs, j.padded(side, idx))
	}
	if len(keep) > 0 {
		n := len(keep)
		j.zeros = winGrow(j.zeros, n)
		clear(j.zeros)
		j.cols = j.cols[:0]
		for _, c := range keyCols {
			j.cols = append(j.cols, b.Column(c))
		}
		var ids []int32
		if j.unindexed[side] {
			ids = j.tbl.find(j.zeros, keep, j.cols, n) // the other side's keys
		} else {
			ids = j.tbl.lookup(j.zeros, keep, j.cols, n)
		}
		j.growKeys()
		// Store first so that output rows are gathered from the stores.
		stored := make([]int32, n)
		for k, r := range keep {
			if j.unindexed[side] {
				stored[k] = me.store(b, r, -1, timeCol)
				continue
			}
			stored[k] = me.store(b, r, ids[k], timeCol)
			j.keyRows[ids[k]]++
		}
		if j.cfg.Interval != nil {
			me.addRun(slices.Clone(stored))
		}
		j.arrivals[side] += int64(n)
		// Candidate pairs, in row order.
		var pairs []joinOut
		pair := func(k int, o int32) {
			p := joinOut{kind: vector.Insert, left: stored[k], right: o}
			if side == 1 {
				p.left, p.right = o, stored[k]
			}
			pairs = append(pairs, p)
		}
		for k, id := range ids[:n] {
			if j.unindexed[1-side] {
				for _, o := range j.scan(side, b, keep[k], me.ts[stored[k]]) {
					pair(k, o)
				}
				continue
			}
			if id < 0 {
				continue
			}
			for o := other.head[id]; o >= 0; o = other.next[o] {
				if other.dead[o] {
					continue
				}
				if j.cfg.Interval != nil && !j.inInterval(side, me.ts[stored[k]], other.ts[o]) {
					continue
				}
				pair(k, o)
			}
		}
		if j.cfg.Residual != nil && len(pairs) > 0 {
			var err error
			if pairs, err = j.residual(pairs); err != nil {
				return nil, err
			}
		}
		// Outer-join bookkeeping, row by row.
		pi := 0
		for k := range ids[:n] {
			idx := stored[k]
			matched := 0
			for pi < len(pairs) && pairRow(pairs[pi], side) == idx {
				o := pairRow(pairs[pi], 1-side)
				if j.cfg.Interval == nil && j.cfg.Kind.outer(1-side) && other.matches[o] == 0 {
					retract := j.padded(1-side, o)
					retract.kind = vector.Delete
					outs = append(outs, retract)
				}
				other.matches[o]++
				matched++
				outs = append(outs, pairs[pi])
				pi++
			}
			me.matches[idx] += int32(matched)
			if matched == 0 && j.cfg.Interval == nil && j.cfg.Kind.outer(side) {
				outs = append(outs, j.padded(side, idx))
			}
		}
	}
	out, err := j.build(outs)
	for _, idx := range toKill {
		me.kill(idx)
	}
	j.adapt(side)
	return out, err
}

// An interval join whose sides arrive at very different rates (Nexmark
// q7: every bid against one maximum per window) does not index the
// frequent side by key: its rows are stored without a key list, it probes
// the other side's keys without inserting its own, and a row of the rare
// side finds its partners by scanning the frequent side's rows of its time
// interval (the time-sorted runs) for equal keys. That replaces a hash
// insert, a list link and a key removal per frequent row by one key compare
// per row of the interval per rare row. The choice follows the arrival
// counts (decayed) and the scanning work, and switches back when scanning
// costs more than indexing would; results are the same either way.
const (
	unindexMinRows = 4096 // stored rows before a side may stop being indexed
	unindexRatio   = 64   // arrivals of the frequent side per rare-side row
	reindexScans   = 16   // rows scanned per frequent-side arrival that re-index
)

// adapt decides whether side stays indexed after rows arrived on it.
func (j *Join) adapt(side int) {
	if j.cfg.Interval == nil || !j.scanKeys {
		return
	}
	if j.arrivals[0]+j.arrivals[1] > 1<<20 {
		j.arrivals[0] /= 2
		j.arrivals[1] /= 2
		j.scanned /= 2
	}
	me := j.sides[side]
	switch {
	case !j.unindexed[side] && !j.unindexed[1-side] && len(me.rowB)-me.nDead >= unindexMinRows &&
		j.arrivals[1-side] > 0 && j.arrivals[side] >= unindexRatio*j.arrivals[1-side]:
		j.unindex(side)
	case j.unindexed[side] && j.scanned > reindexScans*j.arrivals[side]+1<<16:
		j.reindex(side)
	}
}

// unindex drops side's key lists and its rows' claims on the table's keys.
func (j *Join) unindex(side int) {
	s := j.sides[side]
	for idx, k := range s.keyOf {
		if k < 0 {
			continue
		}
		s.keyOf[idx] = -1
		if s.dead[idx] {
			continue
		}
		if j.keyRows[k]--; j.keyRows[k] == 0 {
			j.freeKeys = append(j.freeKeys, k)
		}
	}
	for k := range s.head {
		s.head[k], s.tail[k] = -1, -1
	}
	j.dropKeys()
	j.unindexed[side] = true
	j.scanned = 0
}

// reindex builds side's key lists again, in store order.
func (j *Join) reindex(side int) {
	s := j.sides[side]
	keyCols := j.sideKeys(side)
	for from := 0; from < len(s.rowB); {
		to := from
		for to < len(s.rowB) && s.rowB[to] == s.rowB[from] {
			to++
		}
		var rows, idxs []int32
		for idx := from; idx < to; idx++ {
			if !s.dead[idx] {
				rows = append(rows, s.rowR[idx])
				idxs = append(idxs, int32(idx))
			}
		}
		if len(rows) > 0 {
			rec := s.batches[s.rowB[from]]
			cols := make([]arrow.Array, len(keyCols))
			for i, c := range keyCols {
				cols[i] = rec.Column(c)
			}
			ends := make([]int64, len(rows))
			ids := j.tbl.lookup(ends, rows, cols, len(rows))
			j.growKeys()
			for k, idx := range idxs {
				s.keyOf[idx] = ids[k]
				s.link(idx, ids[k])
				j.keyRows[ids[k]]++
			}
		}
		from = to
	}
	j.unindexed[side] = false
	j.scanned = 0
}

// scan finds the partners of row r of b (arriving on side, at time ts)
// among the other, unindexed side's live rows: those of its interval with
// equal keys, in store order.
func (j *Join) scan(side int, b *vector.Batch, r int32, ts int64) []int32 {
	iv := j.cfg.Interval
	lo, hi := satAdd(ts, iv.Lower), satAdd(ts, iv.Upper) // right row: left times
	if side == 0 {
		lo, hi = satAdd(ts, -iv.Upper), satAdd(ts, -iv.Lower) // left row: right times
	}
	other := j.sides[1-side]
	mine, theirs := j.sideKeys(side), j.sideKeys(1-side)
	// One BIGINT key (q7's price) is compared on the values directly: a
	// run holds the rows of one input batch, so its column is resolved
	// once per run.
	var want int64
	single := false
	if len(mine) == 1 {
		if c, ok := b.Column(mine[0]).(*array.Int64); ok {
			want, single = c.Value(int(r)), true
		}
	}
	out := j.found[:0]
	for _, run := range other.runs {
		rows := run.rows[run.pos:]
		i, _ := slices.BinarySearchFunc(rows, lo, func(idx int32, t int64) int { return cmp.Compare(other.ts[idx], t) })
		vb, vals := int32(-1), []int64(nil)
		for _, o := range rows[i:] {
			if other.ts[o] > hi {
				break
			}
			j.scanned++
			if other.dead[o] {
				continue
			}
			if single && other.rowB[o] != vb {
				vb, vals = other.rowB[o], other.batches[other.rowB[o]].Column(theirs[0]).(*array.Int64).Int64Values()
			}
			if single && vals[other.rowR[o]] == want ||
				!single && keysEqual(other.batches[other.rowB[o]], int(other.rowR[o]), theirs, b.Rec, int(r), mine) {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	j.found = out
	return out
}

// keysEqual compares the key columns of two rows (same types, no NULLs)
// as the hash table does: integers and times by value, floats by bits,
// strings by bytes.
func keysEqual(a arrow.RecordBatch, ia int, acols []int, b arrow.RecordBatch, ib int, bcols []int) bool {
	for k, ac := range acols {
		switch x := a.Column(ac).(type) {
		case *array.Int64:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Int64).Value(ib) {
				return false
			}
		case *array.Int32:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Int32).Value(ib) {
				return false
			}
		case *array.Int16:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Int16).Value(ib) {
				return false
			}
		case *array.Int8:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Int8).Value(ib) {
				return false
			}
		case *array.Timestamp:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Timestamp).Value(ib) {
				return false
			}
		case *array.Float64:
			if math.Float64bits(x.Value(ia)) != math.Float64bits(b.Column(bcols[k]).(*array.Float64).Value(ib)) {
				return false
			}
		case *array.Float32:
			if math.Float32bits(x.Value(ia)) != math.Float32bits(b.Column(bcols[k]).(*array.Float32).Value(ib)) {
				return false
			}
		case *array.String:
			if x.Value(ia) != b.Column(bcols[k]).(*array.String).Value(ib) {
				return false
			}
		case *array.Boolean:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Boolean).Value(ib) {
				return false
			}
		case *array.Decimal128:
			if x.Value(ia) != b.Column(bcols[k]).(*array.Decimal128).Value(ib) {
				return false
			}
		default:
			panic(fmt.Sprintf("join key of type %s in a scan", x.DataType()))
		}
	}
	return true
}

// scannable reports whether keysEqual compares every key type of t.
func scannable(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT32, arrow.FLOAT64, arrow.STRING, arrow.BOOL, arrow.DECIMAL128:
		return true
	}
	return false
}

func pairRow(p joinOut, side int) int32 {
	if side == 0 {
		return p.left
	}
	return p.right
}

func (j *Join) padded(side int, idx int32) joinOut {
	if side == 0 {
		return joinOut{kind: vector.Insert, left: idx, right: -1}
	}
	return joinOut{kind: vector.Insert, left: -1, right: idx}
}

// inInterval checks right.time + Lower <= left.time <= right.time + Upper.
func (j *Join) inInterval(side int, mine, theirs int64) bool {
	l, r := mine, theirs
	if side == 1 {
		l, r = theirs, mine
	}
	iv := j.cfg.Interval
	return r+iv.Lower <= l && l <= r+iv.Upper
}

func joinTime(a arrow.Array, i int) int64 {
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i)
	case *array.Timestamp:
		return int64(c.Value(i))
	}
	panic(fmt.Sprintf("join time column of type %s", a.DataType()))
}

// store retains row r of b and returns its index.
func (s *joinSide) store(b *vector.Batch, r int32, key int32, timeCol int) int32 {
	if len(s.batches) == 0 || s.batches[len(s.batches)-1] != b.Rec {
		b.Rec.Retain()
		s.batches = append(s.batches, b.Rec)
		s.liveIn = append(s.liveIn, 0)
	}
	bi := int32(len(s.batches) - 1)
	s.liveIn[bi]++
	idx := int32(len(s.rowB))
	s.rowB = append(s.rowB, bi)
	s.rowR = append(s.rowR, r)
	s.matches = append(s.matches, 0)
	s.dead = append(s.dead, false)
	var ts int64
	if timeCol >= 0 {
		ts = joinTime(b.Column(timeCol), int(r))
	}
	s.ts = append(s.ts, ts)
	s.next = append(s.next, -1)
	s.keyOf = append(s.keyOf, key)
	if key >= 0 {
		s.link(idx, key)
	}
	return idx
}

// link appends stored row idx to its key's list.
func (s *joinSide) link(idx, key int32) {
	if t := s.tail[key]; t >= 0 {
		s.next[t] = idx
	} else {
		s.head[key] = idx
	}
	s.tail[key] = idx
}

// growKeys extends the per-key columns to every id of the table.
func (j *Join) growKeys() {
	n := j.tbl.size()
	for len(j.keyRows) < n {
		j.keyRows = append(j.keyRows, 0)
	}
	for _, s := range j.sides {
		for len(s.head) < n {
			s.head = append(s.head, -1)
			s.tail = append(s.tail, -1)
		}
	}
}

// dropKeys removes keys without stored rows on either side from the table
// (their ids are reused), so that an interval join's table follows its
// live keys.
func (j *Join) dropKeys() {
	if len(j.freeKeys) == 0 {
		return
	}
	for _, s := range j.sides {
		for _, k := range j.freeKeys {
			s.head[k], s.tail[k] = -1, -1
		}
	}
	j.tbl.remove(j.freeKeys)
	j.freeKeys = j.freeKeys[:0]
}

// kill marks a stored row dead and releases its batch when none of its
// rows is alive.
func (s *joinSide) kill(idx int32) {
	if s.dead[idx] {
		return
	}
	s.dead[idx] = true
	s.nDead++
	bi := s.rowB[idx]
	s.liveIn[bi]--
	if s.liveIn[bi] == 0 && s.batches[bi] != nil {
		s.batches[bi].Release()
		s.batches[bi] = nil
	}
}

// Advance moves an interval join's watermark: rows no future partner can
// reach are dropped, outer sides emitting their unmatched rows.
func (j *Join) Advance(wm int64) (*vector.Batch, error) {
	j.wm = max(j.wm, wm)
	iv := j.cfg.Interval
	if iv == nil {
		return nil, nil
	}
	var outs []joinOut
	var gone [2][]int32
	for side, s := range j.sides {
		limit := satAdd(wm, iv.Lower) // left rows: time - Lower <= wm
		if side == 1 {
			limit = satAdd(wm, -iv.Upper) // right rows: time + Upper <= wm
		}
		gone[side] = s.expired(limit, j.gone[side][:0])
		j.gone[side] = gone[side]
		if j.cfg.Kind.outer(side) {
			for _, idx := range gone[side] {
				if s.matches[idx] == 0 {
					outs = append(outs, j.padded(side, idx))
				}
			}
		}
	}
	out, err := j.build(outs)
	if err != nil {
		return nil, err
	}
	for side, s := range j.sides {
		for _, idx := range gone[side] {
			s.kill(idx)
			if k := s.keyOf[idx]; k >= 0 {
				if j.keyRows[k]--; j.keyRows[k] == 0 {
					j.freeKeys = append(j.freeKeys, k)
				}
			}
		}
	}
	j.dropKeys()
	for _, s := range j.sides {
		if remap := s.compact(); remap != nil {
			s.remapRuns(remap)
		}
	}
	return out, nil
}

// satAdd is a + b, saturating at the int64 range (watermarks run from
// MinInt64 to MaxInt64).
func satAdd(a, b int64) int64 {
	c := a + b
	if b > 0 && c < a {
		return math.MaxInt64
	}
	if b < 0 && c > a {
		return math.MinInt64
	}
	return c
}

// compact rebuilds the store without its dead rows once they dominate, so
// a long-running join's memory follows its live state. It returns the map
// from old to new row indices (-1 = dropped), or nil when nothing moved;
// key lists are remapped here, other holders of indices remap themselves.
func (s *joinSide) compact() []int32 {
	if s.nDead < 4096 || s.nDead*2 < len(s.rowB) {
		return nil
	}
	remap := make([]int32, len(s.rowB))
	n := int32(0)
	for i := range s.rowB {
		if s.dead[i] {
			remap[i] = -1
			continue
		}
		remap[i] = n
		s.rowB[n], s.rowR[n], s.ts[n], s.matches[n], s.dead[n], s.keyOf[n] = s.rowB[i], s.rowR[i], s.ts[i], s.matches[i], false, s.keyOf[i]
		n++
	}
	s.rowB, s.rowR, s.ts, s.matches, s.dead, s.keyOf, s.next = s.rowB[:n], s.rowR[:n], s.ts[:n], s.matches[:n], s.dead[:n], s.keyOf[:n], s.next[:n]
	s.nDead = 0
	// Relink the key lists (store order is kept).
	for k := range s.head {
		s.head[k], s.tail[k] = -1, -1
	}
	for i, k := range s.keyOf {
		s.next[i] = -1
		if k >= 0 {
			s.link(int32(i), k)
		}
	}
	// Drop released batches from the front of the batch list.
	drop := 0
	for drop < len(s.batches) && s.batches[drop] == nil {
		drop++
	}
	if drop > 0 {
		s.batches = append(s.batches[:0], s.batches[drop:]...)
		s.liveIn = append(s.liveIn[:0], s.liveIn[drop:]...)
		for i := range s.rowB {
			s.rowB[i] -= int32(drop)
		}
	}
	return remap
}

// residual keeps the pairs whose joined row satisfies the condition.
func (j *Join) residual(pairs []joinOut) ([]joinOut, error) {
	cand, err := j.build(pairs)
	if err != nil {
		return nil, err
	}
	defer cand.Release()
	pred, err := j.cfg.Residual.Eval(cand, j.mem)
	if err != nil {
		return nil, err
	}
	sel := SelectTrue(pred, cand)
	pred.Release()
	if sel == nil {
		return pairs, nil
	}
	kept := make([]joinOut, 0, len(sel))
	for _, i := range sel {
		kept = append(kept, pairs[i])
	}
	return kept, nil
}

// build gathers output rows from the two stores.
func (j *Join) build(outs []joinOut) (*vector.Batch, error) {
	if len(outs) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, 0, j.schema.NumFields())
	refs := make([]int32, len(outs))
	for side, s := range j.sides {
		for k, o := range outs {
			refs[k] = pairRow(o, side)
		}
		schema := j.cfg.Left
		if side == 1 {
			schema = j.cfg.Right
		}
		for c := range schema.Fields() {
			arr, err := s.gather(j.mem, schema.Field(c).Type, c, refs)
			if err != nil {
				for _, a := range cols {
					a.Release()
				}
				return nil, err
			}
			cols = append(cols, arr)
		}
	}
	rec := array.NewRecordBatch(j.schema, cols, int64(len(outs)))
	for _, c := range cols {
		c.Release()
	}
	b := vector.New(rec)
	if j.Updating() {
		b.Kinds = make([]vector.RowKind, len(outs))
		for k, o := range outs {
			b.Kinds[k] = o.kind
		}
	}
	return b, nil
}

// gather builds column c from stored rows refs (-1 = NULL).
func (s *joinSide) gather(mem memory.Allocator, t arrow.DataType, c int, refs []int32) (arrow.Array, error) {
	bld := array.NewBuilder(mem, t)
	defer bld.Release()
	bld.Reserve(len(refs))
	switch t.ID() {
	case arrow.INT8:
		joinGatherFixed[int8](s, bld, c, refs)
	case arrow.INT16:
		joinGatherFixed[int16](s, bld, c, refs)
	case arrow.INT32:
		joinGatherFixed[int32](s, bld, c, refs)
	case arrow.INT64:
		joinGatherFixed[int64](s, bld, c, refs)
	case arrow.FLOAT32:
		joinGatherFixed[float32](s, bld, c, refs)
	case arrow.FLOAT64:
		joinGatherFixed[float64](s, bld, c, refs)
	case arrow.TIMESTAMP:
		joinGatherFixed[arrow.Timestamp](s, bld, c, refs)
	case arrow.STRING:
		joinGather[string](s, bld, c, refs)
	case arrow.BOOL:
		joinGather[bool](s, bld, c, refs)
	default:
		if t.ID() == arrow.DECIMAL128 {
			joinGatherAny(s, bld, c, refs)
			break
		}
		return nil, fmt.Errorf("join: columns of type %s are not supported", t)
	}
	return bld.NewArray(), nil
}

// joinGatherFixed gathers a fixed-width column: raw values are read from
// each batch's buffer and appended in one bulk call.
func joinGatherFixed[T arrow.FixedWidthType](s *joinSide, bld array.Builder, c int, refs []int32) {
	vals := make([]T, len(refs))
	var valid []bool
	// Raw value slices per batch, fetched once: a probe's partners span many
	// batches.
	raws := make([][]T, len(s.batches))
	arrs := make([]arrow.Array, len(s.batches))
	markNull := func(k int) {
		if valid == nil {
			valid = make([]bool, len(refs))
			for i := 0; i < k; i++ {
				valid[i] = true
			}
		}
	}
	for k, ref := range refs {
		if ref < 0 {
			markNull(k)
			continue
		}
		bi := s.rowB[ref]
		raw := raws[bi]
		if raw == nil {
			arrs[bi] = s.batches[bi].Column(c)
			raw = arrow.GetValues[T](arrs[bi].Data(), 1)
			raws[bi] = raw
		}
		r := s.rowR[ref]
		if a := arrs[bi]; a.NullN() > 0 && a.IsNull(int(r)) {
			markNull(k)
			continue
		}
		vals[k] = raw[r]
		if valid != nil {
			valid[k] = true
		}
	}
	bld.(interface{ AppendValues([]T, []bool) }).AppendValues(vals, valid)
}

func joinGather[T any](s *joinSide, bld array.Builder, c int, refs []int32) {
	app := bld.(interface{ Append(T) })
	var cur int32 = -1
	var arr interface {
		Value(int) T
		IsNull(int) bool
	}
	for _, ref := range refs {
		if ref < 0 {
			bld.AppendNull()
			continue
		}
		if bi := s.rowB[ref]; bi != cur {
			cur = bi
			arr = s.batches[bi].Column(c).(interface {
				Value(int) T
				IsNull(int) bool
			})
		}
		r := int(s.rowR[ref])
		if arr.IsNull(r) {
			bld.AppendNull()
		} else {
			app.Append(arr.Value(r))
		}
	}
}

func joinGatherAny(s *joinSide, bld array.Builder, c int, refs []int32) {
	for _, ref := range refs {
		if ref < 0 {
			bld.AppendNull()
			continue
		}
		arr := s.batches[s.rowB[ref]].Column(c)
		r := int(s.rowR[ref])
		if arr.IsNull(r) {
			bld.AppendNull()
			continue
		}
		if err := bld.AppendValueFromString(arr.ValueStr(r)); err != nil {
			bld.AppendNull()
		}
	}
}
