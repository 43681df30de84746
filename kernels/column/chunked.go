package column

import (
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
// Chunks of a type without pointers live outside the Go heap (mapped
// memory, unmapped when the Chunked becomes unreachable): the state
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
	if unsafe.Sizeof(zero) > 0 && !hasPointers[T]() {
		if a.own == nil {
			a.own = &chunkOwner{maps: &chunkMaps{}}
			runtime.AddCleanup(a.own, func(ms *chunkMaps) {
				for _, m := range ms.m {
					unmapChunk(m)
				}
			}, a.own.maps)
		}
		if m := a.own.maps.carve(int(unsafe.Sizeof(zero))*ChunkLen, len(a.c)); m != nil {
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
