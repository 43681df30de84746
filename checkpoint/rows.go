package checkpoint

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowBuilder builds state records a row at a time: start a row with Keyed,
// Windowed or Raw, then append at most one value to each of the slot's
// value columns (Value); columns left out are null. It is for cold paths
// (checkpoints of small state, tools, tests); operators with columnar state
// fill the record's columns directly.
type RowBuilder struct {
	schema *arrow.Schema
	bld    *array.RecordBuilder
	col    map[string]int
	n      int // rows started
}

// NewRowBuilder returns a builder for schema (a part's schema or the result
// of Schema).
func NewRowBuilder(mem memory.Allocator, schema *arrow.Schema) *RowBuilder {
	b := &RowBuilder{schema: schema, bld: array.NewRecordBuilder(mem, schema), col: map[string]int{}}
	for i, f := range schema.Fields() {
		if i >= numFixed {
			b.col[f.Name] = i
		}
	}
	return b
}

// Keyed starts a keyed row without a window.
func (b *RowBuilder) Keyed(slot string, keyGroup int32, key string) {
	b.start(slot, keyGroup)
	b.bld.Field(2).(*array.StringBuilder).Append(key)
	b.bld.Field(3).AppendNull()
	b.bld.Field(4).AppendNull()
}

// Windowed starts a keyed row of window [start, end).
func (b *RowBuilder) Windowed(slot string, keyGroup int32, key string, start, end int64) {
	b.start(slot, keyGroup)
	b.bld.Field(2).(*array.StringBuilder).Append(key)
	b.bld.Field(3).(*array.Int64Builder).Append(start)
	b.bld.Field(4).(*array.Int64Builder).Append(end)
}

// Raw starts a <raw> row (operator-wide state).
func (b *RowBuilder) Raw(slot string) {
	b.start(slot, RawKeyGroup)
	b.bld.Field(2).AppendNull()
	b.bld.Field(3).AppendNull()
	b.bld.Field(4).AppendNull()
}

// Value is the builder of value column name, for the current row. It
// panics if the schema has no such value column.
func (b *RowBuilder) Value(name string) array.Builder {
	i, ok := b.col[name]
	if !ok {
		panic(fmt.Sprintf("checkpoint: no value column %q", name))
	}
	return b.bld.Field(i)
}

func (b *RowBuilder) start(slot string, keyGroup int32) {
	b.pad()
	b.n++
	b.bld.Field(0).(*array.StringBuilder).Append(slot)
	b.bld.Field(1).(*array.Int32Builder).Append(keyGroup)
}

// pad makes every value column as long as the rows started so far.
func (b *RowBuilder) pad() {
	for i := numFixed; i < len(b.bld.Fields()); i++ {
		f := b.bld.Field(i)
		for f.Len() < b.n {
			f.AppendNull()
		}
	}
}

// Len is the number of rows started since the last NewRecord.
func (b *RowBuilder) Len() int { return b.n }

// NewRecord returns the rows built so far and resets the builder. It fails
// if a value column got more than one value in a row.
func (b *RowBuilder) NewRecord() (arrow.RecordBatch, error) {
	b.pad()
	for i := numFixed; i < len(b.bld.Fields()); i++ {
		if l := b.bld.Field(i).Len(); l != b.n {
			err := fmt.Errorf("checkpoint: value column %q has %d values for %d rows", b.schema.Field(i).Name, l, b.n)
			for _, f := range b.bld.Fields() { // reset
				f.NewArray().Release()
			}
			b.n = 0
			return nil, err
		}
	}
	b.n = 0
	return b.bld.NewRecordBatch(), nil
}

// Release frees the builder.
func (b *RowBuilder) Release() { b.bld.Release() }

// WriteRows writes the rows built in b as one record and closes p: the
// whole snapshot of an operator whose state is a few rows. p is closed
// also when building or writing fails.
func (p *PartWriter) WriteRows(b *RowBuilder) error {
	rec, err := b.NewRecord()
	if err != nil {
		p.Close()
		return err
	}
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		p.Close()
		return err
	}
	return p.Close()
}
