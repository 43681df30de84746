package kernels

import (
	"encoding/binary"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Buffer plumbing shared by the scalar kernels: typed views of Arrow buffers,
// output allocation, validity bitmaps and bit-packed words.

type scInt interface {
	~int8 | ~int16 | ~int32 | ~int64
}

type scFloat interface{ ~float32 | ~float64 }

type scNum interface{ scInt | scFloat }

// scFixed is every fixed-width value type the kernels store: numbers and
// DECIMAL's 128-bit values.
type scFixed interface{ scNum | scDec }

// scReinterpret views b as a []T (little-endian, as Arrow is).
func scReinterpret[T any](b []byte) []T {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(b) < sz {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz)
}

// scValues is the value slice of a fixed-width array, offset applied. An
// array whose value buffer is absent or short (all NULL, from a lenient
// producer) reads as zeros.
func scValues[T scFixed](a arrow.Array) []T {
	d := a.Data()
	if d.Len() == 0 {
		return nil
	}
	var v []T
	if buf := d.Buffers()[1]; buf != nil {
		v = scReinterpret[T](buf.Bytes())
	}
	if len(v) < d.Offset()+d.Len() {
		return make([]T, d.Len())
	}
	return v[d.Offset() : d.Offset()+d.Len()]
}

// scStrings returns the offsets (len n+1, offset applied) and the data bytes
// of a utf8 array.
func scStrings(a arrow.Array) ([]int32, []byte) {
	d := a.Data()
	if d.Len() == 0 {
		return []int32{0}, nil
	}
	var offs []int32
	if buf := d.Buffers()[1]; buf != nil {
		offs = scReinterpret[int32](buf.Bytes())
	}
	if len(offs) < d.Offset()+d.Len()+1 {
		return make([]int32, d.Len()+1), nil
	}
	offs = offs[d.Offset() : d.Offset()+d.Len()+1]
	var data []byte
	if buf := d.Buffers()[2]; buf != nil {
		data = buf.Bytes()
	}
	return offs, data
}

func scAllocValues[T scFixed](mem memory.Allocator, n int) (*memory.Buffer, []T) {
	var z T
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * int(unsafe.Sizeof(z)))
	return buf, scReinterpret[T](buf.Bytes())[:n]
}

// scAllocBitmap allocates a bitmap for n bits, rounded up to whole 64-bit
// words so kernels can store words without a tail case. Contents are
// unspecified.
func scAllocBitmap(mem memory.Allocator, n int) (*memory.Buffer, []byte) {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(scWords(n) * 8)
	return buf, buf.Bytes()
}

func scWords(n int) int { return (n + 63) / 64 }

// scMakeArray builds an array of type t over the given buffers (validity
// first, may be nil). It takes over the caller's references to the buffers.
func scMakeArray(t arrow.DataType, n int, validity *memory.Buffer, nulls int, bufs ...*memory.Buffer) arrow.Array {
	all := make([]*memory.Buffer, 0, 3)
	all = append(all, validity)
	all = append(all, bufs...)
	if validity == nil {
		nulls = 0
	}
	data := array.NewData(t, n, all, nil, nulls, 0)
	arr := array.MakeFromData(data)
	data.Release()
	for _, b := range all {
		if b != nil {
			b.Release()
		}
	}
	return arr
}

// scEmpty is a zero-length array of type t.
func scEmpty(mem memory.Allocator, t arrow.DataType) arrow.Array {
	return array.MakeArrayOfNull(mem, t, 0)
}

// scBitmapBytes returns a's bitmap buffer i (0 validity, 1 boolean values)
// starting at a's first row, copying it only when a's offset is not a
// multiple of 8. nil if the buffer is absent.
func scBitmapBytes(a arrow.Array, i int) []byte {
	d := a.Data()
	buf := d.Buffers()[i]
	if buf == nil {
		return nil
	}
	off := d.Offset()
	if off%8 == 0 {
		return buf.Bytes()[off/8:]
	}
	out := make([]byte, scWords(d.Len())*8)
	bitutil.CopyBitmap(buf.Bytes(), off, d.Len(), out, 0)
	return out
}

// scShareValidity returns a buffer holding a's validity starting at bit 0
// (shared with a when its offset allows) and a's null count; nil if a has
// no nulls. The caller owns the returned reference.
func scShareValidity(mem memory.Allocator, a arrow.Array) (*memory.Buffer, int) {
	if a == nil || a.NullN() == 0 {
		return nil, 0
	}
	d := a.Data()
	buf := d.Buffers()[0]
	if buf == nil { // Null-type array
		out, bits := scAllocBitmap(mem, d.Len())
		clear(bits)
		return out, d.Len()
	}
	off := d.Offset()
	switch {
	case off == 0:
		buf.Retain()
		return buf, a.NullN()
	case off%8 == 0:
		return memory.SliceBuffer(buf, off/8, buf.Len()-off/8), a.NullN()
	}
	out, bits := scAllocBitmap(mem, d.Len())
	bitutil.CopyBitmap(buf.Bytes(), off, d.Len(), bits, 0)
	return out, a.NullN()
}

// scValidity2 is the validity of a row-wise strict function of a and b: the
// AND of their validity bitmaps. Either may be nil (a scalar operand).
func scValidity2(mem memory.Allocator, n int, a, b arrow.Array) (*memory.Buffer, int) {
	an, bn := 0, 0
	if a != nil {
		an = a.NullN()
	}
	if b != nil {
		bn = b.NullN()
	}
	switch {
	case an == 0 && bn == 0:
		return nil, 0
	case bn == 0:
		return scShareValidity(mem, a)
	case an == 0:
		return scShareValidity(mem, b)
	}
	if a.Data().Buffers()[0] == nil || b.Data().Buffers()[0] == nil { // Null-type operand
		out, bits := scAllocBitmap(mem, n)
		clear(bits)
		return out, n
	}
	out, bits := scAllocBitmap(mem, n)
	bitutil.BitmapAnd(a.Data().Buffers()[0].Bytes(), b.Data().Buffers()[0].Bytes(),
		int64(a.Data().Offset()), int64(b.Data().Offset()), bits, 0, int64(n))
	return out, n - bitutil.CountSetBits(bits, 0, n)
}

// scLoadWord reads bits [64w, 64w+64) of bitmap b; missing trailing bytes
// read as zero.
func scLoadWord(b []byte, w int) uint64 {
	i := w * 8
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i:])
	}
	var v uint64
	for k := 0; i+k < len(b); k++ {
		v |= uint64(b[i+k]) << (8 * k)
	}
	return v
}

func scStoreWord(b []byte, w int, v uint64) {
	binary.LittleEndian.PutUint64(b[w*8:], v)
}

// scBit is 1 for true, 0 for false, without a branch.
func scBit(b bool) uint64 {
	return uint64(*(*uint8)(unsafe.Pointer(&b)))
}

// scSparse reports whether a kernel that may touch every physical row should
// rather visit only the selected ones. Visiting all rows of a tight loop is
// cheaper until the selection keeps less than about half of them.
func scSparse(sel []int32, n int) bool {
	return sel != nil && len(sel)*2 < n
}

// scStrWriter writes a utf8 array row by row straight into Arrow buffers.
type scStrWriter struct {
	offBuf *memory.Buffer
	offs   []int32
	data   *memory.Buffer
	buf    []byte // data.Buf(), full capacity
	n      int    // bytes written
}

func newScStrWriter(mem memory.Allocator, rows, estBytes int) *scStrWriter {
	w := &scStrWriter{offBuf: memory.NewResizableBuffer(mem), data: memory.NewResizableBuffer(mem)}
	w.offBuf.Resize((rows + 1) * 4)
	w.offs = scReinterpret[int32](w.offBuf.Bytes())[:rows+1]
	w.offs[0] = 0
	if estBytes < 64 {
		estBytes = 64
	}
	w.data.Reserve(estBytes)
	w.buf = w.data.Buf()
	return w
}

// reserve makes room for k more bytes and returns the writable tail
// (length 0); a caller that appends to it adds what it wrote to w.n.
func (w *scStrWriter) reserve(k int) []byte {
	if w.n+k > len(w.buf) {
		c := 2 * len(w.buf)
		if c < w.n+k {
			c = w.n + k
		}
		w.data.Reserve(c) // reallocation copies the whole old capacity
		w.buf = w.data.Buf()
	}
	return w.buf[w.n:w.n]
}

func (w *scStrWriter) appendString(s string) {
	copy(w.reserve(len(s))[:len(s)], s)
	w.n += len(s)
}

func (w *scStrWriter) appendBytes(s []byte) {
	copy(w.reserve(len(s))[:len(s)], s)
	w.n += len(s)
}

// endRow closes row i (rows are written in order; a row with nothing
// appended is empty).
func (w *scStrWriter) endRow(i int) { w.offs[i+1] = int32(w.n) }

// fillTo closes rows [from, to) empty: the rows a kernel skipped (not live
// or NULL) between the ones it wrote. Returns to.
func (w *scStrWriter) fillTo(from, to int) int {
	o := int32(w.n)
	for r := from; r < to; r++ {
		w.offs[r+1] = o
	}
	return to
}

func (w *scStrWriter) finish(t arrow.DataType, validity *memory.Buffer, nulls int) arrow.Array {
	w.data.Resize(w.n)
	n := len(w.offs) - 1
	return scMakeArray(t, n, validity, nulls, w.offBuf, w.data)
}

// arrayData builds an array of type t over bufs (validity first) at offset
// off. Unlike scMakeArray it retains the buffers: the caller keeps its
// references.
func arrayData(t arrow.DataType, n int, bufs []*memory.Buffer, nulls, off int) arrow.Array {
	data := array.NewData(t, n, bufs, nil, nulls, off)
	defer data.Release()
	return array.MakeFromData(data)
}
