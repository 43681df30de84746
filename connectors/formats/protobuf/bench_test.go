package protobuf

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/clink-dev/clink/connectors/formats/protobuf/internal/benchpb"
	"github.com/clink-dev/clink/vector"
)

var sensorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
	{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64},
	{Name: "humidity", Type: arrow.PrimitiveTypes.Int32},
	{Name: "battery", Type: arrow.PrimitiveTypes.Int32},
}, nil)

// sensorMessages are n readings serialized by proto.Marshal of the
// generated struct, and their total size.
func sensorMessages(n int) ([][]byte, int) {
	r := rand.New(rand.NewPCG(1, 1))
	msgs := make([][]byte, n)
	size := 0
	for i := range msgs {
		m := &benchpb.Reading{
			SensorId: fmt.Sprintf("sensor-%03d", r.IntN(1000)),
			Ts:       1_700_000_000_000 + int64(i)*10,
			TempC:    15 + r.Float64()*20,
			Humidity: int32(20 + r.IntN(70)),
			Battery:  int32(1 + r.IntN(100)),
		}
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		msgs[i] = b
		size += len(b)
	}
	return msgs, size
}

// TestBenchProtoCurrent: the descriptor compiled from bench.proto at run
// time is the one bench.pb.go was generated from, and the decoder reads
// what the generated code writes.
func TestBenchProtoCurrent(t *testing.T) {
	src, err := os.ReadFile("internal/benchpb/bench.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := mustCompile(t, string(src), "clink.bench.Reading")
	gen := (&benchpb.Reading{}).ProtoReflect().Descriptor()
	if md.Fields().Len() != gen.Fields().Len() {
		t.Fatalf("bench.pb.go is stale: %d fields, bench.proto %d; run go generate ./connectors/formats/protobuf/internal/benchpb", gen.Fields().Len(), md.Fields().Len())
	}
	for i := 0; i < md.Fields().Len(); i++ {
		f, g := md.Fields().Get(i), gen.Fields().Get(i)
		if f.Name() != g.Name() || f.Number() != g.Number() || f.Kind() != g.Kind() {
			t.Fatalf("bench.pb.go is stale at field %s; run go generate ./connectors/formats/protobuf/internal/benchpb", f.Name())
		}
	}
	msgs, _ := sensorMessages(100)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dec, err := NewDecoder(sensorSchema, md, mem, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Release()
	for _, m := range msgs {
		if err := dec.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	rec := dec.Flush()
	defer rec.Release()
	var r benchpb.Reading
	for i, m := range msgs {
		if err := proto.Unmarshal(m, &r); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%q|%d|%v|%d|%d", rec.Column(0).(*array.String).Value(i), rec.Column(1).(*array.Int64).Value(i),
			rec.Column(2).(*array.Float64).Value(i), rec.Column(3).(*array.Int32).Value(i), rec.Column(4).(*array.Int32).Value(i))
		want := fmt.Sprintf("%q|%d|%v|%d|%d", r.SensorId, r.Ts, r.TempC, r.Humidity, r.Battery)
		if got != want {
			t.Fatalf("row %d: %s, want %s", i, got, want)
		}
	}
}

// benchRows is the batch size of the benchmarks: rows per Flush.
const benchRows = 1024

// BenchmarkDecodeArrow decodes sensor readings into Arrow batches of
// benchRows rows, Flush and Release included.
func BenchmarkDecodeArrow(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	md := (&benchpb.Reading{}).ProtoReflect().Descriptor()
	dec, err := NewDecoder(sensorSchema, md, memory.NewGoAllocator(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Release()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, m := range msgs {
			if err := dec.Append(m); err != nil {
				b.Fatal(err)
			}
		}
		dec.Flush().Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/record")
}

// BenchmarkUnmarshalGenerated is the baseline: proto.Unmarshal of the same
// readings into a reused generated struct (no Arrow at all).
func BenchmarkUnmarshalGenerated(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	var r benchpb.Reading
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, m := range msgs {
			if err := proto.Unmarshal(m, &r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/record")
}

// BenchmarkUnmarshalGeneratedToArrow is what a decoder built on generated
// code would do: proto.Unmarshal, then arrow-go's builders.
func BenchmarkUnmarshalGeneratedToArrow(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	var r benchpb.Reading
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sensorSchema)
	defer rb.Release()
	id := rb.Field(0).(*array.StringBuilder)
	ts := rb.Field(1).(*array.Int64Builder)
	temp := rb.Field(2).(*array.Float64Builder)
	hum := rb.Field(3).(*array.Int32Builder)
	bat := rb.Field(4).(*array.Int32Builder)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, m := range msgs {
			if err := proto.Unmarshal(m, &r); err != nil {
				b.Fatal(err)
			}
			id.Append(r.SensorId)
			ts.Append(r.Ts)
			temp.Append(r.TempC)
			hum.Append(r.Humidity)
			bat.Append(r.Battery)
		}
		rb.NewRecordBatch().Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/record")
}

// BenchmarkUnmarshalDynamic: proto.Unmarshal into a dynamicpb message, the
// generic alternative to generated code.
func BenchmarkUnmarshalDynamic(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	m := dynamicpb.NewMessage((&benchpb.Reading{}).ProtoReflect().Descriptor())
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, msg := range msgs {
			if err := proto.Unmarshal(msg, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/record")
}

// BenchmarkEncode writes the readings from one Arrow batch.
func BenchmarkEncode(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	md := (&benchpb.Reading{}).ProtoReflect().Descriptor()
	dec, _ := NewDecoder(sensorSchema, md, memory.NewGoAllocator(), Options{})
	for _, m := range msgs {
		_ = dec.Append(m)
	}
	rec := dec.Flush()
	dec.Release()
	defer rec.Release()
	enc, err := NewEncoder(sensorSchema, md)
	if err != nil {
		b.Fatal(err)
	}
	batch := &vector.Batch{Rec: rec}
	buf := make([]byte, 0, 2*size)
	ends := make([]int, 0, benchRows)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf, ends, err = enc.AppendBatch(buf[:0], ends[:0], batch)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/record")
}

// BenchmarkMarshalGenerated is the encoder's baseline: proto.Marshal of
// generated structs.
func BenchmarkMarshalGenerated(b *testing.B) {
	msgs, size := sensorMessages(benchRows)
	rs := make([]*benchpb.Reading, len(msgs))
	for i, m := range msgs {
		rs[i] = &benchpb.Reading{}
		_ = proto.Unmarshal(m, rs[i])
	}
	buf := make([]byte, 0, 2*size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf = buf[:0]
		for _, r := range rs {
			var err error
			if buf, err = (proto.MarshalOptions{}).MarshalAppend(buf, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchRows), "ns/record")
}
