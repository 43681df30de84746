package avro

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// Options tunes a Decoder.
type Options struct {
	// Needed, when set, marks the columns the query reads (projection
	// pushdown). The fields of the others are skipped without being
	// converted (their union branch indexes and lengths are still checked,
	// their range and UTF-8 are not) and their columns come out all NULL.
	Needed []bool
	// Required marks the columns a record must give a value (the source's
	// event-time column): a record whose value for one is null, or whose
	// writer schema lacks the field, is rejected with a *RecordError
	// naming it. A required column is always decoded.
	Required []bool
}

// column is one decoded table column: the Arrow buffers the decoder writes
// it into.
//
// Values are written in place at row Decoder.n as they are decoded; the
// row becomes part of the batch only when commit advances n, so a rejected
// record leaves nothing behind (its writes are overwritten by the next).
type column struct {
	arrowcol.Column
	name     string
	nullable bool
	required bool // Options.Required

	prec, scale int32 // of a decimal
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
	batch  arrowcol.Batch
	reader *Writer // the program for records written with SchemaFor(schema)
	nulled []*column
	n      int // rows buffered
}

// NewDecoder decodes records of the table schema. It panics if
// CheckSchema(schema) fails: the planner checks the schema first.
func NewDecoder(schema *arrow.Schema, mem memory.Allocator, opts Options) *Decoder {
	if err := CheckSchema(schema); err != nil {
		panic(err)
	}
	d := &Decoder{
		schema: schema,
		mem:    mem,
	}
	for c := range schema.Fields() {
		required := c < len(opts.Required) && opts.Required[c]
		if opts.Needed != nil && c < len(opts.Needed) && !opts.Needed[c] && !required {
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
		col.Init(f.Type)
		col.nullable = f.Nullable
		col.required = fc < len(opts.Required) && opts.Required[fc]
		if col.Kind == arrowcol.Decimal {
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
	bufs := make([]*arrowcol.Column, len(d.cols))
	for c := range d.cols {
		bufs[c] = &d.cols[c].Column
	}
	d.batch.Init(schema, mem, bufs, d.pos)
	return d
}

// Len is the number of rows buffered since the last Flush.
func (d *Decoder) Len() int { return d.n }

// Flush returns a new record of the buffered rows (the caller owns it) and
// starts a new batch, pre-sized like this one.
func (d *Decoder) Flush() arrow.RecordBatch {
	rec := d.batch.Flush(d.n)
	d.n = 0
	return rec
}

// Release frees the buffers of rows not yet flushed. The Decoder must not
// be used afterwards.
func (d *Decoder) Release() {
	d.batch.Release()
	d.cols = nil
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
	if d.n == d.batch.Cap {
		d.batch.Grow(2 * d.batch.Cap)
	}
	d.nulled = d.nulled[:0]
	if err := d.exec(w.ops, payload); err != nil {
		return err
	}
	for _, col := range d.nulled {
		if col.required {
			return &RecordError{Field: col.name, Reason: "null or missing, and it must hold a value (the event-time column)"}
		}
	}
	for _, col := range d.nulled {
		col.Nulls++
	}
	d.n++
	return nil
}

// setNull makes col's row n null (see arrowcol.Column.SetNull); the
// record counts it when it is committed.
func (d *Decoder) setNull(col *column, n int) {
	col.SetNull(n, d.batch.Cap)
	d.nulled = append(d.nulled, col)
}
