package column

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

type chunkTestEntry struct {
	n    int64
	s, c float64
}

func TestChunked(t *testing.T) {
	var a Chunked[chunkTestEntry]
	if a.Len() != 0 {
		t.Fatalf("empty Len = %d", a.Len())
	}
	const n = 3*ChunkLen + 17
	a.Grow(n)
	if a.Len() < n || a.Len()%ChunkLen != 0 {
		t.Fatalf("Len = %d after Grow(%d)", a.Len(), n)
	}
	first := a.At(5)
	for i := range int32(n) {
		if *a.At(i) != (chunkTestEntry{}) {
			t.Fatalf("entry %d not zero", i)
		}
		a.At(i).n = int64(i)
	}
	a.Grow(40 * ChunkLen) // growing moves nothing
	if first != a.At(5) || first.n != 5 {
		t.Fatalf("entry 5 moved or changed on growth")
	}
	for i := range int32(n) {
		if a.At(i).n != int64(i) {
			t.Fatalf("entry %d = %d", i, a.At(i).n)
		}
	}
	runtime.GC()

	var f Chunked[int32]
	f.GrowFill(10, -1)
	if *f.At(ChunkLen - 1) != -1 {
		t.Fatalf("GrowFill left %d", *f.At(ChunkLen - 1))
	}

	var p Chunked[[]byte] // pointers: heap chunks the collector sees
	p.Grow(1)
	*p.At(0) = []byte("x")
	runtime.GC()
	if string(*p.At(0)) != "x" {
		t.Fatalf("heap chunk lost its value")
	}
}

func TestHasPointers(t *testing.T) {
	if hasPointers[chunkTestEntry]() || hasPointers[[4]uint32]() || hasPointers[bool]() {
		t.Error("pointer-free types reported as having pointers")
	}
	if !hasPointers[[]byte]() || !hasPointers[map[string]struct{}]() || !hasPointers[struct{ s string }]() {
		t.Error("types with pointers reported as pointer-free")
	}
}

// BenchmarkChunkedGrow grows state to 1M entries of 40 bytes one batch of
// 1024 at a time, writing each new entry, against a slice grown by append.
func BenchmarkChunkedGrow(b *testing.B) {
	type entry struct{ n, a, b, c, d int64 }
	const n = 1 << 20
	b.Run("impl=chunked", func(b *testing.B) {
		for b.Loop() {
			var a Chunked[entry]
			for i := 1024; i <= n; i += 1024 {
				a.Grow(i)
				for j := i - 1024; j < i; j++ {
					a.At(int32(j)).n = int64(j)
				}
			}
		}
	})
	b.Run("impl=append", func(b *testing.B) {
		for b.Loop() {
			var s []entry
			for i := 1024; i <= n; i += 1024 {
				s = append(s, make([]entry, i-len(s))...)
				for j := i - 1024; j < i; j++ {
					s[j].n = int64(j)
				}
			}
		}
	})
}

func TestArena(t *testing.T) {
	var a Arena
	type kept struct {
		p uint32
		v []byte
	}
	var all []kept
	for i := range 30000 {
		n := i % 37
		switch i % 5000 {
		case 17:
			n = 70000 // a value above a block
		case 18:
			n = 1<<16 - 3 // a block with its length
		case 19:
			n = 200 // a two-byte length
		}
		v := make([]byte, n)
		for j := range v {
			v[j] = byte(i + j)
		}
		all = append(all, kept{a.Append(v), v})
	}
	runtime.GC()
	for i, k := range all {
		if got := a.Value(k.p); string(got) != string(k.v) {
			t.Fatalf("value %d (%d bytes) at %d changed", i, len(k.v), k.p)
		}
	}
	a.Free()
	if a.Size() != 0 {
		t.Fatalf("Size %d after Free", a.Size())
	}
	p := a.Append([]byte("again"))
	if string(a.Value(p)) != "again" {
		t.Fatal("arena unusable after Free")
	}
}

func TestMapped(t *testing.T) {
	m := NewMapped[uint64](1 << 18) // above minMapped: mapped
	for i := range m.S {
		if m.S[i] != 0 {
			t.Fatal("not zeroed")
		}
		m.S[i] = uint64(i)
	}
	runtime.GC()
	if m.S[1<<18-1] != 1<<18-1 {
		t.Fatal("lost a value")
	}
	m.Free()
	if m.S != nil {
		t.Fatal("S kept after Free")
	}
}

// TestChunkedFreeze checks copy-on-write: a frozen view keeps the values
// of its barrier through writes by W and after Unshare, growth after a
// freeze is not shared, and a released hold's replaced chunks are reused
// (the next snapshots' copies allocate no chunk).
func TestChunkedFreeze(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		var a Chunked[int64]
		n := 3 * ChunkLen
		if mapped {
			n = 2*minMapped/8 + 5 // past the heap chunks
		}
		a.Grow(n)
		model := make([]int64, n)
		for i := range int32(n) {
			*a.At(i) = int64(i)
			model[i] = int64(i)
		}
		var used int
		for round := range 4 {
			h := NewHold()
			v, want := a.Freeze(h), slices.Clone(model)
			for i := int32(round); i < int32(n); i += 3 {
				*a.W(i) += 1000
				model[i] += 1000
			}
			ids := []int32{1, ChunkLen + 1, int32(n - 1)}
			a.Unshare(ids)
			for _, i := range ids {
				*a.At(i) = -int64(round)
				model[i] = -int64(round)
			}
			if round == 0 {
				a.Grow(n + ChunkLen) // new chunks are not frozen
				*a.W(int32(n)) = 7
			}
			for i := range int32(n) {
				if got := *v.At(i); got != want[i] {
					t.Fatalf("mapped=%v round %d: frozen entry %d = %d, want %d", mapped, round, i, got, want[i])
				}
				if got := *a.At(i); got != model[i] {
					t.Fatalf("mapped=%v round %d: entry %d = %d, want %d", mapped, round, i, got, model[i])
				}
			}
			h.Release()
			if round == 1 {
				used = allocated(&a)
			} else if round > 1 && allocated(&a) != used {
				t.Fatalf("mapped=%v round %d: %d chunks, want %d: released copies not reused", mapped, round, allocated(&a), used)
			}
			a.Settle()
			if r := a.Retained(); r != 0 {
				t.Fatalf("mapped=%v: %d chunks retained after the release", mapped, r)
			}
		}
	}
}

// allocated counts the chunks a holds, in use and spare.
func allocated(a *Chunked[int64]) int {
	n := len(a.c)
	if a.cw != nil {
		n += len(a.cw.spare) + len(a.cw.retired)
	}
	return n
}

// TestArenaFreeze: a frozen arena keeps its values through appends and a
// Free (compaction) while its hold is pending.
func TestArenaFreeze(t *testing.T) {
	var a Arena
	var pos []uint32
	for i := range 40000 {
		pos = append(pos, a.Append([]byte(fmt.Sprintf("key-%d", i))))
	}
	h := NewHold()
	v := a.Freeze(h)
	for i := range 40000 {
		a.Append([]byte(fmt.Sprintf("more-%d", i)))
	}
	a.Free()
	runtime.GC()
	for i, p := range pos {
		if got := string(v.Value(p)); got != fmt.Sprintf("key-%d", i) {
			t.Fatalf("value %d = %q", i, got)
		}
	}
	h.Release()
}
