package kafka

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// The in-process benchmark: the broker shares the process, so its CPU is
// in the figures; `clink bench kafka` measures with the broker in its own
// process. Both loops read the same preloaded topic to its end.

const benchRecords = 200_000

var (
	benchOnce   sync.Once
	benchBroker *Broker
	benchErr    error
)

func benchTopic(b *testing.B) string {
	benchOnce.Do(func() {
		benchBroker, benchErr = StartBroker(BrokerConfig{Topics: []TopicSpec{{"readings", 4}, {"written", 4}}})
		if benchErr != nil {
			return
		}
		var sb strings.Builder
		for i := 0; i < benchRecords; i++ {
			fmt.Fprintf(&sb, `{"sensor_id":"sensor-%03d","ts":%d,"temp_c":%d.%d}`+"\n", i%100, 1772352000000+int64(i/100)*1000, 15+i%21, i%10)
		}
		_, benchErr = Produce(context.Background(), &ClientConfig{Brokers: []string{benchBroker.Addr()}}, ProduceConfig{Topic: "readings", Partition: -1, KeyField: "sensor_id"}, strings.NewReader(sb.String()))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchBroker.Addr()
}

var sensorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// BenchmarkConsume/bare is a franz-go loop that counts records;
// BenchmarkConsume/source is the Kafka source decoding them into Arrow
// batches with per-row watermarks.
func BenchmarkConsume(b *testing.B) {
	addr := benchTopic(b)
	cc := &ClientConfig{Brokers: []string{addr}}
	b.Run("bare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n, err := Consume(context.Background(), cc, ConsumeConfig{Topic: "readings", FromBeginning: true, ToEnd: true, CountOnly: true}, io.Discard)
			if err != nil || n != benchRecords {
				b.Fatal(n, err)
			}
		}
		b.ReportMetric(float64(b.N*benchRecords)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("source", func(b *testing.B) {
		vo, err := spec.Validate(map[string]string{"connector": "kafka", "brokers": addr, "topic": "readings", "scan_bounded": "latest", "event_time_column": "ts", "watermark_lag_ms": "3000"})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			tbl := &connectors.Table{Name: "readings", Schema: sensorSchema, Options: vo, EventTimeCol: 1, WatermarkLag: 3000,
				Runtime: connectors.Runtime{BatchSize: 8192, Linger: 20 * time.Millisecond, Mem: memory.DefaultAllocator}}
			s, err := newSource(tbl)
			if err != nil {
				b.Fatal(err)
			}
			rows := 0
			err = s.Run(context.Background(), func(m engine.Message) error {
				if m.Kind == engine.KindData {
					rows += m.Batch.Len()
					m.Batch.Release()
				}
				return nil
			})
			if err != nil || rows != benchRecords {
				b.Fatal(rows, err)
			}
		}
		b.ReportMetric(float64(b.N*benchRecords)/b.Elapsed().Seconds(), "records/s")
	})
}

// sensorBatch is n readings; every seventh has a NULL sensor_id and, when
// sel, every third row is live.
func sensorBatch(n int, sel bool) *vector.Batch {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sensorSchema)
	defer rb.Release()
	for i := 0; i < n; i++ {
		if i%7 == 6 {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.StringBuilder).Append("sensor-" + string(rune('a'+i%26)))
		}
		rb.Field(1).(*array.Int64Builder).Append(int64(1772352000000 + i))
		rb.Field(2).(*array.Float64Builder).Append(float64(i) / 4)
	}
	b := vector.New(rb.NewRecordBatch())
	if sel {
		for i := 0; i < n; i += 3 {
			b.Sel = append(b.Sel, int32(i))
		}
	}
	return b
}

// BenchmarkSinkWrite produces batches of 1024 readings through the sink to
// the in-process broker (its CPU is in the figures).
func BenchmarkSinkWrite(b *testing.B) {
	addr := benchTopic(b)
	vo, err := spec.Validate(map[string]string{"connector": "kafka", "brokers": addr, "topic": "written", "key_column": "sensor_id"})
	if err != nil {
		b.Fatal(err)
	}
	s, err := newSink(&connectors.Table{Name: "written", Schema: sensorSchema, Options: vo})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	batch := sensorBatch(1024, false)
	defer batch.Release()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.Rec.Retain() // Write releases it
		if err := s.Write(vector.New(batch.Rec)); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch.Len())/b.Elapsed().Seconds(), "rows/s")
}
