package nexmark

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func bidSchema() *arrow.Schema {
	var fs []arrow.Field
	for _, f := range tableFields[KindBid] {
		t := arrow.DataType(arrow.PrimitiveTypes.Int64)
		if f.kind == fString {
			t = arrow.BinaryTypes.String
		}
		fs = append(fs, arrow.Field{Name: f.name, Type: t})
	}
	return arrow.NewSchema(fs, nil)
}

// BenchmarkGenerate measures the generator alone (events into structs)
// and into Arrow batches, per bid.
func BenchmarkGenerate(b *testing.B) {
	b.Run("bid/structs", func(b *testing.B) {
		g := NewGenerator(DefaultConfig())
		var bid Bid
		var sum int64
		e := int64(0)
		for i := 0; i < b.N; i++ {
			e = NextOfKind(e, KindBid)
			g.Bid(e, &bid)
			sum += bid.Price + int64(len(bid.Extra))
			e++
		}
		_ = sum
	})
	b.Run("bid/arrow", func(b *testing.B) {
		g := NewGenerator(DefaultConfig())
		schema := bidSchema()
		fields, err := bindColumns(KindBid, schema)
		if err != nil {
			b.Fatal(err)
		}
		w := newBatchWriter(KindBid, schema, fields, memory.NewGoAllocator(), 8192)
		var bid Bid
		var r row
		e := int64(0)
		for i := 0; i < b.N; i++ {
			e = NextOfKind(e, KindBid)
			g.Bid(e, &bid)
			r.bid(&bid)
			w.add(&r)
			e++
			if w.full() {
				w.flush().Release()
			}
		}
		w.release()
	})
}
