package join

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// store is one side's stored rows. A stored row is an index, given in
// arrival order; compaction keeps that order. Its values are in cols (one
// per input column of the side, in chunks: see chunks.go), and with them
// its time (interval joins), the partners it has met, whether it was
// dropped, and its key: each key's rows, in store order, are a list with
// head and tail by key id and next by row (-1 ends), keyOf by row (-1:
// not in a list). All plain values, so the garbage collector has almost
// nothing to scan.
type store struct {
	cols        []valueCol
	strs        []*stringCol // the string columns of cols
	ts          chunks[int64]
	matches     chunks[int32]
	dead        chunks[bool]
	next, keyOf chunks[int32]
	head, tail  []int32
	nDead       int
	// runs index an interval join's stored rows by time so that Advance
	// visits only the rows it drops: each run is the rows stored from one
	// input batch sorted by time and consumed from its front as the
	// watermark passes them; runs is a min-heap by the time of each run's
	// next row.
	runs []*run
}

// run is rows (store indices) in time order; rows[pos:] are pending.
type run struct {
	rows []int32
	pos  int
}

func newStore(schema *arrow.Schema) *store {
	s := &store{}
	for _, f := range schema.Fields() {
		c := newValueCol(f.Type)
		s.cols = append(s.cols, c)
		if sc, ok := c.(*stringCol); ok {
			s.strs = append(s.strs, sc)
		}
	}
	return s
}

// len is the number of stored rows, dead ones included.
func (s *store) len() int32 { return s.ts.n }

func (s *store) live() int { return int(s.len()) - s.nDead }

// add stores rows of the side's input columns cols, with their key ids
// (nil: none) and their times from column timeCol (-1: none), and returns
// the index of the first; the others follow it.
func (s *store) add(cols []arrow.Array, rows []int32, keys []int32, timeCol int) int32 {
	first := s.len()
	for c, col := range s.cols {
		if col != nil {
			col.push(cols[c], rows)
		}
	}
	var times []int64
	var stamps []arrow.Timestamp
	if timeCol >= 0 {
		switch c := cols[timeCol].(type) {
		case *array.Int64:
			times = c.Int64Values()
		case *array.Timestamp:
			stamps = c.TimestampValues()
		default:
			panic(fmt.Sprintf("join time column of type %s", c.DataType()))
		}
	}
	for k, r := range rows {
		var t int64
		switch {
		case times != nil:
			t = times[r]
		case stamps != nil:
			t = int64(stamps[r])
		}
		key := int32(-1)
		if keys != nil {
			key = keys[k]
		}
		s.ts.push(t)
		s.matches.push(0)
		s.dead.push(false)
		s.next.push(-1)
		s.keyOf.push(key)
		if key >= 0 {
			s.link(first+int32(k), key)
		}
	}
	return first
}

// link appends stored row idx to its key's list.
func (s *store) link(idx, key int32) {
	if t := s.tail[key]; t >= 0 {
		s.next.set(t, idx)
	} else {
		s.head[key] = idx
	}
	s.tail[key] = idx
}

// kill marks a stored row dead, releasing its strings' bytes; compact
// reclaims the rest.
func (s *store) kill(idx int32) {
	if d := s.dead.ptr(idx); !*d {
		*d = true
		s.nDead++
		for _, c := range s.strs {
			c.kill(idx)
		}
	}
}

// gather builds column c (of type t) from stored rows refs (-1 = NULL).
func (s *store) gather(mem memory.Allocator, t arrow.DataType, c int, refs []int32) (arrow.Array, error) {
	return gatherCol(mem, t, s.cols[c], refs)
}

// keysEqual compares the key columns of stored row i with row r of b's
// columns bcols.
func (s *store) keysEqual(i int32, cols []int, b arrow.RecordBatch, r int, bcols []int) bool {
	for k, c := range cols {
		if !s.cols[c].equal(i, b.Column(bcols[k]), r) {
			return false
		}
	}
	return true
}

// compact moves the live rows down over the dead ones once these
// dominate, so that a long-running join's memory follows its live state,
// and releases the emptied chunks. It returns the map from old to new row
// indices (-1 = dropped), or nil when nothing moved; key lists are
// relinked here, runs remapped by remapRuns.
func (s *store) compact() []int32 {
	if s.nDead < 4096 || s.nDead*2 < int(s.len()) {
		return nil
	}
	remap := make([]int32, s.len())
	n := int32(0)
	for i := range remap {
		if s.dead.at(int32(i)) {
			remap[i] = -1
			continue
		}
		remap[i] = n
		n++
	}
	for _, c := range s.cols {
		if c != nil {
			c.compact(remap, n)
		}
	}
	s.ts.compact(remap, n)
	s.matches.compact(remap, n)
	s.dead.compact(remap, n)
	s.keyOf.compact(remap, n)
	s.next.truncate(n)
	s.nDead = 0
	// Relink the key lists (store order is kept).
	for k := range s.head {
		s.head[k], s.tail[k] = -1, -1
	}
	for i := int32(0); i < n; i++ {
		s.next.set(i, -1)
		if k := s.keyOf.at(i); k >= 0 {
			s.link(i, k)
		}
	}
	s.remapRuns(remap)
	return remap
}

func (s *store) runTime(r *run) int64 { return s.ts.at(r.rows[r.pos]) }

// addRun indexes rows just stored by their time.
func (s *store) addRun(rows []int32) {
	if len(rows) == 0 {
		return
	}
	byTime := func(a, b int32) int { return cmp.Compare(s.ts.at(a), s.ts.at(b)) }
	if !slices.IsSortedFunc(rows, byTime) {
		slices.SortStableFunc(rows, byTime)
	}
	s.runs = append(s.runs, &run{rows: rows})
	s.siftUp(len(s.runs) - 1)
}

func (s *store) siftUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if s.runTime(s.runs[p]) <= s.runTime(s.runs[i]) {
			return
		}
		s.runs[p], s.runs[i] = s.runs[i], s.runs[p]
		i = p
	}
}

func (s *store) siftDown(i int) {
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
func (s *store) expired(limit int64, gone []int32) []int32 {
	from := len(gone)
	for len(s.runs) > 0 {
		r := s.runs[0]
		for r.pos < len(r.rows) && s.ts.at(r.rows[r.pos]) <= limit {
			if idx := r.rows[r.pos]; !s.dead.at(idx) {
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
func (s *store) remapRuns(remap []int32) {
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
