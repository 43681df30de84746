package kafka_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/connectors/formats/registry"
	"github.com/clink-dev/clink/connectors/kafka"
)

// schemaRegistry starts a dev Schema Registry on 127.0.0.1 and returns a
// client of it.
func schemaRegistry(t *testing.T) *registry.Client {
	_, cl := devRegistry(t)
	return cl
}

func toolCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func clientConfig(t *testing.T, b *kafka.Broker) *kafka.ClientConfig {
	cc, err := kafka.NewClientConfig(map[string]string{"brokers": b.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// consumeTool reads a topic from the beginning to its end.
func consumeTool(t *testing.T, cc *kafka.ClientConfig, cfg kafka.ConsumeConfig) (string, error) {
	t.Helper()
	cfg.FromBeginning, cfg.ToEnd = true, true
	var out bytes.Buffer
	_, err := kafka.Consume(toolCtx(t), cc, cfg, &out)
	return out.String(), err
}

const (
	readingV1 = `{"type":"record","name":"Reading","namespace":"clink.test","fields":[
  {"name":"sensor_id","type":"string"},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"temp_c","type":["null","double"],"default":null},
  {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}],"default":null},
  {"name":"count","type":"int"}]}`
	// v2 adds a field with a default: BACKWARD compatible.
	readingV2 = `{"type":"record","name":"Reading","namespace":"clink.test","fields":[
  {"name":"sensor_id","type":"string"},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"temp_c","type":["null","double"],"default":null},
  {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}],"default":null},
  {"name":"count","type":"int"},
  {"name":"site","type":"string","default":"lab"}]}`
	// v3 adds a field without a default: v3 cannot read v2's records.
	readingV3 = `{"type":"record","name":"Reading","namespace":"clink.test","fields":[
  {"name":"sensor_id","type":"string"},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"temp_c","type":["null","double"],"default":null},
  {"name":"price","type":["null",{"type":"bytes","logicalType":"decimal","precision":8,"scale":2}],"default":null},
  {"name":"count","type":"int"},
  {"name":"site","type":"string","default":"lab"},
  {"name":"owner","type":"string"}]}`
)

// JSON lines to Avro with v1 then v2 of a subject, and back; v3 is refused.
func TestToolAvroEvolution(t *testing.T) {
	b := broker(t, "readings:1")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	ctx := toolCtx(t)
	produceAvro := func(schema, lines string) (int64, error) {
		return kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: "readings", Partition: -1, KeyField: "sensor_id",
			ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: schema}, strings.NewReader(lines))
	}
	if n, err := produceAvro(readingV1, `{"sensor_id":"s1","ts":1772352000000,"temp_c":21.5,"price":"12.30","count":1}
{"sensor_id":"s2","ts":"2026-03-01 08:00:00.250","count":2}
`); err != nil || n != 2 {
		t.Fatalf("v1: %d, %v", n, err)
	}
	if n, err := produceAvro(readingV2, `{"sensor_id":"s3","ts":1772352001000,"temp_c":-3,"count":3,"site":"roof"}
`); err != nil || n != 1 {
		t.Fatalf("v2: %d, %v", n, err)
	}
	_, err := produceAvro(readingV3, `{"sensor_id":"s4","ts":1,"count":4,"site":"x","owner":"me"}`+"\n")
	var ie *registry.IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `subject "readings-value"`) || !strings.Contains(err.Error(), "owner") {
		t.Fatalf("v3: %v; want an incompatibility naming the subject and field owner", err)
	}
	if latest, err := reg.Latest(ctx, "readings-value"); err != nil || latest.Version != 2 {
		t.Fatalf("latest: %+v, %v; want version 2", latest, err)
	}

	got, err := consumeTool(t, cc, kafka.ConsumeConfig{Topic: "readings", ValueFormat: kafka.FormatAvroConfluent, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sensor_id":"s1","ts":"2026-03-01 08:00:00.000","temp_c":21.5,"price":12.30,"count":1}
{"sensor_id":"s2","ts":"2026-03-01 08:00:00.250","temp_c":null,"price":null,"count":2}
{"sensor_id":"s3","ts":"2026-03-01 08:00:01.000","temp_c":-3,"price":null,"count":3,"site":"roof"}
`
	if got != want {
		t.Fatalf("consumed:\n%s\nwant:\n%s", got, want)
	}
	got, err = consumeTool(t, cc, kafka.ConsumeConfig{Topic: "readings", ValueFormat: kafka.FormatAvroConfluent, KeyFormat: kafka.FormatRaw, Registry: reg, Max: 1})
	if want := `{"key":"s1","value":{"sensor_id":"s1","ts":"2026-03-01 08:00:00.000","temp_c":21.5,"price":12.30,"count":1}}` + "\n"; err != nil || got != want {
		t.Fatalf("with keys: %q, %v; want %q", got, err, want)
	}
}

// A line that does not fit the schema is an error naming the line and
// the field; the lines before it are sent.
func TestToolProduceBadLine(t *testing.T) {
	b := broker(t, "readings:1")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	n, err := kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "readings", Partition: -1, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: readingV1},
		strings.NewReader(`{"sensor_id":"s1","ts":1,"count":1}`+"\n\n"+`{"sensor_id":"s2","ts":2,"count":"many"}`+"\n"))
	if n != 1 || err == nil || !strings.Contains(err.Error(), `stdin:3: field "count"`) {
		t.Fatalf("%d, %v; want 1 record and an error naming stdin:3 and field count", n, err)
	}
	_, err = kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "readings", Partition: -1, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: readingV1},
		strings.NewReader(`{"sensor_id":"s2","ts":2}`+"\n"))
	if err == nil || !strings.Contains(err.Error(), `stdin:1: field "count"`) {
		t.Fatalf("missing NOT NULL field: %v", err)
	}
	for _, c := range []struct{ schema, want string }{
		{`{"type":"record","name":"r","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}}]}`, `field "e": produce cannot write an enum`},
		{`{"type":"record","name":"r","fields":[{"name":"v","type":["long","null"]}]}`, `field "v": produce writes a nullable field as the union ["null", T]`},
		{`{"type":"record","name":"r","fields":[{"name":"xs","type":{"type":"array","items":"int"}}]}`, `field "xs": type array is not supported`},
	} {
		_, err := kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "readings", Partition: -1, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: c.schema}, strings.NewReader("{}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.schema, err, c.want)
		}
	}
}

const readingProto = `syntax = "proto3";
package clink.test;

import "google/protobuf/timestamp.proto";

message Envelope {
  string id = 1;
}

message Reading {
  message Location {
    string site = 1;
    int32 floor = 2;
  }
  string sensor_id = 1;
  double temp_c = 2;
  int64 seq = 3;
  Location location = 4;
  repeated string tags = 5;
  google.protobuf.Timestamp at = 6;
}
`

func TestToolProtobufRoundTrip(t *testing.T) {
	b := broker(t, "readings:2")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	ctx := toolCtx(t)
	lines := `{"sensor_id":"s1","temp_c":21.5,"seq":"7","location":{"site":"lab","floor":2},"tags":["a","b"],"at":"2026-03-01T08:00:00Z"}
{"sensorId":"s2","seq":8}
`
	n, err := kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: "readings", Partition: 0, ValueFormat: kafka.FormatProtobufConfluent, Registry: reg,
		Schema: readingProto, SchemaName: "reading.proto", Message: "Reading"}, strings.NewReader(lines))
	if err != nil || n != 2 {
		t.Fatalf("produce: %d, %v", n, err)
	}
	// A nested message, by its full name: indexes [1, 0].
	if _, err := kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: "readings", Partition: 0, Subject: "locations", ValueFormat: kafka.FormatProtobufConfluent, Registry: reg,
		Schema: readingProto, Message: "clink.test.Reading.Location"}, strings.NewReader(`{"site":"roof"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	got, err := consumeTool(t, cc, kafka.ConsumeConfig{Topic: "readings", ValueFormat: kafka.FormatProtobufConfluent, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"sensor_id":"s1","temp_c":21.5,"seq":"7","location":{"site":"lab","floor":2},"tags":["a","b"],"at":"2026-03-01T08:00:00Z"}
{"sensor_id":"s2","seq":"8"}
{"site":"roof"}
`
	if got != want {
		t.Fatalf("consumed:\n%s\nwant:\n%s", got, want)
	}
	_, err = kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: "readings", Partition: 0, ValueFormat: kafka.FormatProtobufConfluent, Registry: reg,
		Schema: readingProto, Message: "Reading"}, strings.NewReader(`{"seq":"x"}`+"\n"))
	if err == nil || !strings.Contains(err.Error(), "stdin:1:") || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("bad line: %v", err)
	}
	_, err = kafka.Produce(ctx, cc, kafka.ProduceConfig{Topic: "readings", Partition: 0, ValueFormat: kafka.FormatProtobufConfluent, Registry: reg,
		Schema: readingProto, Message: "Nope"}, strings.NewReader("{}\n"))
	if err == nil || !strings.Contains(err.Error(), `no message "Nope"`) {
		t.Fatalf("unknown message: %v", err)
	}
}

// Records that do not decode name their partition and offset; OnError
// skips them.
func TestToolConsumeErrors(t *testing.T) {
	b := broker(t, "t:1")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	if _, err := kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "t", Partition: 0, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: readingV1},
		strings.NewReader(`{"sensor_id":"s1","ts":1,"count":1}`+"\n")); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Addr(), "t",
		rec{0, "", "\x00\x00\x00\x00\x63\x02"}, // schema id 99
		rec{0, "", `{"plain":"json"}`},         // magic byte '{'
		rec{0, "", "\x00\x00\x00\x00\x01\x02"}, // id 1, truncated
	)
	if _, err := kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "t", Partition: 0, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: readingV1},
		strings.NewReader(`{"sensor_id":"s5","ts":5,"count":5}`+"\n")); err != nil {
		t.Fatal(err)
	}
	cfg := kafka.ConsumeConfig{Topic: "t", ValueFormat: kafka.FormatAvroConfluent, Registry: reg}
	first := `{"sensor_id":"s1","ts":"1970-01-01 00:00:00.001","temp_c":null,"price":null,"count":1}` + "\n"
	got, err := consumeTool(t, cc, cfg)
	if !errors.Is(err, registry.ErrUnknownID) || !strings.Contains(err.Error(), "topic t partition 0 offset 1:") || got != first {
		t.Fatalf("unknown id: %q, %v", got, err)
	}
	var skipped []string
	cfg.OnError = func(err error) { skipped = append(skipped, err.Error()) }
	got, err = consumeTool(t, cc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := first + `{"sensor_id":"s5","ts":"1970-01-01 00:00:00.005","temp_c":null,"price":null,"count":5}` + "\n"; got != want {
		t.Fatalf("skipping: %q, want %q", got, want)
	}
	for i, want := range []string{"offset 1: schema registry", "offset 2: schema registry wire format: wrong magic byte", "offset 3: schema id 1: avro field"} {
		if i >= len(skipped) || !strings.Contains(skipped[i], want) {
			t.Errorf("skipped %d: %q, want %q", i, skipped, want)
		}
	}
	if len(skipped) != 3 {
		t.Errorf("skipped %d records: %q", len(skipped), skipped)
	}
	cfg.ValueFormat = kafka.FormatProtobufConfluent
	cfg.OnError = nil
	if _, err := consumeTool(t, cc, cfg); err == nil || !strings.Contains(err.Error(), "offset 0: schema id 1 is AVRO, not PROTOBUF") {
		t.Fatalf("protobuf of an avro record: %v", err)
	}
}

// --isolation-level still applies with a value format.
func TestToolConsumeIsolationFormat(t *testing.T) {
	b := broker(t, "t:1")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	ctx := toolCtx(t)
	schema := `{"type":"record","name":"r","fields":[{"name":"v","type":"string"}]}`
	id, err := reg.Register(ctx, "t-value", schema, registry.Avro)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("t"), kgo.TransactionalID("format-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tx := range []struct {
		value  string
		commit bool
	}{{"aborted", false}, {"committed", true}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := append(registry.AppendHeader(nil, id), byte(2*len(tx.value)))
		v = append(v, tx.value...)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(tx.commit)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		uncommitted bool
		want        string
	}{
		{false, `{"v":"committed"}` + "\n"},
		{true, `{"v":"aborted"}` + "\n" + `{"v":"committed"}` + "\n"},
	} {
		got, err := consumeTool(t, cc, kafka.ConsumeConfig{Topic: "t", ReadUncommitted: c.uncommitted, ValueFormat: kafka.FormatAvroConfluent, Registry: reg})
		if err != nil || got != c.want {
			t.Errorf("read_uncommitted=%v: %q, %v; want %q", c.uncommitted, got, err, c.want)
		}
	}
}

// Dates are read from "YYYY-MM-DD" strings, timestamp-micros from
// Clink's millisecond timestamps; both print as the JSON sink prints them.
func TestToolAvroDateMicros(t *testing.T) {
	b := broker(t, "t:1")
	reg := schemaRegistry(t)
	cc := clientConfig(t, b)
	schema := `{"type":"record","name":"r","fields":[
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"maybe","type":["null",{"type":"int","logicalType":"date"}],"default":null},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}}]}`
	n, err := kafka.Produce(toolCtx(t), cc, kafka.ProduceConfig{Topic: "t", Partition: 0, ValueFormat: kafka.FormatAvroConfluent, Registry: reg, Schema: schema},
		strings.NewReader(`{"day":"2026-03-01","maybe":"1969-12-31","at":"2026-03-01 08:00:00.123"}`+"\n"+`{"day":"1970-01-01","at":1}`+"\n"+`{"day":"2026-02-30","at":1}`+"\n"))
	if n != 2 || err == nil || !strings.Contains(err.Error(), `stdin:3: field "day": expected a date YYYY-MM-DD, found "2026-02-30"`) {
		t.Fatalf("%d, %v", n, err)
	}
	got, err := consumeTool(t, cc, kafka.ConsumeConfig{Topic: "t", ValueFormat: kafka.FormatAvroConfluent, Registry: reg})
	want := `{"day":"2026-03-01","maybe":"1969-12-31","at":"2026-03-01 08:00:00.123"}
{"day":"1970-01-01","maybe":null,"at":"1970-01-01 00:00:00.001"}
`
	if err != nil || got != want {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
	// The bytes are the registered schema's: hamba/avro reads them.
	raw, _ := consumeTool(t, cc, kafka.ConsumeConfig{Topic: "t", Max: 1})
	id, payload, err := registry.ParseHeader([]byte(strings.TrimSuffix(raw, "\n")))
	if err != nil || id != 1 {
		t.Fatal(id, err)
	}
	var v map[string]any
	if err := hamba.Unmarshal(hamba.MustParse(schema), payload, &v); err != nil {
		t.Fatal(err)
	}
	if at := v["at"].(time.Time); at.UnixMicro() != 1772352000123000 {
		t.Errorf("at = %v (%d µs)", at, at.UnixMicro())
	}
}
