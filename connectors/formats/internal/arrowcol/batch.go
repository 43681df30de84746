package arrowcol

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MinRows is the room a decoder's first batch starts with.
const MinRows = 256

// Batch is the rows a decoder has buffered since its last flush: a Column
// per decoded schema column, and for each column not decoded (projection
// pushdown) an all-NULL array sliced for every record.
//
// A decoder keeps its Batch by value and checks for room per row with
// d.batch.Cap, a plain field read.
type Batch struct {
	Cap int // rows the buffers have room for

	schema *arrow.Schema
	mem    memory.Allocator
	cols   []*Column // the decoded columns
	pos    []int     // schema column of each of cols
	nulls  []arrow.Array
}

// Init sets b up for records of schema whose column pos[k] is decoded into
// cols[k] (the others come out all NULL), allocated from mem, and
// allocates the first batch. cols point into the decoder's own columns,
// which must not move afterwards.
func (b *Batch) Init(schema *arrow.Schema, mem memory.Allocator, cols []*Column, pos []int) {
	b.schema, b.mem, b.cols, b.pos = schema, mem, cols, pos
	b.nulls = make([]arrow.Array, schema.NumFields())
	b.alloc(MinRows, 0)
}

// alloc gives every column fresh buffers with room for rows rows (and
// strBytes string bytes per string column).
func (b *Batch) alloc(rows, strBytes int) {
	for _, c := range b.cols {
		c.alloc(b.mem, rows, strBytes)
	}
	b.Cap = rows
}

// Grow makes room for rows rows in every column, keeping their contents.
func (b *Batch) Grow(rows int) {
	for _, c := range b.cols {
		c.grow(rows)
	}
	b.Cap = rows
}

// Flush returns a new record of the first n rows (the caller owns it) and
// starts a new batch, pre-sized like this one, with no nulls.
func (b *Batch) Flush(n int) arrow.RecordBatch {
	arrs := make([]arrow.Array, b.schema.NumFields())
	strBytes := 0
	for k, c := range b.cols {
		var sb int
		arrs[b.pos[k]], sb = c.finish(n)
		strBytes = max(strBytes, sb)
	}
	for fc, a := range arrs {
		if a == nil {
			arrs[fc] = b.nullColumn(fc, n)
		}
	}
	rec := array.NewRecordBatch(b.schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	b.alloc(max(n, MinRows), strBytes)
	return rec
}

// nullColumn is an all-NULL array of n rows for column fc: a slice of one
// array kept for the decoder's life.
func (b *Batch) nullColumn(fc, n int) arrow.Array {
	if a := b.nulls[fc]; a == nil || a.Len() < n {
		if a != nil {
			a.Release()
		}
		b.nulls[fc] = array.MakeArrayOfNull(b.mem, b.schema.Field(fc).Type, max(n, 2*b.Cap))
	}
	return array.NewSlice(b.nulls[fc], 0, int64(n))
}

// Release frees the buffers of rows not yet flushed. The Batch must not be
// used afterwards.
func (b *Batch) Release() {
	for _, c := range b.cols {
		c.release()
	}
	b.cols = nil
	for i, a := range b.nulls {
		if a != nil {
			a.Release()
			b.nulls[i] = nil
		}
	}
}
