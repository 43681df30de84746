package objectstore

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// rowGroupBytes caps a row group's buffered (compressed) size; a row
// group is also cut at maxRowGroupRows.
const (
	rowGroupBytes   = 64 << 20
	maxRowGroupRows = 1 << 20
)

var codecs = map[string]compress.Compression{
	"zstd":   compress.Codecs.Zstd,
	"snappy": compress.Codecs.Snappy,
	"gzip":   compress.Codecs.Gzip,
	"none":   compress.Codecs.Uncompressed,
}

// pqFile is one Parquet file being written: the table's rows, typed by
// its Arrow schema (stored in the file, so that readers get Arrow's
// types back), row groups buffered and cut by size.
type pqFile struct {
	fw   *pqarrow.FileWriter
	out  *countingWriter
	rows int64
	// The open row group's Arrow bytes, and the Arrow bytes of the row
	// groups written out: their ratio to out.n estimates how big the
	// open row group will be in the file (the writer buffers it whole).
	groupArrow, doneArrow int64
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newPQFile(w io.Writer, schema *arrow.Schema, codec compress.Compression, mem memory.Allocator) (*pqFile, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithAllocator(mem),
		parquet.WithMaxRowGroupLength(maxRowGroupRows),
		parquet.WithCreatedBy("clink"),
	)
	out := &countingWriter{w: w}
	fw, err := pqarrow.NewFileWriter(schema, out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		return nil, err
	}
	return &pqFile{fw: fw, out: out}, nil
}

// write appends rec's rows (every row of rec is live).
func (f *pqFile) write(rec arrow.RecordBatch) error {
	if err := f.fw.WriteBuffered(rec); err != nil {
		return err
	}
	f.rows += rec.NumRows()
	f.groupArrow += recordBytes(rec)
	if f.pending() >= rowGroupBytes {
		f.doneArrow += f.groupArrow
		f.groupArrow = 0
		return f.fw.NewBufferedRowGroupChecked()
	}
	return nil
}

// pending estimates the open row group's size in the file, from the
// compression the written row groups got (none known: as in memory).
func (f *pqFile) pending() int64 {
	if f.doneArrow == 0 || f.out.n == 0 {
		return f.groupArrow
	}
	return int64(float64(f.groupArrow) * float64(f.out.n) / float64(f.doneArrow))
}

// size estimates the file's size when closed now.
func (f *pqFile) size() int64 { return f.out.n + f.pending() }

// close writes the footer.
func (f *pqFile) close() error { return f.fw.Close() }

// asSchema wraps rec's columns with schema's field names (a sink's batches
// carry the query's column names; the file has the table's).
func asSchema(rec arrow.RecordBatch, schema *arrow.Schema) (arrow.RecordBatch, error) {
	if rec.Schema().Equal(schema) {
		rec.Retain()
		return rec, nil
	}
	if int(rec.NumCols()) != schema.NumFields() {
		return nil, fmt.Errorf("rows have %d columns, the table %d", rec.NumCols(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(f.Type, rec.Column(i).DataType()) {
			return nil, fmt.Errorf("column %s is %s in the rows, %s in the table", f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	return array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()), nil
}

// recordBytes is the size of rec's buffers (slices count whole).
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return n
}
