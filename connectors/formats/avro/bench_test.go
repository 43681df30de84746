package avro

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	hamba "github.com/hamba/avro/v2"

	"github.com/clink-dev/clink/vector"
)

// sensors is the benchmarks' table: a sensor reading as IoT producers
// write it.
var sensors = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64},
	{Name: "humidity", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// sensor is the same record as a Go struct, for hamba/avro.
type sensor struct {
	SensorID string  `avro:"sensor_id"`
	Ts       int64   `avro:"ts"`
	TempC    float64 `avro:"temp_c"`
	Humidity *int32  `avro:"humidity"`
	Seq      int64   `avro:"seq"`
}

const benchRecords = 4096

// sensorRecords are benchRecords encoded sensor readings.
func sensorRecords(b testing.TB) (recs [][]byte, bytes int) {
	rng := rand.New(rand.NewPCG(7, 8))
	bl := array.NewRecordBuilder(memory.DefaultAllocator, sensors)
	defer bl.Release()
	for i := 0; i < benchRecords; i++ {
		bl.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("sensor-%03d", rng.IntN(1000)))
		bl.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000 + int64(i)*10 + int64(rng.IntN(10))))
		bl.Field(2).(*array.Float64Builder).Append(15 + rng.NormFloat64()*5)
		if rng.IntN(10) == 0 {
			bl.Field(3).AppendNull()
		} else {
			bl.Field(3).(*array.Int32Builder).Append(int32(rng.IntN(100)))
		}
		bl.Field(4).(*array.Int64Builder).Append(int64(i))
	}
	rec := bl.NewRecordBatch()
	defer rec.Release()
	enc, err := NewEncoder(sensors)
	if err != nil {
		b.Fatal(err)
	}
	buf, ends := enc.AppendBatch(nil, vector.New(rec), nil)
	start := 0
	for _, end := range ends {
		recs = append(recs, buf[start:end:end])
		start = end
	}
	return recs, len(buf)
}

// BenchmarkDecodeArrow decodes sensor readings into Arrow batches of
// benchRecords rows.
func BenchmarkDecodeArrow(b *testing.B) {
	recs, size := sensorRecords(b)
	dec := NewDecoder(sensors, memory.DefaultAllocator, Options{})
	defer dec.Release()
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := dec.Append(recs[i%benchRecords]); err != nil {
			b.Fatal(err)
		}
		if dec.Len() == benchRecords {
			dec.Flush().Release()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}

// BenchmarkDecodeHambaStruct is the baseline: hamba/avro's Unmarshal of
// the same records into a Go struct of the same shape.
func BenchmarkDecodeHambaStruct(b *testing.B) {
	recs, size := sensorRecords(b)
	js, _ := SchemaFor(sensors, "")
	schema := hamba.MustParse(js)
	var s sensor
	b.SetBytes(int64(size / len(recs)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := hamba.Unmarshal(schema, recs[i%benchRecords], &s); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}

// BenchmarkEncode writes sensor readings from an Arrow batch.
func BenchmarkEncode(b *testing.B) {
	recs, size := sensorRecords(b)
	dec := NewDecoder(sensors, memory.DefaultAllocator, Options{})
	defer dec.Release()
	for _, r := range recs {
		if err := dec.Append(r); err != nil {
			b.Fatal(err)
		}
	}
	rec := dec.Flush()
	defer rec.Release()
	enc, _ := NewEncoder(sensors)
	batch := vector.New(rec)
	buf := make([]byte, 0, 2*size)
	ends := make([]int, 0, benchRecords)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf, ends = enc.AppendBatch(buf[:0], batch, ends[:0])
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRecords), "ns/record")
}

// BenchmarkEncodeHambaStruct is the encoding baseline: hamba/avro's
// Marshal of the same readings from Go structs.
func BenchmarkEncodeHambaStruct(b *testing.B) {
	recs, _ := sensorRecords(b)
	js, _ := SchemaFor(sensors, "")
	schema := hamba.MustParse(js)
	ss := make([]sensor, len(recs))
	for i, r := range recs {
		if err := hamba.Unmarshal(schema, r, &ss[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := hamba.Marshal(schema, &ss[i%benchRecords]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}
