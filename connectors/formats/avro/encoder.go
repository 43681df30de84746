package avro

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
	"github.com/clink-dev/clink/vector"
)

// encColumn is one column's writer, bound to one record's array so that
// the row loop only switches on a small integer.
type encColumn struct {
	kind     arrowcol.Kind
	nullable bool // written as the union ["null", T]
	arrowcol.Values
}

// Encoder writes rows as Avro binary records of the schema
// SchemaFor(schema, ...). It is not safe for concurrent use.
type Encoder struct {
	schema *arrow.Schema
	cols   []encColumn
	rec    arrow.RecordBatch // the record cols are bound to
}

// NewEncoder writes records of the table schema; it fails if
// CheckSchema(schema) does.
func NewEncoder(schema *arrow.Schema) (*Encoder, error) {
	if err := CheckSchema(schema); err != nil {
		return nil, err
	}
	e := &Encoder{schema: schema, cols: make([]encColumn, schema.NumFields())}
	for c, f := range schema.Fields() {
		e.cols[c] = encColumn{kind: arrowcol.KindOf(f.Type), nullable: f.Nullable}
	}
	return e, nil
}

// bind points the column writers at rec's arrays. rec must have the
// Encoder's schema (same column types, in order).
func (e *Encoder) bind(rec arrow.RecordBatch) {
	if rec == e.rec {
		return
	}
	if int(rec.NumCols()) != len(e.cols) {
		panic(fmt.Sprintf("avro encoder: record has %d columns, schema %d", rec.NumCols(), len(e.cols)))
	}
	for c := range e.cols {
		if !e.cols[c].Bind(rec.Column(c)) {
			panic(fmt.Sprintf("avro encoder: column %d is %s, not %s", c, rec.Column(c).DataType(), e.schema.Field(c).Type))
		}
	}
	e.rec = rec
}

// AppendRow appends physical row i of rec to dst as one Avro binary
// record (no framing: the caller adds the registry's prefix) and returns
// the extended buffer. It does not allocate beyond growing dst; binding to
// a new rec's arrays is done once per record.
func (e *Encoder) AppendRow(dst []byte, rec arrow.RecordBatch, i int) []byte {
	e.bind(rec)
	return e.row(dst, i)
}

// AppendBatch appends each live row of b (in selection order) to dst as
// one record, appending to ends the offset in dst where each record ends,
// and returns both.
func (e *Encoder) AppendBatch(dst []byte, b *vector.Batch, ends []int) ([]byte, []int) {
	e.bind(b.Rec)
	if b.Sel != nil {
		for _, i := range b.Sel {
			dst = e.row(dst, int(i))
			ends = append(ends, len(dst))
		}
		return dst, ends
	}
	for i, n := 0, b.NumRows(); i < n; i++ {
		dst = e.row(dst, i)
		ends = append(ends, len(dst))
	}
	return dst, ends
}

// Unbind drops the reference to the last record written, so that it can
// be garbage-collected.
func (e *Encoder) Unbind() { e.rec = nil }

func (e *Encoder) row(dst []byte, i int) []byte {
	for c := range e.cols {
		col := &e.cols[c]
		if col.nullable {
			if col.IsNull(i) {
				dst = append(dst, 0) // branch 0: null
				continue
			}
			dst = append(dst, 2) // branch 1, zig-zag encoded
		}
		// A NOT NULL column holding a null (which the planner prevents)
		// is written with the value its slot holds.
		switch col.kind {
		case arrowcol.Int64, arrowcol.TimestampMs, arrowcol.TimestampUs:
			dst = appendLong(dst, col.I64[i])
		case arrowcol.Float64:
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(col.F64[i]))
		case arrowcol.String:
			s := col.Str.Value(i)
			dst = appendLong(dst, int64(len(s)))
			dst = append(dst, s...)
		case arrowcol.Int32, arrowcol.Date:
			dst = appendLong(dst, int64(col.I32[i]))
		case arrowcol.Int16:
			dst = appendLong(dst, int64(col.I16[i]))
		case arrowcol.Int8:
			dst = appendLong(dst, int64(col.I8[i]))
		case arrowcol.Float32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(col.F32[i]))
		case arrowcol.Bool:
			if col.Bool.Value(i) {
				dst = append(dst, 1)
			} else {
				dst = append(dst, 0)
			}
		case arrowcol.Decimal:
			dst = appendDecimal(dst, col.Dec[i])
		}
	}
	return dst
}

// appendDecimal writes v's unscaled value as Avro bytes: big-endian two's
// complement in the fewest bytes, as Java's BigInteger.toByteArray.
func appendDecimal(dst []byte, v decimal128.Num) []byte {
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[:8], uint64(v.HighBits()))
	binary.BigEndian.PutUint64(buf[8:], v.LowBits())
	k := 0
	for k < 15 && (buf[k] == 0 && buf[k+1]&0x80 == 0 || buf[k] == 0xff && buf[k+1]&0x80 != 0) {
		k++
	}
	dst = appendLong(dst, int64(16-k))
	return append(dst, buf[k:]...)
}
