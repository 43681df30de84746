package checkpoint

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// aggSlots is the state of a windowed aggregate: per key and window a sum
// and a count, plus operator-wide offsets and watermark.
var aggSlots = []Slot{
	{Name: "window_agg", Values: []arrow.Field{
		{Name: "sum_v", Type: arrow.PrimitiveTypes.Float64},
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "distinct_keys", Values: []arrow.Field{
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64}, // shared column
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}},
	{Name: "source_offsets", Raw: true, Values: []arrow.Field{
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "watermark", Raw: true, Values: []arrow.Field{
		{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
	}},
}

// aggRecord builds n rows of every slot kind for subtask, seeded by seed,
// with nulls in value columns.
func aggRecord(t testing.TB, schema *arrow.Schema, seed, n int) arrow.RecordBatch {
	t.Helper()
	b := NewRowBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < n; i++ {
		k := seed*1000 + i
		switch i % 4 {
		case 0:
			b.Windowed("window_agg", int32(k%128), fmt.Sprintf(`["sensor-%02d"]`, k), int64(k)*1000, int64(k)*1000+5000)
			if k%3 == 0 {
				b.Value("sum_v").AppendNull()
			} else {
				b.Value("sum_v").(*array.Float64Builder).Append(float64(k) / 4)
			}
			b.Value("cnt").(*array.Int64Builder).Append(int64(k))
		case 1:
			b.Keyed("distinct_keys", int32(k%128), fmt.Sprintf(`["k\"%d"]`, k))
			lb := b.Value("tags").(*array.ListBuilder)
			if k%5 != 0 {
				lb.Append(true)
				lb.ValueBuilder().(*array.StringBuilder).Append("a")
				lb.ValueBuilder().(*array.StringBuilder).AppendNull()
			} // else left null
		case 2:
			b.Raw("source_offsets")
			b.Value("partition").(*array.Int32Builder).Append(int32(i))
			b.Value("offset").(*array.Int64Builder).Append(int64(k) * 17)
		case 3:
			b.Raw("watermark")
			if k%2 == 0 {
				b.Value("watermark").(*array.Int64Builder).Append(int64(k))
			}
		}
	}
	rec, err := b.NewRecord()
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// sameRows fails unless got and want hold equal columns (schema metadata
// aside).
func sameRows(t testing.TB, got, want arrow.RecordBatch) {
	t.Helper()
	if got.NumRows() != want.NumRows() || got.NumCols() != want.NumCols() {
		t.Fatalf("shape %dx%d, want %dx%d", got.NumRows(), got.NumCols(), want.NumRows(), want.NumCols())
	}
	for i := 0; i < int(got.NumCols()); i++ {
		if !array.Equal(got.Column(i), want.Column(i)) {
			t.Fatalf("column %s:\n got %v\nwant %v", got.ColumnName(i), got.Column(i), want.Column(i))
		}
	}
}
