package column

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"unsafe"
)

// Chunk sizes of Chunked: entry i lives at chunk i>>ChunkShift, slot
// i&ChunkMask.
const (
	ChunkShift = 12
	ChunkLen   = 1 << ChunkShift
	ChunkMask  = ChunkLen - 1
)

// Chunked is a growable array of T held in fixed chunks of ChunkLen
// entries, for operator state indexed by a dense id (accumulators, hash
// table columns). Growing appends chunks and never moves an entry: a
// slice grown by append copies a large state many times over (Go grows
// big slices by 1.25x), which at a million groups is most of the CPU.
//
// Chunks of a type without pointers beyond the first MiB live outside the
// Go heap (mapped memory, unmapped when the Chunked becomes unreachable;
// a small state stays on the heap, where making and dropping it costs no
// system calls or fresh pages): a large state
// does not raise the garbage collector's heap goal, so the garbage of
// the batches flowing through is collected at the pace of a small heap
// instead of accumulating to the size of the state. Chunks of other
// types are ordinary heap arrays.
//
// The zero value is empty and ready to use. A copy shares the chunks; Grow
// only through one of them.
type Chunked[T any] struct {
	c   []*[ChunkLen]T
	own *chunkOwner
}

// chunkOwner owns the mapped chunks of one Chunked; a cleanup attached
// to it unmaps them.
type chunkOwner struct {
	maps *chunkMaps
}

type chunkMaps struct {
	m    [][]byte
	slab []byte // the unused rest of the last mapping
}

// carve returns n zeroed bytes of mapped memory, or nil. Mappings grow
// with the state (up to 64 chunks each), so a large state holds few of
// them.
func (ms *chunkMaps) carve(n, chunks int) []byte {
	if len(ms.slab) < n {
		m := mapChunk(n * min(max(chunks, 1), 64))
		if m == nil {
			return nil
		}
		ms.m = append(ms.m, m)
		ms.slab = m
	}
	b := ms.slab[:n:n]
	ms.slab = ms.slab[n:]
	return b
}

// Len is the number of entries allocated: a multiple of ChunkLen.
func (a *Chunked[T]) Len() int { return len(a.c) << ChunkShift }

// At is entry i (0 <= i < Len).
func (a Chunked[T]) At(i int32) *T {
	return &a.c[uint32(i)>>ChunkShift][uint32(i)&ChunkMask]
}

// Grow makes entries < n valid; new entries are zero.
func (a *Chunked[T]) Grow(n int) {
	for len(a.c)<<ChunkShift < n {
		a.c = append(a.c, a.newChunk())
	}
}

// GrowFill is Grow, setting new entries to v.
func (a *Chunked[T]) GrowFill(n int, v T) {
	for len(a.c)<<ChunkShift < n {
		c := a.newChunk()
		for i := range c {
			c[i] = v
		}
		a.c = append(a.c, c)
	}
}

func (a *Chunked[T]) newChunk() *[ChunkLen]T {
	var zero T
	sz := int(unsafe.Sizeof(zero)) * ChunkLen
	if sz > 0 && len(a.c)*sz >= minMapped && !hasPointers[T]() {
		if a.own == nil {
			a.own = newChunkOwner()
		}
		if m := a.own.maps.carve(sz, len(a.c)); m != nil {
			return (*[ChunkLen]T)(unsafe.Pointer(unsafe.SliceData(m)))
		}
	}
	return new([ChunkLen]T)
}

// hasPointers reports whether T holds pointers the garbage collector
// must see (and so cannot live in mapped memory).
func hasPointers[T any]() bool {
	return typeHasPointers(reflect.TypeFor[T]())
}

func typeHasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && typeHasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if typeHasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// Mapped is a fixed-length slice S of pointer-free T outside the Go heap
// (on the heap where the system cannot map memory), for a large array
// that is replaced rather than grown, like a hash table's slots. Free
// unmaps it at once; what is not freed is unmapped when the Mapped and
// its copies become unreachable. S must not be used after Free.
type Mapped[T any] struct {
	S   []T
	own *chunkOwner
}

// minMapped is the smallest array NewMapped maps: a small one is cheaper
// on the heap than a system call and fresh pages each time it is replaced.
const minMapped = 1 << 20

// NewMapped returns n zeroed entries of T.
func NewMapped[T any](n int) Mapped[T] {
	var zero T
	sz := int(unsafe.Sizeof(zero)) * n
	if sz < minMapped || hasPointers[T]() {
		return Mapped[T]{S: make([]T, n)}
	}
	m := mapChunk(sz)
	if m == nil {
		return Mapped[T]{S: make([]T, n)}
	}
	own := newChunkOwner()
	own.maps.m = append(own.maps.m, m)
	return Mapped[T]{S: unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(m))), n), own: own}
}

// Free unmaps the entries now.
func (f *Mapped[T]) Free() {
	if f.own != nil {
		f.own.free()
	}
	*f = Mapped[T]{}
}

func newChunkOwner() *chunkOwner {
	own := &chunkOwner{maps: &chunkMaps{}}
	runtime.AddCleanup(own, (*chunkMaps).unmap, own.maps)
	return own
}

func (o *chunkOwner) free() { o.maps.unmap() }

func (ms *chunkMaps) unmap() {
	for _, m := range ms.m {
		unmapChunk(m)
	}
	ms.m, ms.slab = nil, nil
}

// Arena is append-only byte strings in blocks of 64 KiB that are never
// copied on growth, outside the Go heap beyond the first MiB. A value is
// stored whole in one block (one above 64 KiB in blocks of its own) after
// its length as a uvarint, so that a position (below 4 GiB) is all its
// holder needs to keep.
type Arena struct {
	b   [][]byte // block i covers positions [i<<16, (i+1)<<16); a big value's block covers more, the next ones are nil
	pos uint32   // where the next value goes
	own *chunkOwner
}

const arenaShift = 16

// Append stores v and returns its position.
func (a *Arena) Append(v []byte) uint32 {
	var pre [binary.MaxVarintLen64]byte
	np := binary.PutUvarint(pre[:], uint64(len(v)))
	n := uint32(np + len(v))
	o := a.pos & (1<<arenaShift - 1)
	if int(a.pos>>arenaShift) >= len(a.b) || o+n > 1<<arenaShift {
		a.pos, o = uint32(len(a.b))<<arenaShift, 0
		a.addBlock(max(1, (int(n)+1<<arenaShift-1)>>arenaShift))
	}
	p := a.pos
	b := a.b[p>>arenaShift][o:]
	copy(b, pre[:np])
	copy(b[np:], v)
	a.pos += n
	if n > 1<<arenaShift {
		a.pos = uint32(len(a.b)) << arenaShift // a big value has its blocks to itself
	}
	return p
}

func (a *Arena) addBlock(blocks int) {
	if a.own == nil {
		a.own = newChunkOwner()
	}
	n := blocks << arenaShift
	grow := len(a.b) // mappings grow with the arena, but not for a big value
	if blocks > 1 {
		grow = 1
	}
	var m []byte
	if len(a.b) >= minMapped>>arenaShift || blocks > 1 {
		m = a.own.maps.carve(n, grow)
	}
	if m == nil {
		m = make([]byte, n)
	}
	a.b = append(a.b, m)
	for range blocks - 1 {
		a.b = append(a.b, nil)
	}
}

// Value is the value at position p.
func (a *Arena) Value(p uint32) []byte {
	b := a.b[p>>arenaShift][p&(1<<arenaShift-1):]
	if n := b[0]; n < 0x80 {
		return b[1 : 1+n]
	}
	n, k := binary.Uvarint(b)
	return b[k : k+int(n)]
}

// Size is the bytes the values take, with what blocks left unused.
func (a *Arena) Size() int { return int(a.pos) }

// Free unmaps the arena; it is empty afterwards.
func (a *Arena) Free() {
	if a.own != nil {
		a.own.free()
	}
	*a = Arena{}
}
