package join

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/kernels/hash"
	"github.com/clink-dev/clink/kernels/rowstore"
	"github.com/clink-dev/clink/vector"
)

// Kind is the SQL join type.
type Kind uint8

const (
	Inner Kind = iota
	Left
	Right
	Full
)

func (k Kind) outer(side int) bool {
	return k == Full || (side == 0 && k == Left) || (side == 1 && k == Right)
}

// Interval makes a join an interval join: rows match only when
// right.time + Lower <= left.time <= right.time + Upper (inclusive bounds).
type Interval struct {
	LeftTime, RightTime int
	Lower, Upper        int64
}

// Config describes an equi-join of two streams.
type Config struct {
	Left, Right         *arrow.Schema
	LeftKeys, RightKeys []int
	Kind                Kind
	// Residual, when set, is evaluated on the joined row (left columns then
	// right columns); a pair matches only where it is TRUE.
	Residual kernels.Expr
	Interval *Interval
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
	cfg    Config
	mem    memory.Allocator
	tbl    *hash.Table
	sides  [2]*store
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

// New validates cfg.
func New(cfg Config, mem memory.Allocator) (*Join, error) {
	if len(cfg.LeftKeys) != len(cfg.RightKeys) || len(cfg.LeftKeys) == 0 {
		return nil, fmt.Errorf("join needs at least one equality between the two sides")
	}
	var keys []hash.KeyCol
	for i, lk := range cfg.LeftKeys {
		lt, rt := cfg.Left.Field(lk).Type, cfg.Right.Field(cfg.RightKeys[i]).Type
		if !arrow.TypeEqual(lt, rt) {
			return nil, fmt.Errorf("join keys %s and %s have different types (%s, %s)", cfg.Left.Field(lk).Name, cfg.Right.Field(cfg.RightKeys[i]).Name, kernels.SQLTypeName(lt), kernels.SQLTypeName(rt))
		}
		kc, err := hash.NewKeyCol(lt)
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
	j := &Join{cfg: cfg, mem: mem, tbl: hash.NewTable(keys), sides: [2]*store{newStore(cfg.Left), newStore(cfg.Right)}, schema: arrow.NewSchema(fields, nil), wm: math.MinInt64, scanKeys: true}
	for _, lk := range cfg.LeftKeys {
		j.scanKeys = j.scanKeys && scannable(cfg.Left.Field(lk).Type)
	}
	return j, nil
}

// OutputSchema is the left columns then the right columns.
func (j *Join) OutputSchema() *arrow.Schema { return j.schema }

// Updating reports whether the output holds retractions (regular outer
// joins).
func (j *Join) Updating() bool { return j.cfg.Interval == nil && j.cfg.Kind != Inner }

// LateRows counts interval-join rows dropped as late.
func (j *Join) LateRows() int64 { return j.late }

// StateRows is the number of rows held.
func (j *Join) StateRows() int {
	n := 0
	for _, s := range j.sides {
		n += s.live()
	}
	return n
}

// Close drops the stored rows. The join holds no Arrow memory (stored rows
// are copies), so this only lets the garbage collector have them early.
func (j *Join) Close() error {
	j.sides = [2]*store{newStore(j.cfg.Left), newStore(j.cfg.Right)}
	return nil
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
	rows, err := op.InsertRows(b, &j.iota, "joins")
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
			if tc.IsNull(int(r)) || (b.RowWatermark != nil && rowstore.TimeAt(tc, int(r)) <= b.RowWatermark[r]) {
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
	cols := b.Rec.Columns()
	var toKill []int32
	if len(padNow) > 0 {
		first := me.add(cols, padNow, nil, timeCol)
		for k := range padNow {
			idx := first + int32(k)
			toKill = append(toKill, idx)
			outs = append(outs, j.padded(side, idx))
		}
	}
	if len(keep) > 0 {
		n := len(keep)
		j.zeros = column.Grow(j.zeros, n)
		clear(j.zeros)
		j.cols = j.cols[:0]
		for _, c := range keyCols {
			j.cols = append(j.cols, b.Column(c))
		}
		var ids []int32
		if j.unindexed[side] {
			ids = j.tbl.Find(j.zeros, keep, j.cols, n) // the other side's keys
		} else {
			ids = j.tbl.Lookup(j.zeros, keep, j.cols, n)
		}
		j.growKeys()
		// Store first so that output rows are gathered from the stores.
		var first int32
		if j.unindexed[side] {
			first = me.add(cols, keep, nil, timeCol)
		} else {
			first = me.add(cols, keep, ids[:n], timeCol)
			for _, id := range ids[:n] {
				j.keyRows[id]++
			}
		}
		stored := make([]int32, n)
		for k := range stored {
			stored[k] = first + int32(k)
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
				for _, o := range j.scan(side, b, keep[k], me.ts.at(stored[k])) {
					pair(k, o)
				}
				continue
			}
			if id < 0 {
				continue
			}
			for o := other.head[id]; o >= 0; o = other.next.at(o) {
				if other.dead.at(o) {
					continue
				}
				if j.cfg.Interval != nil && !j.inInterval(side, me.ts.at(stored[k]), other.ts.at(o)) {
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
				if j.cfg.Interval == nil && j.cfg.Kind.outer(1-side) && other.matches.at(o) == 0 {
					retract := j.padded(1-side, o)
					retract.kind = vector.Delete
					outs = append(outs, retract)
				}
				*other.matches.ptr(o)++
				matched++
				outs = append(outs, pairs[pi])
				pi++
			}
			*me.matches.ptr(idx) += int32(matched)
			if matched == 0 && j.cfg.Interval == nil && j.cfg.Kind.outer(side) {
				outs = append(outs, j.padded(side, idx))
			}
		}
	}
	out, err := j.build(outs)
	for _, idx := range toKill {
		me.kill(idx)
	}
	if err != nil {
		return nil, err
	}
	if err := j.adapt(side); err != nil {
		if out != nil {
			out.Release()
		}
		return nil, err
	}
	return out, nil
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
// costs more than indexing would; results are the same either way. A
// partner that has sent nothing yet counts as silentPartner rows: q7's
// maximum comes only when the first window closes, and indexing the bids
// until then built a key per price of the window, while a partner that
// merely starts later than its side (one topic read before the other)
// sends rows long before.
const (
	unindexMinRows = 4096 // stored rows before a side may stop being indexed
	unindexRatio   = 64   // arrivals of the frequent side per rare-side row
	silentPartner  = 4096 // the rare side's arrivals while it has sent none
	reindexScans   = 16   // rows scanned per frequent-side arrival that re-index
)

// adapt decides whether side stays indexed after rows arrived on it.
func (j *Join) adapt(side int) error {
	if j.cfg.Interval == nil || !j.scanKeys {
		return nil
	}
	if j.arrivals[0]+j.arrivals[1] > 1<<20 {
		j.arrivals[0] /= 2
		j.arrivals[1] /= 2
		j.scanned /= 2
	}
	me := j.sides[side]
	switch {
	case !j.unindexed[side] && !j.unindexed[1-side] && me.live() >= unindexMinRows &&
		j.arrivals[side] >= unindexRatio*cmp.Or(j.arrivals[1-side], silentPartner):
		j.unindex(side)
	case j.unindexed[side] && j.scanned > reindexScans*j.arrivals[side]+1<<16:
		return j.reindex(side)
	}
	return nil
}

// unindex drops side's key lists and its rows' claims on the table's keys.
func (j *Join) unindex(side int) {
	s := j.sides[side]
	for idx := int32(0); idx < s.len(); idx++ {
		k := s.keyOf.at(idx)
		if k < 0 {
			continue
		}
		s.keyOf.set(idx, -1)
		if s.dead.at(idx) {
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

// reindex builds side's key lists again, in store order, from the stored
// key columns.
func (j *Join) reindex(side int) error {
	s := j.sides[side]
	keyCols := j.sideKeys(side)
	schema := j.sideSchema(side)
	var live []int32
	for idx := int32(0); idx < s.len(); idx++ {
		if !s.dead.at(idx) {
			live = append(live, idx)
		}
	}
	cols := make([]arrow.Array, len(keyCols))
	ends := make([]int64, min(len(live), opstate.ChunkRows))
	for lo := 0; lo < len(live); lo += opstate.ChunkRows {
		idxs := live[lo:min(lo+opstate.ChunkRows, len(live))]
		for i, c := range keyCols {
			a, err := s.gather(j.mem, schema.Field(c).Type, c, idxs)
			if err != nil {
				column.ReleaseAll(cols[:i])
				return err
			}
			cols[i] = a
		}
		clear(ends)
		ids := j.tbl.Lookup(ends, nil, cols, len(idxs))
		j.growKeys()
		for k, idx := range idxs {
			s.keyOf.set(idx, ids[k])
			s.link(idx, ids[k])
			j.keyRows[ids[k]]++
		}
		column.ReleaseAll(cols)
	}
	j.unindexed[side] = false
	j.scanned = 0
	return nil
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
	// One BIGINT key (q7's price) is compared on the stored values
	// directly, without the per-type dispatch of keysEqual.
	var want int64
	var single *fixedCol[int64]
	if len(mine) == 1 {
		if c, ok := b.Column(mine[0]).(*array.Int64); ok {
			want = c.Value(int(r))
			single, _ = other.cols[theirs[0]].(*fixedCol[int64])
		}
	}
	out := j.found[:0]
	for _, run := range other.runs {
		rows := run.rows[run.pos:]
		i, _ := slices.BinarySearchFunc(rows, lo, func(idx int32, t int64) int { return cmp.Compare(other.ts.at(idx), t) })
		// A run's rows came from one batch: they are in a chunk or two,
		// whose arrays are fetched once.
		ck := int32(-1)
		var ts *[chunkRows]int64
		var dead *[chunkRows]bool
		var vals *[chunkRows]int64
		for _, o := range rows[i:] {
			if k := o >> chunkBits; k != ck {
				ck, ts, dead = k, other.ts.c[k], other.dead.c[k]
				if single != nil {
					vals = single.vals.c[k]
				}
			}
			at := o & chunkMask
			if ts[at] > hi {
				break
			}
			j.scanned++
			if dead[at] {
				continue
			}
			if single != nil && vals[at] == want ||
				single == nil && other.keysEqual(o, theirs, b.Rec, int(r), mine) {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	j.found = out
	return out
}

// scannable reports whether a stored column of type t compares keys
// (valueCol.equal).
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

// growKeys extends the per-key columns to every id of the table.
func (j *Join) growKeys() {
	n := j.tbl.Size()
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
	j.tbl.Remove(j.freeKeys)
	j.freeKeys = j.freeKeys[:0]
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
				if s.matches.at(idx) == 0 {
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
			if k := s.keyOf.at(idx); k >= 0 {
				if j.keyRows[k]--; j.keyRows[k] == 0 {
					j.freeKeys = append(j.freeKeys, k)
				}
			}
		}
	}
	j.dropKeys()
	for _, s := range j.sides {
		s.compact()
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
	sel := kernels.SelectTrue(pred, cand)
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

var (
	_ op.BinaryOperator   = (*Join)(nil)
	_ op.WatermarkHandler = (*Join)(nil)
	_ op.StatsReporter    = (*Join)(nil)
	_ op.Closer           = (*Join)(nil)
	_ op.Stateful         = (*Join)(nil)
)

// ProcessSide joins a batch of one side with the other side's state.
func (j *Join) ProcessSide(side int, b *vector.Batch, out op.Output) error {
	res, err := j.Add(side, b)
	b.Release()
	if err != nil || res == nil {
		return err
	}
	return out.Emit(res)
}

// OnWatermark drops interval-join state no future row can reach (emitting
// unmatched outer rows), then forwards the watermark.
func (j *Join) OnWatermark(wm int64, out op.Output) error {
	res, err := j.Advance(wm)
	if err != nil {
		return err
	}
	if res != nil {
		if err := out.Emit(res); err != nil {
			return err
		}
	}
	return out.EmitWatermark(wm)
}

// Stats reports rows held and late rows dropped.
func (j *Join) Stats() map[string]int64 {
	return map[string]int64{"state_rows": int64(j.StateRows()), "late_rows_dropped": j.LateRows()}
}
