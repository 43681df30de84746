package json

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bidLines are Nexmark-like bid records.
func bidLines() [][]byte {
	var lines [][]byte
	for i := range 1024 {
		lines = append(lines, fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":"channel-%d","url":"https://www.nexmark.com/item.htm?query=1&channel_id=%d","dateTime":%d,"extra":"qwertyuiopasdfghjklzxcvbnmqwertyuiopasdfghjklzxcvbnm%d"}`, 1000+i, 2000+i, 100*i, i%10, i, 1700000000000+int64(i), i))
	}
	return lines
}

var bidSchema = arrow.NewSchema([]arrow.Field{
	{Name: "auction", Type: arrow.PrimitiveTypes.Int64}, {Name: "bidder", Type: arrow.PrimitiveTypes.Int64},
	{Name: "price", Type: arrow.PrimitiveTypes.Int64}, {Name: "channel", Type: arrow.BinaryTypes.String},
	{Name: "url", Type: arrow.BinaryTypes.String}, {Name: "dateTime", Type: arrow.PrimitiveTypes.Int64},
	{Name: "extra", Type: arrow.BinaryTypes.String}}, nil)

func benchDecode(b *testing.B, schema *arrow.Schema, opts Options) {
	lines := bidLines()
	d := NewDecoder(schema, memory.DefaultAllocator, opts)
	defer d.Release()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := d.Append(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
		if d.Len() == 1024 {
			d.Flush().Release()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkDecodeSkipping decodes bid lines declaring only two of their
// columns: the undeclared ones, long strings among them, are skipped.
func BenchmarkDecodeSkipping(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "auction", Type: arrow.PrimitiveTypes.Int64}, {Name: "price", Type: arrow.PrimitiveTypes.Int64}}, nil)
	benchDecode(b, schema, Options{})
}

// BenchmarkDecodeProjected decodes the bid table whole, as Nexmark q0
// needs it (without channel and url: projection pushdown) and as q5 does
// (auction and dateTime).
func BenchmarkDecodeProjected(b *testing.B) {
	b.Run("all", func(b *testing.B) { benchDecode(b, bidSchema, Options{}) })
	b.Run("q0", func(b *testing.B) {
		benchDecode(b, bidSchema, Options{Needed: []bool{true, true, true, false, false, true, true}})
	})
	b.Run("q5", func(b *testing.B) {
		benchDecode(b, bidSchema, Options{Needed: []bool{true, false, false, false, false, true, false}})
	})
}
