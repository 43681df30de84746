package column

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Int64 builds a BIGINT column of n values, value j being at(j).
func Int64(mem memory.Allocator, n int, at func(j int) int64) arrow.Array {
	o := NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, n)
	for j := range n {
		o.Vals[j] = at(j)
	}
	return o.Finish()
}

// Fixed builds a fixed-width Arrow array in place.
type Fixed[T any] struct {
	dt     arrow.DataType
	Vals   []T
	data   *memory.Buffer
	valid  *memory.Buffer
	mem    memory.Allocator
	n      int
	nullsN int
}

// NewFixed starts an array of n values of type dt, all valid: the caller
// fills Vals and marks nulls with SetNull, then takes the array (Finish).
func NewFixed[T any](mem memory.Allocator, dt arrow.DataType, n int) *Fixed[T] {
	var zero T
	size := int(unsafe.Sizeof(zero))
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(n * size)
	var vals []T
	if n > 0 {
		vals = unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf.Bytes()))), n)
	}
	return &Fixed[T]{dt: dt, Vals: vals, data: buf, mem: mem, n: n}
}

// SetNull makes value j NULL.
func (o *Fixed[T]) SetNull(j int) {
	if o.valid == nil {
		o.valid = memory.NewResizableBuffer(o.mem)
		o.valid.Resize(int(bitutil.BytesForBits(int64(o.n))))
		bitutil.SetBitsTo(o.valid.Bytes(), 0, int64(o.n), true)
	}
	bitutil.ClearBit(o.valid.Bytes(), j)
	var zero T
	o.Vals[j] = zero
	o.nullsN++
}

// Finish returns the array, which owns the buffers.
func (o *Fixed[T]) Finish() arrow.Array {
	data := array.NewData(o.dt, o.n, []*memory.Buffer{o.valid, o.data}, nil, o.nullsN, 0)
	arr := array.MakeFromData(data)
	data.Release()
	o.data.Release()
	if o.valid != nil {
		o.valid.Release()
	}
	return arr
}

// Bool builds a boolean Arrow array in place.
type Bool struct {
	Bits   []byte
	data   *memory.Buffer
	valid  *memory.Buffer
	mem    memory.Allocator
	n      int
	nullsN int
}

// NewBool starts a boolean array of n values, all false and valid: the
// caller sets Bits and marks nulls with SetNull, then takes the array
// (Finish).
func NewBool(mem memory.Allocator, n int) *Bool {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	b := buf.Bytes()
	clear(b)
	return &Bool{Bits: b, data: buf, mem: mem, n: n}
}

// SetNull makes value j NULL.
func (o *Bool) SetNull(j int) {
	if o.valid == nil {
		o.valid = memory.NewResizableBuffer(o.mem)
		o.valid.Resize(int(bitutil.BytesForBits(int64(o.n))))
		bitutil.SetBitsTo(o.valid.Bytes(), 0, int64(o.n), true)
	}
	bitutil.ClearBit(o.valid.Bytes(), j)
	o.nullsN++
}

// Finish returns the array, which owns the buffers.
func (o *Bool) Finish() arrow.Array {
	data := array.NewData(arrow.FixedWidthTypes.Boolean, o.n, []*memory.Buffer{o.valid, o.data}, nil, o.nullsN, 0)
	arr := array.MakeFromData(data)
	data.Release()
	o.data.Release()
	if o.valid != nil {
		o.valid.Release()
	}
	return arr
}
