// Package vector holds the unit of data that flows between operators: an
// Arrow record batch plus an optional selection vector.
package vector

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batch is a micro-batch: Arrow columns, their physical length, and an
// optional selection vector naming the live rows (nil = every row is live).
//
// Ownership: a Batch owns one reference to Rec. Whoever receives a Batch
// either passes it on or calls Release. Filters shrink Sel instead of copying
// columns; a batch is compacted (Compact) only where it leaves the process or
// is written.
//
// RowWatermark, when non-nil, is aligned with the physical rows of Rec: for
// row i it holds the watermark of the row's own source partition just before
// that row was read. Window operators decide lateness per partition with it
// (DESIGN §3), which makes results independent of batch boundaries and of how
// partitions interleave.
//
// Kinds, when non-nil, makes the batch part of a changelog: for physical row
// i it says whether the row is an insert, the old or new image of an update,
// or a delete (Flink's RowKind). nil means every row is an insert.
type Batch struct {
	Rec          arrow.RecordBatch
	Sel          []int32
	RowWatermark []int64
	Kinds        []RowKind
}

// RowKind is a changelog row's kind.
type RowKind int8

const (
	// Insert (+I) adds a row.
	Insert RowKind = iota
	// UpdateBefore (-U) retracts the old image of an updated row.
	UpdateBefore
	// UpdateAfter (+U) is the new image of an updated row.
	UpdateAfter
	// Delete (-D) removes a row.
	Delete
)

// String is Flink's short form: +I, -U, +U, -D.
func (k RowKind) String() string {
	switch k {
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return "+I"
}

// New wraps rec (taking over the caller's reference) with no selection.
func New(rec arrow.RecordBatch) *Batch { return &Batch{Rec: rec} }

// NumRows is the physical row count of the columns.
func (b *Batch) NumRows() int { return int(b.Rec.NumRows()) }

// Len is the number of live rows.
func (b *Batch) Len() int {
	if b.Sel != nil {
		return len(b.Sel)
	}
	return int(b.Rec.NumRows())
}

// Column returns column i (physical rows).
func (b *Batch) Column(i int) arrow.Array { return b.Rec.Column(i) }

// Schema returns the batch's schema.
func (b *Batch) Schema() *arrow.Schema { return b.Rec.Schema() }

// Release drops the batch's reference to its record.
func (b *Batch) Release() {
	if b.Rec != nil {
		b.Rec.Release()
		b.Rec = nil
	}
}

// Rows calls fn for every live row index in order. It is meant for cold paths
// and tests; kernels iterate Sel themselves.
func (b *Batch) Rows(fn func(i int)) {
	if b.Sel != nil {
		for _, i := range b.Sel {
			fn(int(i))
		}
		return
	}
	n := b.NumRows()
	for i := 0; i < n; i++ {
		fn(i)
	}
}

// Compact returns a batch with the same live rows and no selection vector.
// A dense batch is returned as is (same pointer).
func (b *Batch) Compact(mem memory.Allocator) *Batch {
	if b.Sel == nil {
		return b
	}
	idx := make([]int, len(b.Sel))
	for k, i := range b.Sel {
		idx[k] = int(i)
	}
	cols := make([]arrow.Array, b.Rec.NumCols())
	for c := range cols {
		cols[c] = Take(mem, b.Rec.Column(c), b.Sel)
	}
	out := &Batch{Rec: array.NewRecordBatch(b.Rec.Schema(), cols, int64(len(b.Sel)))}
	for _, c := range cols {
		c.Release()
	}
	if b.RowWatermark != nil {
		wm := make([]int64, len(b.Sel))
		for k, i := range b.Sel {
			wm[k] = b.RowWatermark[i]
		}
		out.RowWatermark = wm
	}
	if b.Kinds != nil {
		kinds := make([]RowKind, len(b.Sel))
		for k, i := range b.Sel {
			kinds[k] = b.Kinds[i]
		}
		out.Kinds = kinds
	}
	b.Release()
	return out
}
