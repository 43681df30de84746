package kernels

import (
	"cmp"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/vector"
)

// winSessions is the SESSION state. The hash table maps group keys to key
// ids; each key id heads a linked list of its live sessions (usually one),
// and each session is a group id with its own interval and accumulators.
// A row's interval [ts, ts+gap) joins every session of its key that it
// overlaps or touches; joining two sessions merges their accumulators. A
// min-heap by end finds the sessions a watermark fires; its entries are
// checked lazily (a merged-away session's generation no longer matches, an
// extended session is pushed back with its new end).
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
	fwd   []int32 // merged into (during one Add), -1 otherwise
	used  int     // gids ever handed out
	free  []int32
	n     int // live sessions

	heap   []winSessItem
	merged []int32
	gids   []int32
	repush []winSessItem
	empty  []int32
}

type winSessItem struct {
	end int64
	gid int32
	gen uint32
}

func (s *winSessions) alloc(w *WindowAgg) int32 {
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
		for range grow {
			s.fwd = append(s.fwd, -1)
		}
		w.aggs.grow(c)
	}
	s.used++
	return int32(s.used - 1)
}

func (w *WindowAgg) addSessions(b *vector.Batch, rows []int32, n int) {
	s := w.sess
	if len(w.zeros) < n {
		w.zeros = make([]int64, n)
	}
	kids := w.tbl.lookup(w.zeros, rows, w.cols, n)
	for len(s.head) < w.tbl.size() {
		s.head = append(s.head, -1)
	}
	for _, id := range w.tbl.newIDs {
		s.head[id] = -1
	}
	gids := winGrow(s.gids, n)
	s.gids = gids
	tss := w.ends[:n]
	for k, kid := range kids {
		lo := tss[k]
		hi := lo + s.gap
		first, prev := int32(-1), int32(-1)
		for g := s.head[kid]; g >= 0; {
			nx := s.next[g]
			switch {
			case lo > s.end[g] || hi < s.start[g]:
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
				w.aggs.merge(first, g)
				s.fwd[g] = first
				s.live[g] = false
				s.gen[g]++
				s.n--
				s.merged = append(s.merged, g)
			}
			g = nx
		}
		if first < 0 {
			first = s.alloc(w)
			s.start[first], s.end[first] = lo, hi
			s.seq[first] = w.seq + int64(k)
			s.kid[first] = kid
			s.live[first] = true
			s.next[first] = s.head[kid]
			s.head[kid] = first
			s.n++
			s.push(winSessItem{end: hi, gid: first, gen: s.gen[first]})
		}
		gids[k] = first
	}
	if len(s.merged) > 0 {
		for k, g := range gids {
			for s.fwd[g] >= 0 {
				g = s.fwd[g]
			}
			gids[k] = g
		}
	}
	w.update(b, gids, rows)
	if len(s.merged) > 0 {
		w.aggs.reset(s.merged)
		for _, g := range s.merged {
			s.fwd[g] = -1
		}
		s.free = append(s.free, s.merged...)
		s.merged = s.merged[:0]
	}
	w.seq += int64(n)
}

func (w *WindowAgg) fireSessions(wm int64) []arrow.RecordBatch {
	s := w.sess
	fired := w.fired[:0]
	s.repush = s.repush[:0]
	for len(s.heap) > 0 && s.heap[0].end <= wm {
		it := s.pop()
		switch {
		case !s.live[it.gid] || s.gen[it.gid] != it.gen:
		case s.end[it.gid] <= wm:
			fired = append(fired, it.gid)
		default:
			it.end = s.end[it.gid]
			s.repush = append(s.repush, it)
		}
	}
	for _, it := range s.repush {
		s.push(it)
	}
	w.fired = fired
	if len(fired) == 0 {
		return nil
	}
	slices.SortFunc(fired, func(a, b int32) int {
		if c := cmp.Compare(s.end[a], s.end[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(s.start[a], s.start[b]); c != 0 {
			return c
		}
		return cmp.Compare(s.seq[a], s.seq[b])
	})
	kids := winGrow(s.gids, len(fired))
	s.gids = kids
	starts, ends := w.fstart[:0], w.fend[:0]
	for j, g := range fired {
		kids[j] = s.kid[g]
		starts = append(starts, s.start[g])
		ends = append(ends, s.end[g])
	}
	w.fstart, w.fend = starts, ends
	recs := w.emit(fired, kids, starts, ends)

	empty := s.empty[:0]
	for _, g := range fired {
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
		s.gen[g]++
	}
	s.empty = empty
	s.n -= len(fired)
	w.aggs.reset(fired)
	s.free = append(s.free, fired...)
	w.tbl.remove(empty)
	return recs
}

func (s *winSessions) push(it winSessItem) {
	h := append(s.heap, it)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].end <= it.end {
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
			if c+1 < len(h) && h[c+1].end < h[c].end {
				c++
			}
			if last.end <= h[c].end {
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
