package column

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Snapshots of accumulator states. Every state describes its accumulators
// as typed value columns (StateFields), writes them for a list of groups
// (snapshot) and sets groups from them (restore): the columns a checkpoint
// part holds for an aggregate, readable as they are (a sum is a number, a
// minimum has the column's type; NULL where the group saw no value).

func Int64(mem memory.Allocator, n int, at func(j int) int64) arrow.Array {
	o := NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, n)
	for j := range n {
		o.Vals[j] = at(j)
	}
	return o.Finish()
}

func ReadInt64(a arrow.Array) ([]int64, error) {
	if a == nil || a.DataType().ID() != arrow.INT64 {
		return nil, fmt.Errorf("state column is %v, want int64", typeOf(a))
	}
	return a.(*array.Int64).Int64Values(), nil
}

func CheckType(a arrow.Array, dt arrow.DataType) error {
	if a == nil || !arrow.TypeEqual(a.DataType(), dt) {
		return fmt.Errorf("state column is %v, want %s", typeOf(a), dt)
	}
	return nil
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

func NewBool(mem memory.Allocator, n int) *Bool {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	b := buf.Bytes()
	clear(b)
	return &Bool{Bits: b, data: buf, mem: mem, n: n}
}

func (o *Bool) SetNull(j int) {
	if o.valid == nil {
		o.valid = memory.NewResizableBuffer(o.mem)
		o.valid.Resize(int(bitutil.BytesForBits(int64(o.n))))
		bitutil.SetBitsTo(o.valid.Bytes(), 0, int64(o.n), true)
	}
	bitutil.ClearBit(o.valid.Bytes(), j)
	o.nullsN++
}

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
