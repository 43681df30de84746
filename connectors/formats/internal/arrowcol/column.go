package arrowcol

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Column is the Arrow buffers of one column of a batch being decoded.
// A decoder embeds it in its own column type and writes row r's value in
// place (V8[r] = ..., SetValid(r), ...); a Batch allocates, grows and
// flushes it.
//
// The validity bitmap is started (Bits != nil) by the batch's first null,
// possibly of a record the decoder then rejected; from then on every row
// committed sets or clears its bit. Nulls counts the committed nulls, kept
// by the decoder: with none, the array gets no bitmap.
type Column struct {
	Type arrow.DataType
	Kind Kind

	Valid *memory.Buffer
	Bits  []byte
	Nulls int

	Vals *memory.Buffer // values (a bitmap for Bool; offsets for String)
	V1   []byte         // Int8, Bool (a bitmap)
	V2   []uint16       // Int16
	V4   []uint32       // Int32, Float32, Date
	V8   []uint64       // Int64, Float64, timestamps; Decimal: row r is V8[2r] (low word), V8[2r+1] (high)
	Off  []int32        // String offsets: row r is Dat[Off[r]:Off[r+1]]
	Data *memory.Buffer // String bytes
	Dat  []byte
}

// Init sets the column's type (and so its kind).
func (c *Column) Init(typ arrow.DataType) {
	c.Type = typ
	c.Kind = KindOf(typ)
}

// alloc gives c fresh buffers with room for rows rows (and strBytes string
// bytes).
func (c *Column) alloc(mem memory.Allocator, rows, strBytes int) {
	c.Valid = memory.NewResizableBuffer(mem)
	c.Vals = memory.NewResizableBuffer(mem)
	c.Bits = nil
	c.Nulls = 0
	if c.Kind == String {
		c.Data = memory.NewResizableBuffer(mem)
		c.Data.Reserve(max(strBytes, 64))
		c.Dat = c.Data.Buf()
	}
	c.grow(rows)
	if c.Kind == String {
		c.Off[0] = 0
	}
}

// grow makes room for rows rows, keeping the contents.
func (c *Column) grow(rows int) {
	if c.Bits != nil {
		c.Valid.Reserve(int(bitutil.BytesForBits(int64(rows))))
		c.Bits = c.Valid.Buf()
	}
	switch c.Kind {
	case Bool:
		c.Vals.Reserve(int(bitutil.BytesForBits(int64(rows))))
		c.V1 = c.Vals.Buf()
	case Int8:
		c.Vals.Reserve(rows)
		c.V1 = c.Vals.Buf()
	case Int16:
		c.Vals.Reserve(2 * rows)
		c.V2 = arrow.Uint16Traits.CastFromBytes(c.Vals.Buf())
	case Int32, Float32, Date:
		c.Vals.Reserve(4 * rows)
		c.V4 = arrow.Uint32Traits.CastFromBytes(c.Vals.Buf())
	case Int64, Float64, TimestampMs, TimestampUs:
		c.Vals.Reserve(8 * rows)
		c.V8 = arrow.Uint64Traits.CastFromBytes(c.Vals.Buf())
	case Decimal:
		c.Vals.Reserve(16 * rows)
		c.V8 = arrow.Uint64Traits.CastFromBytes(c.Vals.Buf())
	case String:
		c.Vals.Reserve(4 * (rows + 1))
		c.Off = arrow.Int32Traits.CastFromBytes(c.Vals.Buf())
	}
}

// SetNull makes row n null: its validity bit cleared (starting the bitmap,
// rows before n valid, on the batch's first null; first reports that) and
// its value slot zeroed, as it may hold a rejected or overridden value.
// capRows is the room the batch has (Batch.Cap). The caller counts Nulls.
func (c *Column) SetNull(n, capRows int) (first bool) {
	if c.Bits == nil {
		c.Valid.Reserve(int(bitutil.BytesForBits(int64(capRows))))
		c.Bits = c.Valid.Buf()
		bitutil.SetBitsTo(c.Bits, 0, int64(n), true)
		first = true
	}
	c.Bits[n>>3] &^= 1 << (n & 7)
	c.Zero(n)
	return first
}

// SetValid marks row n valid once the batch has a bitmap.
func (c *Column) SetValid(n int) {
	if c.Bits != nil {
		c.Bits[n>>3] |= 1 << (n & 7)
	}
}

// Zero writes the zero value of the column's kind (an empty string) into
// row n.
func (c *Column) Zero(n int) {
	switch c.Kind {
	case String:
		c.Off[n+1] = c.Off[n]
	case Bool:
		bitutil.ClearBit(c.V1, n)
	case Int8:
		c.V1[n] = 0
	case Int16:
		c.V2[n] = 0
	case Int32, Float32, Date:
		c.V4[n] = 0
	case Decimal:
		c.V8[2*n], c.V8[2*n+1] = 0, 0
	default:
		c.V8[n] = 0
	}
}

// PutString writes s as row n's value, replacing an earlier one. It is
// false, writing nothing, if the batch's string data would exceed 2 GiB.
func (c *Column) PutString(n int, s []byte) bool {
	start := int(c.Off[n])
	e := start + len(s)
	if e > len(c.Dat) {
		if e > math.MaxInt32 {
			return false
		}
		c.Data.Reserve(max(e, 2*len(c.Dat)))
		c.Dat = c.Data.Buf()
	}
	copy(c.Dat[start:], s)
	c.Off[n+1] = int32(e)
	return true
}

// PutDecimal writes v as row n's value.
func (c *Column) PutDecimal(n int, v decimal128.Num) {
	c.V8[2*n] = v.LowBits()
	c.V8[2*n+1] = uint64(v.HighBits())
}

// finish hands the first n rows over to a new array and releases c's
// buffers; strBytes is the string data the array holds.
func (c *Column) finish(n int) (arr arrow.Array, strBytes int) {
	var valid *memory.Buffer
	if c.Nulls > 0 {
		c.Valid.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
		valid = c.Valid
	}
	bufs := []*memory.Buffer{valid, c.Vals}
	switch c.Kind {
	case Bool:
		c.Vals.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
	case String:
		c.Vals.ResizeNoShrink(4 * (n + 1))
		strBytes = int(c.Off[n])
		c.Data.ResizeNoShrink(strBytes)
		bufs = append(bufs, c.Data)
	default:
		c.Vals.ResizeNoShrink(n * c.Type.(arrow.FixedWidthDataType).BitWidth() / 8)
	}
	data := array.NewData(c.Type, n, bufs, nil, c.Nulls, 0)
	arr = array.MakeFromData(data)
	data.Release()
	c.release()
	return arr, strBytes
}

func (c *Column) release() {
	c.Valid.Release()
	c.Vals.Release()
	if c.Data != nil {
		c.Data.Release()
	}
}
