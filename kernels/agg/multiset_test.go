package agg

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMultiset checks the chunked multiset against a map on random adds
// and removes over value ranges small (many repeats) and large (chunks
// split, shrink, merge and vanish), including runs that empty it.
func TestMultiset(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i, span := range []int{3, 300, 20000, 3, 300, 20000} {
		// Both finds: the ordered one and the one by a function.
		find := msFindOrdered[int]
		if i >= 3 {
			find = msFindBy(cmp.Less[int])
		}
		var m multiset[int]
		ref := map[int]int64{}
		for step := range 60000 {
			v := r.IntN(span)
			if step%20000 > 12000 && len(ref) > 0 { // drain phase
				for k := range ref {
					v = k
					break
				}
			}
			if r.IntN(2) == 0 && step%20000 <= 12000 {
				if isNew := m.add(v, find, nil); isNew != (ref[v] == 0) {
					t.Fatalf("span %d step %d: add(%d) new=%v, reference holds %d", span, step, v, isNew, ref[v])
				}
				ref[v]++
			} else {
				held, gone := m.remove(v, find)
				if held != (ref[v] > 0) || gone != (ref[v] == 1) {
					t.Fatalf("span %d step %d: remove(%d) = %v, %v; reference holds %d", span, step, v, held, gone, ref[v])
				}
				if ref[v]--; ref[v] <= 0 {
					delete(ref, v)
				}
			}
			if step%97 == 0 || len(ref) < 3 {
				msCheck(t, &m, ref)
			}
		}
		msCheck(t, &m, ref)
	}
}

func msCheck(t *testing.T, m *multiset[int], ref map[int]int64) {
	t.Helper()
	keys := make([]int, 0, len(ref))
	for k := range ref {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if m.empty() != (len(keys) == 0) || m.distinct() != len(keys) {
		t.Fatalf("multiset has %d distinct values (empty %v), reference %d", m.distinct(), m.empty(), len(keys))
	}
	if len(keys) == 0 {
		return
	}
	if m.first() != keys[0] || m.last() != keys[len(keys)-1] {
		t.Fatalf("extremes %d, %d; reference %d, %d", m.first(), m.last(), keys[0], keys[len(keys)-1])
	}
	i := 0
	m.all(func(v int, n int64) {
		if v != keys[i] || n != ref[v] {
			t.Fatalf("entry %d: %d×%d, reference %d×%d", i, v, n, keys[i], ref[keys[i]])
		}
		i++
	})
	if len(m.tops) != len(m.chunks) {
		t.Fatalf("%d chunk tops for %d chunks", len(m.tops), len(m.chunks))
	}
	for i, c := range m.chunks {
		if len(c) == 0 || len(c) > msChunk {
			t.Fatalf("a chunk of %d entries", len(c))
		}
		if m.tops[i] != c[len(c)-1].v {
			t.Fatalf("chunk %d: top %d, last value %d", i, m.tops[i], c[len(c)-1].v)
		}
	}
}
