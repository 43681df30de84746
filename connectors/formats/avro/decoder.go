package avro

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options tunes a Decoder.
type Options struct {
	// Needed, when set, marks the columns the query reads (projection
	// pushdown). The fields of the others are skipped without being
	// converted (their union branch indexes and lengths are still checked,
	// their range and UTF-8 are not) and their columns come out all NULL.
	Needed []bool
}

// column is one decoded table column: the Arrow buffers the decoder writes
// it into.
//
// Values are written in place at row Decoder.n as they are decoded; the
// row becomes part of the batch only when commit advances n, so a rejected
// record leaves nothing behind (its writes are overwritten by the next).
type column struct {
	name     string
	typ      arrow.DataType
	kind     kind
	nullable bool

	prec, scale int32 // of a decimal

	// The validity bitmap is started (bits != nil) by the first null of the
	// batch, possibly of a rejected record; from then on every value sets
	// its bit. nulls counts the committed nulls: with none, the array gets
	// no bitmap.
	valid *memory.Buffer
	bits  []byte
	nulls int

	vals *memory.Buffer // values (a bitmap for bool; offsets for string)
	v1   []byte
	v2   []uint16
	v4   []uint32
	v8   []uint64
	off  []int32        // string offsets: row r is dat[off[r]:off[r+1]]
	data *memory.Buffer // string bytes
	dat  []byte
}

// Decoder decodes Avro binary records into Arrow arrays. It is not safe for
// concurrent use.
//
// Each writer schema is compiled once (Writer) into a flat program of
// operations, one per writer field, that reads the binary encoding and
// writes the Arrow buffers (allocated from mem) directly: no generic
// values, maps, interface calls or reflection per record.
type Decoder struct {
	schema *arrow.Schema
	mem    memory.Allocator
	cols   []column // the decoded (needed) columns
	pos    []int    // schema column of each of cols
	colOf  []int    // decoded column of each schema column, -1 if not needed
	nulls  []arrow.Array
	reader *Writer // the program for records written with SchemaFor(schema)
	nulled []*column
	n      int // rows buffered
	cap    int // rows the buffers have room for
}

// minRows is the room the first batch starts with.
const minRows = 256

// NewDecoder decodes records of the table schema. It panics if
// CheckSchema(schema) fails: the planner checks the schema first.
func NewDecoder(schema *arrow.Schema, mem memory.Allocator, opts Options) *Decoder {
	if err := CheckSchema(schema); err != nil {
		panic(err)
	}
	d := &Decoder{
		schema: schema,
		mem:    mem,
		nulls:  make([]arrow.Array, schema.NumFields()),
	}
	for c := range schema.Fields() {
		if opts.Needed != nil && c < len(opts.Needed) && !opts.Needed[c] {
			d.colOf = append(d.colOf, -1)
			continue
		}
		d.colOf = append(d.colOf, len(d.pos))
		d.pos = append(d.pos, c)
	}
	d.cols = make([]column, len(d.pos))
	d.nulled = make([]*column, 0, len(d.pos))
	for c, fc := range d.pos {
		f := schema.Field(fc)
		col := &d.cols[c]
		col.name = f.Name
		col.typ = f.Type
		col.kind = columnKind(f.Type)
		col.nullable = f.Nullable
		if col.kind == kDecimal {
			t := f.Type.(*arrow.Decimal128Type)
			col.prec, col.scale = t.Precision, t.Scale
		}
	}
	rs, err := SchemaFor(schema, "")
	if err != nil {
		panic(err)
	}
	if d.reader, err = d.Writer(rs); err != nil {
		panic(fmt.Sprintf("avro format: own schema does not compile: %v", err))
	}
	d.alloc(minRows, 0)
	return d
}

// alloc gives every column fresh buffers with room for rows rows (and
// strBytes string bytes per string column).
func (d *Decoder) alloc(rows, strBytes int) {
	for c := range d.cols {
		col := &d.cols[c]
		col.valid = memory.NewResizableBuffer(d.mem)
		col.vals = memory.NewResizableBuffer(d.mem)
		col.bits = nil
		col.nulls = 0
		if col.kind == kString {
			col.data = memory.NewResizableBuffer(d.mem)
			col.data.Reserve(max(strBytes, 64))
			col.dat = col.data.Buf()
		}
	}
	d.cap = 0
	d.grow(rows)
	for c := range d.cols {
		if col := &d.cols[c]; col.kind == kString {
			col.off[0] = 0
		}
	}
}

// grow makes room for rows rows in every column, keeping their contents.
func (d *Decoder) grow(rows int) {
	for c := range d.cols {
		col := &d.cols[c]
		if col.bits != nil {
			col.valid.Reserve(int(bitutil.BytesForBits(int64(rows))))
			col.bits = col.valid.Buf()
		}
		switch col.kind {
		case kBool:
			col.vals.Reserve(int(bitutil.BytesForBits(int64(rows))))
			col.v1 = col.vals.Buf()
		case kInt8:
			col.vals.Reserve(rows)
			col.v1 = col.vals.Buf()
		case kInt16:
			col.vals.Reserve(2 * rows)
			col.v2 = arrow.Uint16Traits.CastFromBytes(col.vals.Buf())
		case kInt32, kFloat32, kDate32:
			col.vals.Reserve(4 * rows)
			col.v4 = arrow.Uint32Traits.CastFromBytes(col.vals.Buf())
		case kInt64, kFloat64, kTsMilli, kTsMicro:
			col.vals.Reserve(8 * rows)
			col.v8 = arrow.Uint64Traits.CastFromBytes(col.vals.Buf())
		case kDecimal: // row r is v8[2r] (low word), v8[2r+1] (high word)
			col.vals.Reserve(16 * rows)
			col.v8 = arrow.Uint64Traits.CastFromBytes(col.vals.Buf())
		case kString:
			col.vals.Reserve(4 * (rows + 1))
			col.off = arrow.Int32Traits.CastFromBytes(col.vals.Buf())
		}
	}
	d.cap = rows
}

// Len is the number of rows buffered since the last Flush.
func (d *Decoder) Len() int { return d.n }

// Flush returns a new record of the buffered rows (the caller owns it) and
// starts a new batch, pre-sized like this one.
func (d *Decoder) Flush() arrow.RecordBatch {
	n := d.n
	arrs := make([]arrow.Array, d.schema.NumFields())
	strBytes := 0
	for c := range d.cols {
		col := &d.cols[c]
		var valid *memory.Buffer
		if col.nulls > 0 {
			col.valid.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
			valid = col.valid
		}
		bufs := []*memory.Buffer{valid, col.vals}
		switch col.kind {
		case kBool:
			col.vals.ResizeNoShrink(int(bitutil.BytesForBits(int64(n))))
		case kString:
			col.vals.ResizeNoShrink(4 * (n + 1))
			dataLen := int(col.off[n])
			col.data.ResizeNoShrink(dataLen)
			strBytes = max(strBytes, dataLen)
			bufs = append(bufs, col.data)
		default:
			col.vals.ResizeNoShrink(n * col.typ.(arrow.FixedWidthDataType).BitWidth() / 8)
		}
		data := array.NewData(col.typ, n, bufs, nil, col.nulls, 0)
		arrs[d.pos[c]] = array.MakeFromData(data)
		data.Release()
		col.release()
	}
	for fc, c := range d.colOf {
		if c < 0 {
			arrs[fc] = d.nullColumn(fc, n)
		}
	}
	rec := array.NewRecordBatch(d.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	d.n = 0
	d.alloc(max(n, minRows), strBytes)
	return rec
}

// nullColumn is an all-NULL array of n rows for skipped column fc: a slice
// of one array kept for the decoder's life.
func (d *Decoder) nullColumn(fc, n int) arrow.Array {
	if a := d.nulls[fc]; a == nil || a.Len() < n {
		if a != nil {
			a.Release()
		}
		d.nulls[fc] = array.MakeArrayOfNull(d.mem, d.schema.Field(fc).Type, max(n, 2*d.cap))
	}
	return array.NewSlice(d.nulls[fc], 0, int64(n))
}

func (col *column) release() {
	col.valid.Release()
	col.vals.Release()
	if col.data != nil {
		col.data.Release()
	}
}

// Release frees the buffers of rows not yet flushed. The Decoder must not
// be used afterwards.
func (d *Decoder) Release() {
	for c := range d.cols {
		d.cols[c].release()
	}
	d.cols = nil
	for i, a := range d.nulls {
		if a != nil {
			a.Release()
			d.nulls[i] = nil
		}
	}
}

// Append decodes one record written with the reader schema,
// SchemaFor(schema, ...), and appends it as a row. On error it appends
// nothing and returns a *RecordError.
func (d *Decoder) Append(value []byte) error {
	return d.AppendWriter(d.reader, value)
}

// AppendWriter decodes one record written with w's writer schema and
// appends it as a row. On error it appends nothing and returns a
// *RecordError. w must come from d.Writer.
func (d *Decoder) AppendWriter(w *Writer, payload []byte) error {
	if w.d != d {
		panic("avro: Writer of another Decoder")
	}
	if d.n == d.cap {
		d.grow(2 * d.cap)
	}
	d.nulled = d.nulled[:0]
	if err := d.exec(w.ops, payload); err != nil {
		return err
	}
	for _, col := range d.nulled {
		col.nulls++
	}
	d.n++
	return nil
}

// setNull makes col's row n null: its value slot zeroed (it may hold a
// value of a rejected record), its validity bit cleared.
func (d *Decoder) setNull(col *column, n int) {
	if col.bits == nil {
		col.valid.Reserve(int(bitutil.BytesForBits(int64(d.cap))))
		col.bits = col.valid.Buf()
		bitutil.SetBitsTo(col.bits, 0, int64(n), true)
	}
	col.bits[n>>3] &^= 1 << (n & 7)
	switch col.kind {
	case kString:
		col.off[n+1] = col.off[n]
	case kBool:
		bitutil.ClearBit(col.v1, n)
	case kInt8:
		col.v1[n] = 0
	case kInt16:
		col.v2[n] = 0
	case kInt32, kFloat32, kDate32:
		col.v4[n] = 0
	case kDecimal:
		col.v8[2*n], col.v8[2*n+1] = 0, 0
	default:
		col.v8[n] = 0
	}
	d.nulled = append(d.nulled, col)
}

// setValid marks col's row n valid once the batch has a bitmap.
func (col *column) setValid(n int) {
	if col.bits != nil {
		col.bits[n>>3] |= 1 << (n & 7)
	}
}

// putString appends s as col's row n.
func (col *column) putString(n int, s []byte) bool {
	start := int(col.off[n])
	e := start + len(s)
	if e > len(col.dat) {
		if e > math.MaxInt32 {
			return false
		}
		col.data.Reserve(max(e, 2*len(col.dat)))
		col.dat = col.data.Buf()
	}
	copy(col.dat[start:], s)
	col.off[n+1] = int32(e)
	return true
}
