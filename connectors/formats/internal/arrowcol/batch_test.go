package arrowcol

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBatch writes rows as a decoder does (values in place, a null started
// late, a skipped column), across a Grow and two Flushes, and checks the
// records and that every buffer is freed.
func TestBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "skipped", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	cols := make([]Column, 2)
	cols[0].Init(arrow.PrimitiveTypes.Int64)
	cols[1].Init(arrow.BinaryTypes.String)
	var b Batch
	b.Init(schema, mem, []*Column{&cols[0], &cols[1]}, []int{0, 2})

	const rows = MinRows + 10 // one Grow
	for batch := 0; batch < 2; batch++ {
		for n := 0; n < rows; n++ {
			if n == b.Cap {
				b.Grow(2 * b.Cap)
			}
			i, s := &cols[0], &cols[1]
			i.V8[n] = uint64(n)
			if n%100 == 99 {
				i.SetNull(n, b.Cap)
				i.Nulls++
			} else {
				i.SetValid(n)
			}
			if !s.PutString(n, []byte("row")) {
				t.Fatal("PutString failed")
			}
			s.SetValid(n)
		}
		rec := b.Flush(rows)
		if rec.NumRows() != rows {
			t.Fatalf("%d rows, want %d", rec.NumRows(), rows)
		}
		ia := rec.Column(0).(*array.Int64)
		for n := 0; n < rows; n++ {
			if null := n%100 == 99; ia.IsNull(n) != null || !null && ia.Value(n) != int64(n) || null && ia.Value(n) != 0 {
				t.Fatalf("batch %d row %d: null %v value %d", batch, n, ia.IsNull(n), ia.Value(n))
			}
		}
		if rec.Column(1).NullN() != rows {
			t.Errorf("skipped column: %d nulls, want %d", rec.Column(1).NullN(), rows)
		}
		if sa := rec.Column(2).(*array.String); sa.NullN() != 0 || sa.Value(rows-1) != "row" || sa.NullBitmapBytes() != nil {
			t.Errorf("string column: %d nulls, last %q", sa.NullN(), sa.Value(rows-1))
		}
		rec.Release()
	}
	b.Release()
}
