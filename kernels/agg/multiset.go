package agg

import (
	"cmp"
	"slices"
)

// msEntry is one distinct value of a multiset and how many times it is
// held.
type msEntry[T any] struct {
	v T
	n int64
}

// msChunk is the most entries a multiset chunk holds: inserting or
// removing moves at most this many entries, and the chunk index is
// 1/msChunk of the distinct values.
const msChunk = 128

// multiset is a group's values in ascending order with their counts: what
// MIN/MAX over a changelog keep, so that retracting the extreme finds the
// next one. It is a sorted list in chunks (each non-empty, at most msChunk
// entries): lookups are two binary searches, an update moves at most one
// chunk's entries, and the extremes are the first and last entries. The
// zero value is empty.
type multiset[T any] struct {
	chunks [][]msEntry[T]
	tops   []T // each chunk's last value: the chunk search reads no chunk
}

// msFind locates v in a non-empty multiset: the chunk and index where it
// is or would be inserted, and whether it is there. msFindOrdered is the
// one for ordered types (their <, inlined), msFindBy the one for an order
// given as a function.
type msFind[T any] func(m *multiset[T], v T) (ci, i int, ok bool)

func msFindOrdered[T cmp.Ordered](m *multiset[T], v T) (ci, i int, ok bool) {
	// Branch-free lower bounds (the compiler makes the ifs conditional
	// moves): random values mispredict half of a binary search's branches.
	// First the chunk whose last value is the first not below v (or the
	// last chunk), then the entry.
	tops := m.tops
	base, n := 0, len(tops)
	for n > 1 {
		half := n >> 1
		if tops[base+half-1] < v {
			base += half
		}
		n -= half
	}
	c := m.chunks[base]
	i, n = 0, len(c)
	for n > 1 {
		half := n >> 1
		if c[i+half-1].v < v {
			i += half
		}
		n -= half
	}
	if c[i].v < v {
		i++
	}
	return base, i, i < len(c) && c[i].v == v
}

// msFindBy is msFind for the strict weak order less: values neither less
// than the other are the same entry.
func msFindBy[T any](less func(a, b T) bool) msFind[T] {
	return func(m *multiset[T], v T) (ci, i int, ok bool) {
		tops := m.tops
		lo, hi := 0, len(tops)-1
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if less(tops[mid], v) {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		c := m.chunks[lo]
		a, b := 0, len(c)
		for a < b {
			mid := int(uint(a+b) >> 1)
			if less(c[mid].v, v) {
				a = mid + 1
			} else {
				b = mid
			}
		}
		return lo, a, a < len(c) && !less(v, c[a].v)
	}
}

// add counts v once more and reports whether it is a new distinct value;
// clone, when set, copies a new value before it is kept (a string that
// aliases a batch's buffer).
func (m *multiset[T]) add(v T, find msFind[T], clone func(T) T) bool {
	if len(m.chunks) == 0 {
		if clone != nil {
			v = clone(v)
		}
		m.chunks = [][]msEntry[T]{{{v: v, n: 1}}}
		m.tops = []T{v}
		return true
	}
	ci, i, ok := find(m, v)
	c := m.chunks[ci]
	if ok {
		c[i].n++
		return false
	}
	if clone != nil {
		v = clone(v)
	}
	c = slices.Insert(c, i, msEntry[T]{v: v, n: 1})
	if len(c) <= msChunk {
		m.chunks[ci] = c
		m.tops[ci] = c[len(c)-1].v
		return true
	}
	// Split a full chunk in halves; each keeps its own backing array so
	// that inserting into one never writes over the other.
	h := len(c) / 2
	right := make([]msEntry[T], len(c)-h, msChunk)
	copy(right, c[h:])
	clear(c[h:])
	m.chunks[ci] = c[:h]
	m.chunks = slices.Insert(m.chunks, ci+1, right)
	m.tops[ci] = c[h-1].v
	m.tops = slices.Insert(m.tops, ci+1, right[len(right)-1].v)
	return true
}

// remove counts v once less and reports whether v was held; gone is set
// when it was its last count.
func (m *multiset[T]) remove(v T, find msFind[T]) (held, gone bool) {
	if len(m.chunks) == 0 {
		return false, false
	}
	ci, i, ok := find(m, v)
	if !ok {
		return false, false
	}
	c := m.chunks[ci]
	if c[i].n--; c[i].n > 0 {
		return true, false
	}
	c = slices.Delete(c, i, i+1)
	switch {
	case len(c) == 0:
		m.chunks = slices.Delete(m.chunks, ci, ci+1)
		m.tops = slices.Delete(m.tops, ci, ci+1)
		if len(m.chunks) == 0 {
			m.chunks, m.tops = nil, nil
		}
	case len(c) < msChunk/4 && ci+1 < len(m.chunks) && len(c)+len(m.chunks[ci+1]) <= msChunk/2:
		// A chunk grown small joins its successor, so that chunks stay
		// a sizeable share of msChunk and the index short.
		m.chunks[ci] = append(c, m.chunks[ci+1]...)
		m.chunks = slices.Delete(m.chunks, ci+1, ci+2)
		m.tops = slices.Delete(m.tops, ci, ci+1)
	default:
		m.chunks[ci] = c
		m.tops[ci] = c[len(c)-1].v
	}
	return true, true
}

// empty reports whether the multiset holds no value.
func (m *multiset[T]) empty() bool { return len(m.chunks) == 0 }

// first and last are the least and greatest values; the multiset must not
// be empty.
func (m *multiset[T]) first() T { return m.chunks[0][0].v }

func (m *multiset[T]) last() T { return m.tops[len(m.tops)-1] }

// all calls f for each distinct value in ascending order.
func (m *multiset[T]) all(f func(v T, n int64)) {
	for _, c := range m.chunks {
		for _, e := range c {
			f(e.v, e.n)
		}
	}
}

// distinct is the number of distinct values.
func (m *multiset[T]) distinct() int {
	n := 0
	for _, c := range m.chunks {
		n += len(c)
	}
	return n
}

// appendSorted adds v (greater than every value held) with count n: how a
// restore rebuilds the multiset from its ascending snapshot.
func (m *multiset[T]) appendSorted(v T, n int64) {
	if k := len(m.chunks); k > 0 && len(m.chunks[k-1]) < msChunk/2 {
		m.chunks[k-1] = append(m.chunks[k-1], msEntry[T]{v: v, n: n})
		m.tops[k-1] = v
		return
	}
	c := make([]msEntry[T], 1, msChunk)
	c[0] = msEntry[T]{v: v, n: n}
	m.chunks = append(m.chunks, c)
	m.tops = append(m.tops, v)
}
