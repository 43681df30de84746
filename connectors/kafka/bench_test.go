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
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
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
		benchBroker, benchErr = StartBroker(BrokerConfig{Topics: []TopicSpec{{"readings", 4}}})
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
