package window

import (
	"cmp"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// winSessions is the SESSION state. The hash table maps group keys to key
// ids; each key id heads a linked list of its live sessions (usually one),
// and each session is a group id with its own interval and accumulators.
// A row's interval [ts, ts+gap) joins every session of its key that it
// overlaps or touches; joining two sessions merges their accumulators. A
// min-heap of deadlines finds the sessions a watermark fires (at their end)
// or frees (at end + allowed lateness, once fired); its entries are checked
// lazily (a merged-away or freed session's generation no longer matches, a
// session whose deadline moved later is pushed back with the new one).
//
// With allowed lateness a fired session stays live until the watermark
// passes its end + lateness. Invariant between calls: a session is fired
// (its last emitted row equals its current bounds and values) exactly when
// its end <= the watermark. A row that changes a fired session, or opens
// or extends a session to an end the watermark already passed, is handled
// on its own (lateSessionRow) and emits its changelog immediately.
type winSessions struct {
	gap int64

	head []int32 // per key id: first live session, -1 if none

	// per session gid
	next  []int32
	kid   []int32
	start []int64
	end   []int64
	seq   []int64 // first appearance of any of its rows
	gen   []uint32
	live  []bool
	fired []bool  // emitted; kept for allowed lateness
	fwd   []int32 // merged into (during one Add), -1 otherwise
	used  int     // gids ever handed out
	free  []int32
	n     int // live sessions

	heap   []winSessItem
	merged []int32
	gids   []int32
	repush []winSessItem
	empty  []int32
	fire   []int32
	freed  []int32
	olds   []int32
	one    [2][1]int32 // a single (gid, row) entry
}

// winSessItem is a heap entry: at is when the session needs a look (its
// end while it has not fired, end + allowed lateness after).
type winSessItem struct {
	at  int64
	gid int32
	gen uint32
}

func (s *winSessions) alloc(w *Agg) int32 {
	if n := len(s.free); n > 0 {
		g := s.free[n-1]
		s.free = s.free[:n-1]
		return g
	}
	if s.used == len(s.start) {
		c := max(64, 2*len(s.start))
		grow := c - len(s.start)
		s.next = append(s.next, make([]int32, grow)...)
		s.kid = append(s.kid, make([]int32, grow)...)
		s.start = append(s.start, make([]int64, grow)...)
		s.end = append(s.end, make([]int64, grow)...)
		s.seq = append(s.seq, make([]int64, grow)...)
		s.gen = append(s.gen, make([]uint32, grow)...)
		s.live = append(s.live, make([]bool, grow)...)
		s.fired = append(s.fired, make([]bool, grow)...)
		for range grow {
			s.fwd = append(s.fwd, -1)
		}
		w.aggs.Grow(c)
	}
	s.used++
	return int32(s.used - 1)
}

func (w *Agg) addSessions(b *vector.Batch, rows []int32, n int) {
	s := w.sess
	if len(w.zeros) < n {
		w.zeros = make([]int64, n)
	}
	kids := w.tbl.Lookup(w.zeros, rows, w.cols, n)
	for len(s.head) < w.tbl.Size() {
		s.head = append(s.head, -1)
	}
	for _, id := range w.tbl.NewIDs {
		s.head[id] = -1
	}
	gids := column.Grow(s.gids, n)
	s.gids = gids
	tss, closed := w.ends[:n], w.closed[:n]
	lateness := w.cfg.AllowedLateness > 0
	seg := 0 // rows [seg, k) are assigned but not yet folded in
	for k, kid := range kids {
		lo := tss[k]
		hi := lo + s.gap
		if lateness && (hi <= w.wm || s.touchesFired(kid, lo, hi, closed[k])) {
			w.flushSessionRows(b, gids, rows, seg, k, n)
			w.lateSessionRow(b, kid, lo, hi, closed[k], w.seq+int64(k), w.rowOf(rows, k))
			seg = k + 1
			continue
		}
		gids[k] = w.joinSession(kid, lo, hi, closed[k], w.seq+int64(k))
	}
	w.flushSessionRows(b, gids, rows, seg, n, n)
	if len(s.merged) > 0 {
		w.aggs.Reset(s.merged)
		for _, g := range s.merged {
			s.fwd[g] = -1
		}
		s.free = append(s.free, s.merged...)
		s.merged = s.merged[:0]
	}
	w.seq += int64(n)
}

// rowOf is the physical row of entry k (rows nil: entry k is row k).
func (w *Agg) rowOf(rows []int32, k int) int32 {
	if rows == nil {
		return int32(k)
	}
	return rows[k]
}

// rowsOf is the physical rows of entries [lo, hi) of n, in the form
// aggregate updates take (nil: all n entries are rows 0..n-1).
func (w *Agg) rowsOf(rows []int32, lo, hi, n int) []int32 {
	if rows != nil {
		return rows[lo:hi]
	}
	if lo == 0 && hi == n {
		return nil
	}
	return w.iota[lo:hi] // rows nil: the batch has no selection, iota covers it
}

// flushSessionRows folds entries [lo, hi) into the sessions they were
// assigned to (or, if those merged since, into the sessions they merged
// into).
func (w *Agg) flushSessionRows(b *vector.Batch, gids, rows []int32, lo, hi, n int) {
	if lo >= hi {
		return
	}
	s := w.sess
	seg := gids[lo:hi]
	if len(s.merged) > 0 {
		for k, g := range seg {
			for s.fwd[g] >= 0 {
				g = s.fwd[g]
			}
			seg[k] = g
		}
	}
	w.update(b, seg, w.rowsOf(rows, lo, hi, n))
}

// touches reports whether a row's [lo, hi) joins session g: it overlaps
// or touches it, and g is not closed for the row. A session is closed for
// a row once it ends at or before the row's watermark less the allowed
// lateness (closed): the watermark would have freed it had it arrived
// before the row. Deciding this per row, like lateness, keeps the result
// independent of batch boundaries and of when the operator's watermark
// arrives.
func (s *winSessions) touches(g int32, lo, hi, closed int64) bool {
	return lo <= s.end[g] && hi >= s.start[g] && s.end[g] > closed
}

// touchesFired reports whether [lo, hi) joins a fired session of key kid.
func (s *winSessions) touchesFired(kid int32, lo, hi, closed int64) bool {
	for g := s.head[kid]; g >= 0; g = s.next[g] {
		if s.fired[g] && s.touches(g, lo, hi, closed) {
			return true
		}
	}
	return false
}

// joinSession joins [lo, hi) with the sessions of kid it joins (touches)
// and returns the resulting session (a new one if none). Merged sessions'
// accumulators are folded into it; their group ids forward to it until the
// end of the Add.
func (w *Agg) joinSession(kid int32, lo, hi, closed, seq int64) int32 {
	s := w.sess
	first, prev := int32(-1), int32(-1)
	for g := s.head[kid]; g >= 0; {
		nx := s.next[g]
		switch {
		case !s.touches(g, lo, hi, closed):
			prev = g
		case first < 0:
			first, prev = g, g
			s.start[g] = min(s.start[g], lo)
			s.end[g] = max(s.end[g], hi)
		default:
			// The row bridges first and g: fold g into first.
			s.start[first] = min(s.start[first], s.start[g])
			s.end[first] = max(s.end[first], s.end[g])
			s.seq[first] = min(s.seq[first], s.seq[g])
			s.next[prev] = nx
			w.aggs.Merge(first, g)
			s.fwd[g] = first
			s.live[g] = false
			s.fired[g] = false
			s.gen[g]++
			s.n--
			s.merged = append(s.merged, g)
		}
		g = nx
	}
	if first < 0 {
		first = s.alloc(w)
		s.start[first], s.end[first] = lo, hi
		s.seq[first] = seq
		s.kid[first] = kid
		s.live[first] = true
		s.fired[first] = false
		s.next[first] = s.head[kid]
		s.head[kid] = first
		s.n++
		s.push(winSessItem{at: hi, gid: first, gen: s.gen[first]})
	}
	return first
}

// lateSessionRow adds one row that changes a fired session or lands in a
// session whose end the watermark already passed (allowed lateness), and
// queues its changelog (docs/semantics.md, "Allowed lateness"):
//
//   - every fired session the row joins is retracted by its old row: -U
//     if the resulting session keeps its bounds and has fired, -D if its
//     bounds change (an upsert sink keys rows by key and bounds) or if it
//     has not fired;
//   - the resulting session, if the watermark reached its end, is emitted:
//     +U after a -U, +I otherwise. If not, it fires later with +I.
func (w *Agg) lateSessionRow(b *vector.Batch, kid int32, lo, hi, closed, seq int64, row int32) {
	s := w.sess
	olds := s.olds[:0]
	rs, re := lo, hi
	for g := s.head[kid]; g >= 0; g = s.next[g] {
		if !s.touches(g, lo, hi, closed) {
			continue
		}
		rs, re = min(rs, s.start[g]), max(re, s.end[g])
		if s.fired[g] {
			olds = append(olds, g)
		}
	}
	s.olds = olds
	due := re <= w.wm
	same := false
	if len(olds) > 0 {
		slices.SortFunc(olds, s.firingOrder)
		kinds := make([]vector.RowKind, len(olds))
		starts, ends := make([]int64, len(olds)), make([]int64, len(olds))
		kids := make([]int32, len(olds))
		for i, g := range olds {
			starts[i], ends[i], kids[i] = s.start[g], s.end[g], kid
			kinds[i] = vector.Delete
			if due && s.start[g] == rs && s.end[g] == re {
				kinds[i], same = vector.UpdateBefore, true
			}
		}
		w.queueUpdates(olds, kids, starts, ends, kinds)
	}
	g := w.joinSession(kid, lo, hi, closed, seq)
	s.one[0][0], s.one[1][0] = g, row
	w.update(b, s.one[0][:], s.one[1][:])
	if !due {
		s.fired[g] = false
		if len(olds) > 0 {
			// g may have been fired, its heap entry then waits for its old
			// end + lateness: it must fire again at its new end.
			s.gen[g]++
			s.push(winSessItem{at: s.end[g], gid: g, gen: s.gen[g]})
		}
		return
	}
	s.fired[g] = true
	kind := vector.Insert
	if same {
		kind = vector.UpdateAfter
	}
	w.queueUpdates([]int32{g}, []int32{kid}, []int64{s.start[g]}, []int64{s.end[g]}, []vector.RowKind{kind})
}

// fireSessions emits the sessions the watermark reached and frees those
// past their allowed lateness.
func (w *Agg) fireSessions(wm int64) []arrow.RecordBatch {
	s := w.sess
	L := w.cfg.AllowedLateness
	freeBy := w.lessLatenessOf(wm, L) // free sessions with end <= freeBy
	fire, freed := s.fire[:0], s.freed[:0]
	s.repush = s.repush[:0]
	for len(s.heap) > 0 && s.heap[0].at <= wm {
		it := s.pop()
		g := it.gid
		if !s.live[g] || s.gen[g] != it.gen {
			continue
		}
		if !s.fired[g] {
			if s.end[g] > wm {
				it.at = s.end[g]
				s.repush = append(s.repush, it)
				continue
			}
			fire = append(fire, g)
			s.fired[g] = true
		}
		if s.end[g] <= freeBy {
			freed = append(freed, g)
			continue
		}
		it.at = winAddSat(s.end[g], L)
		s.repush = append(s.repush, it)
	}
	for _, it := range s.repush {
		s.push(it)
	}
	s.fire, s.freed = fire, freed
	var recs []arrow.RecordBatch
	if len(fire) > 0 {
		slices.SortFunc(fire, s.firingOrder)
		kids := column.Grow(s.gids, len(fire))
		s.gids = kids
		starts, ends := w.fstart[:0], w.fend[:0]
		for j, g := range fire {
			kids[j] = s.kid[g]
			starts = append(starts, s.start[g])
			ends = append(ends, s.end[g])
		}
		w.fstart, w.fend = starts, ends
		recs = w.emit(fire, kids, starts, ends)
	}
	if len(freed) == 0 {
		return recs
	}
	empty := s.empty[:0]
	for _, g := range freed {
		kid := s.kid[g]
		if s.head[kid] == g {
			s.head[kid] = s.next[g]
		} else {
			p := s.head[kid]
			for s.next[p] != g {
				p = s.next[p]
			}
			s.next[p] = s.next[g]
		}
		if s.head[kid] < 0 {
			empty = append(empty, kid)
		}
		s.live[g] = false
		s.fired[g] = false
		s.gen[g]++
	}
	s.empty = empty
	s.n -= len(freed)
	w.aggs.Reset(freed)
	s.free = append(s.free, freed...)
	w.tbl.Remove(empty)
	return recs
}

// firingOrder orders sessions by end, start, then first appearance.
func (s *winSessions) firingOrder(a, b int32) int {
	if c := cmp.Compare(s.end[a], s.end[b]); c != 0 {
		return c
	}
	if c := cmp.Compare(s.start[a], s.start[b]); c != 0 {
		return c
	}
	return cmp.Compare(s.seq[a], s.seq[b])
}

// winAddSat is a + b (b >= 0), saturating at math.MaxInt64.
func winAddSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (s *winSessions) push(it winSessItem) {
	h := append(s.heap, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].at <= it.at {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = it
	s.heap = h
}

func (s *winSessions) pop() winSessItem {
	h := s.heap
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	if len(h) > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= len(h) {
				break
			}
			if c+1 < len(h) && h[c+1].at < h[c].at {
				c++
			}
			if last.at <= h[c].at {
				break
			}
			h[i] = h[c]
			i = c
		}
		h[i] = last
	}
	s.heap = h
	return top
}
