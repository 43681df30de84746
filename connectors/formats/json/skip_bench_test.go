package json

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BenchmarkDecodeSkipping decodes Nexmark-like bid lines declaring only
// two of their columns: the undeclared ones, long strings among them, are
// skipped.
func BenchmarkDecodeSkipping(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "auction", Type: arrow.PrimitiveTypes.Int64}, {Name: "price", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var lines [][]byte
	for i := range 1024 {
		lines = append(lines, fmt.Appendf(nil, `{"auction":%d,"bidder":%d,"price":%d,"channel":"channel-%d","url":"https://www.nexmark.com/item.htm?query=1&channel_id=%d","dateTime":%d,"extra":"qwertyuiopasdfghjklzxcvbnmqwertyuiopasdfghjklzxcvbnm%d"}`, 1000+i, 2000+i, 100*i, i%10, i, 1700000000000+int64(i), i))
	}
	d := NewDecoder(schema, memory.DefaultAllocator, Options{})
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
