package column

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
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
//
// Freeze hands out a read-only view of the current chunks for a snapshot
// written on another goroutine (copy-on-write): until the view's Hold is
// released, a write must go through W or follow Unshare, which copy a
// frozen chunk the first time it is written and write the copy. A
// replaced chunk is reused once every Hold is released.
//
// A Chunked is two words (it is copied into hot loops, and the compiler
// keeps a struct of up to four words in registers), so what it rarely
// needs sits behind one pointer.
type Chunked[T any] struct {
	c  []*[ChunkLen]T
	cw *chunkCow[T] // nil until the first mapped chunk or Freeze
}

// chunkCow is what a Chunked rarely needs: the owner of its mapped
// chunks, and its copy-on-write bookkeeping. Its copies share it; only the
// goroutine that writes the Chunked touches it.
type chunkCow[T any] struct {
	own     *chunkOwner
	sh      []bool // per chunk: frozen under a hold not yet released
	nsh     int    // true entries of sh
	holds   []*Hold
	retired []*[ChunkLen]T // replaced frozen chunks: free once every hold is released
	spare   []*[ChunkLen]T // chunks to reuse
}

// A Hold is one snapshot's claim on the chunks frozen for it: they stay
// as they were until Release. Release may be called from any goroutine,
// once.
type Hold struct{ released atomic.Bool }

// NewHold returns a hold for one snapshot.
func NewHold() *Hold { return &Hold{} }

// Release ends the hold: its frozen views must not be read afterwards.
func (h *Hold) Release() {
	if h != nil {
		h.released.Store(true)
	}
}

// pending drops the released holds and reports whether one is left.
func pending(holds *[]*Hold) bool {
	*holds = slices.DeleteFunc(*holds, func(h *Hold) bool { return h.released.Load() })
	return len(*holds) > 0
}

// settle frees what the released holds kept, if none is left.
func (cw *chunkCow[T]) settle() bool {
	if pending(&cw.holds) {
		return false
	}
	clear(cw.sh)
	cw.nsh = 0
	retained.Add(-int64(len(cw.retired)))
	cw.spare = append(cw.spare, cw.retired...)
	clear(cw.retired)
	cw.retired = cw.retired[:0]
	return true
}

// Freeze returns a read-only view of entries < Len as they are now, valid
// until h is released (see Chunked). O(chunks).
func (a *Chunked[T]) Freeze(h *Hold) Chunked[T] {
	if a.cw == nil {
		a.cw = &chunkCow[T]{}
	}
	cw := a.cw
	cw.settle()
	for len(cw.sh) < len(a.c) {
		cw.sh = append(cw.sh, false)
	}
	for i := range a.c {
		if !cw.sh[i] {
			cw.sh[i] = true
			cw.nsh++
		}
	}
	cw.holds = append(cw.holds, h)
	return Chunked[T]{c: slices.Clone(a.c), cw: &chunkCow[T]{own: cw.own}}
}

// W is entry i for writing: At, after copying its chunk if it is frozen.
func (a *Chunked[T]) W(i int32) *T {
	ci := uint32(i) >> ChunkShift
	if cw := a.cw; cw != nil && cw.nsh > 0 && int(ci) < len(cw.sh) && cw.sh[ci] {
		a.unshare(ci)
	}
	return &a.c[ci][uint32(i)&ChunkMask]
}

// Unshare makes the chunks of entries ids writable with At.
func (a *Chunked[T]) Unshare(ids []int32) {
	cw := a.cw
	if cw == nil || cw.nsh == 0 {
		return
	}
	for _, id := range ids {
		if ci := uint32(id) >> ChunkShift; int(ci) < len(cw.sh) && cw.sh[ci] {
			if a.unshare(ci); cw.nsh == 0 {
				return
			}
		}
	}
}

func (a *Chunked[T]) unshare(ci uint32) {
	cw := a.cw
	if cw.settle() {
		return
	}
	old := a.c[ci]
	var c *[ChunkLen]T
	if n := len(cw.spare); n > 0 {
		c, cw.spare = cw.spare[n-1], cw.spare[:n-1]
	} else {
		c = a.allocChunk()
	}
	*c = *old
	a.c[ci] = c
	cw.sh[ci] = false
	cw.nsh--
	cw.retired = append(cw.retired, old)
	retained.Add(1)
}

// retained counts the chunks of every Chunked that holds kept
// (RetainedChunks).
var retained atomic.Int64

// RetainedChunks is the number of replaced frozen chunks, over every
// Chunked of the process, not reclaimed yet: what snapshots in progress
// (or released ones whose Chunked has not written or frozen since) keep
// alive. Tests check it returns to zero.
func RetainedChunks() int64 { return retained.Load() }

// Retained is the number of chunks kept for holds, released or not, that
// the Chunked has not reclaimed yet (it does on its next Freeze, W or
// Unshare after the last release, or on Settle).
func (a *Chunked[T]) Retained() int {
	if a.cw == nil {
		return 0
	}
	return len(a.cw.retired)
}

// Settle reclaims what released holds kept.
func (a *Chunked[T]) Settle() {
	if a.cw != nil {
		a.cw.settle()
	}
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

// newChunk returns a zeroed chunk, reusing a spare one first.
func (a *Chunked[T]) newChunk() *[ChunkLen]T {
	if cw := a.cw; cw != nil {
		if n := len(cw.spare); n > 0 {
			c := cw.spare[n-1]
			cw.spare = cw.spare[:n-1]
			clear(c[:])
			return c
		}
	}
	return a.allocChunk()
}

func (a *Chunked[T]) allocChunk() *[ChunkLen]T {
	var zero T
	sz := int(unsafe.Sizeof(zero)) * ChunkLen
	if sz > 0 && len(a.c)*sz >= minMapped && !hasPointers[T]() {
		if a.cw == nil {
			a.cw = &chunkCow[T]{}
		}
		if a.cw.own == nil {
			a.cw.own = newChunkOwner()
		}
		if m := a.cw.own.maps.carve(sz, len(a.c)); m != nil {
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
//
// Values are never changed, so a frozen view (Freeze) shares every block
// with the arena; Free leaves the unmapping to the garbage collector while
// a view's hold is not released.
type Arena struct {
	b     [][]byte // block i covers positions [i<<16, (i+1)<<16); a big value's block covers more, the next ones are nil
	pos   uint32   // where the next value goes
	own   *chunkOwner
	holds []*Hold
}

// Freeze returns a read-only view of the values stored so far, valid
// until h is released. O(blocks).
func (a *Arena) Freeze(h *Hold) Arena {
	pending(&a.holds)
	a.holds = append(a.holds, h)
	return Arena{b: slices.Clone(a.b), pos: a.pos, own: a.own}
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

// Free unmaps the arena; it is empty afterwards. While a frozen view's
// hold is not released, the view keeps the blocks, which are unmapped
// once it is gone.
func (a *Arena) Free() {
	if a.own != nil && !pending(&a.holds) {
		a.own.free()
	}
	*a = Arena{}
}
