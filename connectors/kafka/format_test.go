package kafka_test

import (
	"context"
	stdjson "encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/clink-dev/clink/connectors/formats/protobuf"
	"github.com/clink-dev/clink/connectors/formats/registry"
)

// devRegistry starts the development Schema Registry on loopback and
// returns its URL and a client of it.
func devRegistry(t *testing.T) (string, *registry.Client) {
	t.Helper()
	srv, url, err := registry.StartLocal(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cl, err := registry.NewClient(url, registry.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return url, cl
}

// Two versions of a readings schema: v2 adds a field with a default and
// widens temp_c from float to double.
const (
	readingsV1 = `{"type":"record","name":"Reading","namespace":"test","fields":[
		{"name":"sensor_id","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"temp_c","type":"float"}]}`
	readingsV2 = `{"type":"record","name":"Reading","namespace":"test","fields":[
		{"name":"sensor_id","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"temp_c","type":"double"},
		{"name":"unit","type":"string","default":"C"}]}`
)

// confluent encodes v with the writer schema text registered as id, in
// the Confluent wire format, with hamba/avro (a library we did not write).
func confluent(t *testing.T, id int, schema string, v map[string]any) string {
	t.Helper()
	s, err := hamba.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hamba.Marshal(s, v)
	if err != nil {
		t.Fatal(err)
	}
	return string(append(registry.AppendHeader(nil, id), b...))
}

// TestAvroConfluentEvolution: records written with v1 and v2 of a subject,
// interleaved on one partition, decode into one table; the sink writes
// Avro values and keys registered under <topic>-value and <topic>-key,
// which hamba/avro reads back with the registered schemas.
func TestAvroConfluentEvolution(t *testing.T) {
	url, cl := devRegistry(t)
	ctx := context.Background()
	v1, err := cl.Register(ctx, "in-value", readingsV1, registry.Avro)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := cl.Register(ctx, "in-value", readingsV2, registry.Avro)
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	b := broker(t, "in:1", "out:1")
	produce(t, b.Addr(), "in",
		rec{0, "", confluent(t, v1, readingsV1, map[string]any{"sensor_id": "a", "ts": at(1000), "temp_c": float32(1.5)})},
		rec{0, "", confluent(t, v2, readingsV2, map[string]any{"sensor_id": "b", "ts": at(2000), "temp_c": 2.25, "unit": "F"})},
		rec{0, "", confluent(t, v1, readingsV1, map[string]any{"sensor_id": "c", "ts": at(3000), "temp_c": float32(-4)})},
		rec{0, "", confluent(t, v2, readingsV2, map[string]any{"sensor_id": "a", "ts": at(4000), "temp_c": 0.1, "unit": "C"})},
	)
	cols := "sensor_id STRING, ts TIMESTAMP(3), temp_c DOUBLE"
	src := table("readings", cols, b.Addr(), "in", "format", "avro-confluent", "avro-confluent.url", url,
		"scan_bounded", "latest", "event_time_column", "ts")
	res := job(t, src+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []string{
		`{"sensor_id":"a","ts":"1970-01-01 00:00:01.000","temp_c":1.5}`,
		`{"sensor_id":"a","ts":"1970-01-01 00:00:04.000","temp_c":0.1}`,
		`{"sensor_id":"b","ts":"1970-01-01 00:00:02.000","temp_c":2.25}`,
		`{"sensor_id":"c","ts":"1970-01-01 00:00:03.000","temp_c":-4}`,
	}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows\n%s\nwant\n%s", strings.Join(res.rows, "\n"), strings.Join(want, "\n"))
	}

	sink := "CREATE TABLE out (" + cols + ") WITH ('connector' = 'kafka', 'brokers' = '" + b.Addr() + "', 'topic' = 'out', " +
		"'value.format' = 'avro-confluent', 'value.avro-confluent.url' = '" + url + "', 'key.format' = 'avro-confluent', 'key.fields' = 'sensor_id');\n"
	if res := job(t, src+sink+"INSERT INTO out SELECT * FROM readings", 1024, 0, 30*time.Second); res.err != nil {
		t.Fatal(res.err)
	}
	var got []string
	for _, r := range consumeAll(t, b.Addr(), "out") {
		key, value := decodeConfluent(t, cl, r.Key), decodeConfluent(t, cl, r.Value)
		got = append(got, fmt.Sprintf("%v %v", key, value))
	}
	wantOut := []string{
		"map[sensor_id:a] map[sensor_id:a temp_c:1.5 ts:1970-01-01 00:00:01 +0000 UTC]",
		"map[sensor_id:b] map[sensor_id:b temp_c:2.25 ts:1970-01-01 00:00:02 +0000 UTC]",
		"map[sensor_id:c] map[sensor_id:c temp_c:-4 ts:1970-01-01 00:00:03 +0000 UTC]",
		"map[sensor_id:a] map[sensor_id:a temp_c:0.1 ts:1970-01-01 00:00:04 +0000 UTC]",
	}
	if !reflect.DeepEqual(got, wantOut) {
		t.Fatalf("sink records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOut, "\n"))
	}
	for _, subject := range []string{"out-value", "out-key"} {
		if _, err := cl.Latest(ctx, subject); err != nil {
			t.Errorf("subject %s: %v", subject, err)
		}
	}
}

// decodeConfluent reads a Confluent-framed Avro record with hamba/avro and
// the schema the registry has for its id.
func decodeConfluent(t *testing.T, cl *registry.Client, b []byte) map[string]any {
	t.Helper()
	id, payload, err := registry.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cl.SchemaByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := hamba.Parse(s.Text)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := hamba.Unmarshal(schema, payload, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAvroConfluentBadRecords: a wrong magic byte, an unknown schema id, a
// truncated record and a NULL event time are bad records under on_error.
func TestAvroConfluentBadRecords(t *testing.T) {
	url, cl := devRegistry(t)
	nullable := `{"type":"record","name":"R","fields":[{"name":"sensor_id","type":"string"},{"name":"ts","type":["null","long"]}]}`
	id, err := cl.Register(context.Background(), "in-value", nullable, registry.Avro)
	if err != nil {
		t.Fatal(err)
	}
	good := confluent(t, id, nullable, map[string]any{"sensor_id": "a", "ts": map[string]any{"long": int64(1000)}})
	b := broker(t, "in:1", "bad:1")
	produce(t, b.Addr(), "in",
		rec{0, "", good},
		rec{0, "", `{"sensor_id":"json"}`},
		rec{0, "", string(registry.AppendHeader(nil, 999)) + good[5:]},
		rec{0, "", good[:len(good)-1]},
		rec{0, "", confluent(t, id, nullable, map[string]any{"sensor_id": "n", "ts": nil})},
		rec{0, "", good},
	)
	opts := []string{"format", "avro-confluent", "avro-confluent.url", url, "scan_bounded", "latest", "event_time_column", "ts"}
	cols := "sensor_id STRING, ts BIGINT"
	res := job(t, table("readings", cols, b.Addr(), "in", opts...)+"SELECT sensor_id FROM readings", 1024, 0, 30*time.Second)
	if want := "kafka source 'readings': topic in partition 0 offset 1: schema registry wire format: wrong magic byte 0x7b (want 0x00)"; res.err == nil || !strings.HasPrefix(res.err.Error(), want) {
		t.Fatalf("error %v\nwant %s...", res.err, want)
	}
	res = job(t, table("readings", cols, b.Addr(), "in", append(opts, "on_error", "dead_letter", "dead_letter_topic", "bad")...)+"SELECT sensor_id FROM readings", 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if want := []string{`{"sensor_id":"a"}`, `{"sensor_id":"a"}`}; !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows %q, want %q", res.rows, want)
	}
	wantErrs := []string{
		"wrong magic byte 0x7b",
		"schema id 999",
		"truncated",
		`avro field "ts": null or missing, and it must hold a value (the event-time column)`,
	}
	got := consumeAll(t, b.Addr(), "bad")
	if len(got) != len(wantErrs) {
		t.Fatalf("%d dead letters, want %d", len(got), len(wantErrs))
	}
	for i, r := range got {
		var msg string
		for _, h := range r.Headers {
			if h.Key == "clink.error" {
				msg = string(h.Value)
			}
		}
		if !strings.Contains(msg, wantErrs[i]) {
			t.Errorf("dead letter %d: clink.error %q, want it to contain %q", i, msg, wantErrs[i])
		}
	}
}

const (
	protoV1 = `syntax = "proto3";
package edge.v1;
import "google/protobuf/timestamp.proto";
message Request {
  string host = 1;
  google.protobuf.Timestamp ts = 2;
  int64 bytes = 3;
  string dropped = 4;
}
`
	// v2 drops field 4 and adds field 5.
	protoV2 = `syntax = "proto3";
package edge.v1;
import "google/protobuf/timestamp.proto";
message Request {
  string host = 1;
  google.protobuf.Timestamp ts = 2;
  int64 bytes = 3;
  optional int32 status = 5;
}
`
)

// protoRecord encodes a Request of schema text with dynamicpb and
// proto.Marshal (code we did not write), framed for registry id.
func protoRecord(t *testing.T, id int, text string, fields map[string]any) string {
	t.Helper()
	md, err := protobuf.CompileSource("r.proto", text, "edge.v1.Request")
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(md)
	for name, v := range fields {
		fd := md.Fields().ByName(protoreflect.Name(name))
		switch x := v.(type) {
		case time.Time:
			ts := dynamicpb.NewMessage(fd.Message())
			ts.Set(fd.Message().Fields().ByName("seconds"), protoreflect.ValueOfInt64(x.Unix()))
			ts.Set(fd.Message().Fields().ByName("nanos"), protoreflect.ValueOfInt32(int32(x.Nanosecond())))
			m.Set(fd, protoreflect.ValueOfMessage(ts))
		default:
			m.Set(fd, protoreflect.ValueOf(v))
		}
	}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(append(registry.AppendIndexes(registry.AppendHeader(nil, id), []int{0}), b...))
}

// TestProtobufConfluent: records of v1 and v2 of a Protobuf subject decode
// with the latest schema (fields by number: a removed field is skipped, an
// added one is NULL where absent); the sink writes Protobuf that dynamicpb
// reads back.
func TestProtobufConfluent(t *testing.T) {
	url, cl := devRegistry(t)
	ctx := context.Background()
	v1, err := cl.Register(ctx, "in-value", protoV1, registry.Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := cl.Register(ctx, "in-value", protoV2, registry.Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	b := broker(t, "in:1", "out:1")
	at := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	produce(t, b.Addr(), "in",
		rec{0, "", protoRecord(t, v1, protoV1, map[string]any{"host": "a", "ts": at(1000), "bytes": int64(10), "dropped": "x"})},
		rec{0, "", protoRecord(t, v2, protoV2, map[string]any{"host": "b", "ts": at(2000), "bytes": int64(20), "status": int32(404)})},
		rec{0, "", protoRecord(t, v2, protoV2, map[string]any{"host": "c", "bytes": int64(30)})}, // no event time
	)
	cols := "host STRING, ts TIMESTAMP(3), bytes BIGINT, status INT"
	src := table("requests", cols, b.Addr(), "in", "format", "protobuf-confluent", "protobuf-confluent.url", url,
		"scan_bounded", "latest", "event_time_column", "ts", "on_error", "skip")
	res := job(t, src+"SELECT * FROM requests", 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []string{
		`{"host":"a","ts":"1970-01-01 00:00:01.000","bytes":10,"status":null}`,
		`{"host":"b","ts":"1970-01-01 00:00:02.000","bytes":20,"status":404}`,
	}
	if !reflect.DeepEqual(res.rows, want) || res.total("records_skipped") != 1 {
		t.Fatalf("rows\n%s\nwant\n%s\n(%d skipped)", strings.Join(res.rows, "\n"), strings.Join(want, "\n"), res.total("records_skipped"))
	}

	sink := "CREATE TABLE out (" + cols + ") WITH ('connector' = 'kafka', 'brokers' = '" + b.Addr() + "', 'topic' = 'out', " +
		"'format' = 'protobuf-confluent', 'protobuf-confluent.url' = '" + url + "');\n"
	if res := job(t, src+sink+"INSERT INTO out SELECT * FROM requests", 1024, 0, 30*time.Second); res.err != nil {
		t.Fatal(res.err)
	}
	latest, err := cl.Latest(ctx, "out-value")
	if err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.CompileSource("out.proto", latest.Text, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range consumeAll(t, b.Addr(), "out") {
		id, payload, err := registry.ParseHeader(r.Value)
		if err != nil || id != latest.ID {
			t.Fatalf("record %q: id %d (want %d), %v", r.Value, id, latest.ID, err)
		}
		idx, payload, err := registry.ParseIndexes(payload)
		if err != nil || !reflect.DeepEqual(idx, []int{0}) {
			t.Fatalf("indexes %v, %v", idx, err)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(payload, m); err != nil {
			t.Fatal(err)
		}
		js, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		var norm map[string]any
		if err := stdjson.Unmarshal(js, &norm); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(norm))
	}
	wantOut := []string{
		"map[bytes:10 host:a ts:1970-01-01T00:00:01Z]",
		"map[bytes:20 host:b status:404 ts:1970-01-01T00:00:02Z]",
	}
	if !reflect.DeepEqual(got, wantOut) {
		t.Fatalf("sink records\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOut, "\n"))
	}
}

// badCase is one bad record and what its error must say.
type badCase struct {
	name, value, want string
}

// TestBadRecordsEveryFormat: for Avro and Protobuf through the registry,
// every bad-record case (NULL or missing event time, invalid UTF-8, wrong
// magic byte, unknown schema id, truncated record, a value out of the
// column's range) under every on_error mode: fail names the offset and the
// reason, skip counts, dead_letter forwards with the reason.
func TestBadRecordsEveryFormat(t *testing.T) {
	url, cl := devRegistry(t)
	ctx := context.Background()
	avroText := `{"type":"record","name":"R","fields":[{"name":"sensor_id","type":"string"},
		{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},{"name":"v","type":"long"}]}`
	avroID, err := cl.Register(ctx, "avro-in-value", avroText, registry.Avro)
	if err != nil {
		t.Fatal(err)
	}
	protoText := `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message R { string sensor_id = 1; google.protobuf.Timestamp ts = 2; int64 v = 3; }
`
	protoID, err := cl.Register(ctx, "proto-in-value", protoText, registry.Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	avroRec := func(sensor string, ts any, v int64) string {
		return confluent(t, avroID, avroText, map[string]any{"sensor_id": sensor, "ts": ts, "v": v})
	}
	// Protobuf records are written field by field with protowire, so that
	// invalid UTF-8 (which proto.Marshal refuses) can be written too.
	protoRec := func(sensor string, tsMS int64, v int64) string {
		b := registry.AppendIndexes(registry.AppendHeader(nil, protoID), []int{0})
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, sensor)
		if tsMS >= 0 {
			var ts []byte
			ts = protowire.AppendTag(ts, 1, protowire.VarintType)
			ts = protowire.AppendVarint(ts, uint64(tsMS/1000))
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendBytes(b, ts)
		}
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v))
		return string(b)
	}
	reframe := func(rec string, id int) string { return string(registry.AppendHeader(nil, id)) + rec[5:] }
	tsAt := func(ms int64) map[string]any {
		return map[string]any{"long.timestamp-millis": time.UnixMilli(ms).UTC()}
	}
	for _, f := range []struct {
		format, subject string
		good            [2]string
		bad             []badCase
	}{
		{"avro-confluent", "avro-in-value", [2]string{avroRec("a", tsAt(1000), 1), avroRec("b", tsAt(2000), 2)}, []badCase{
			{"null event time", avroRec("x", nil, 3), `avro field "ts": null or missing, and it must hold a value (the event-time column)`},
			{"invalid UTF-8", avroRec("x\xff", tsAt(1500), 3), `avro field "sensor_id": invalid UTF-8`},
			{"wrong magic byte", "\x01" + avroRec("x", tsAt(1500), 3)[1:], "wrong magic byte 0x01 (want 0x00)"},
			{"unknown schema id", reframe(avroRec("x", tsAt(1500), 3), 999), "schema id 999"},
			{"truncated", avroRec("x", tsAt(1500), 3)[:9], `avro field "ts"`},
			{"out of range", avroRec("x", tsAt(1500), 1<<40), `avro field "v"`},
		}},
		{"protobuf-confluent", "proto-in-value", [2]string{protoRec("a", 1000, 1), protoRec("b", 2000, 2)}, []badCase{
			{"missing event time", protoRec("x", -1, 3), `field "ts": null or missing, and it must hold a value (the event-time column)`},
			{"invalid UTF-8", protoRec("x\xff", 1500, 3), `field "sensor_id"`},
			{"wrong magic byte", "\x01" + protoRec("x", 1500, 3)[1:], "wrong magic byte 0x01 (want 0x00)"},
			{"unknown schema id", reframe(protoRec("x", 1500, 3), 999), "schema id 999"},
			{"truncated", protoRec("x", 1500, 3)[:10], "truncated"},
			{"out of range", protoRec("x", 1500, 1<<40), `field "v"`},
		}},
	} {
		t.Run(f.format, func(t *testing.T) {
			b := broker(t, "in:1", "bad:1")
			recs := []rec{{0, "", f.good[0]}}
			for _, c := range f.bad {
				recs = append(recs, rec{0, "", c.value})
			}
			produce(t, b.Addr(), "in", append(recs, rec{0, "", f.good[1]})...)
			opts := []string{"format", f.format, f.format + ".url", url, "scan_bounded", "latest", "event_time_column", "ts"}
			if f.format == "protobuf-confluent" {
				opts = append(opts, "protobuf-confluent.subject", f.subject)
			}
			cols := "sensor_id STRING, ts TIMESTAMP(3), v INT"
			query := "SELECT sensor_id, v FROM readings"
			for i, c := range f.bad {
				// fail: a topic holding only this bad record.
				topic := fmt.Sprintf("fail%d", i)
				b2 := broker(t, topic+":1")
				produce(t, b2.Addr(), topic, rec{0, "", f.good[0]}, rec{0, "", c.value})
				res := job(t, table("readings", cols, b2.Addr(), topic, opts...)+query, 1024, 0, 30*time.Second)
				wantPrefix := fmt.Sprintf("kafka source 'readings': topic %s partition 0 offset 1: ", topic)
				if res.err == nil || !strings.HasPrefix(res.err.Error(), wantPrefix) || !strings.Contains(res.err.Error(), c.want) {
					t.Errorf("%s, on_error = 'fail': error %v\nwant %s...%s...", c.name, res.err, wantPrefix, c.want)
				}
			}
			want := []string{`{"sensor_id":"a","v":1}`, `{"sensor_id":"b","v":2}`}
			res := job(t, table("readings", cols, b.Addr(), "in", append(opts, "on_error", "skip")...)+query, 1024, 0, 30*time.Second)
			if res.err != nil || !reflect.DeepEqual(res.rows, want) || res.total("records_skipped") != int64(len(f.bad)) {
				t.Errorf("on_error = 'skip': rows %q, %d skipped, error %v", res.rows, res.total("records_skipped"), res.err)
			}
			res = job(t, table("readings", cols, b.Addr(), "in", append(opts, "on_error", "dead_letter", "dead_letter_topic", "bad")...)+query, 1024, 0, 30*time.Second)
			if res.err != nil || !reflect.DeepEqual(res.rows, want) || res.total("records_dead_lettered") != int64(len(f.bad)) {
				t.Errorf("on_error = 'dead_letter': rows %q, %d dead-lettered, error %v", res.rows, res.total("records_dead_lettered"), res.err)
			}
			got := consumeAll(t, b.Addr(), "bad")
			if len(got) != len(f.bad) {
				t.Fatalf("%d dead letters, want %d", len(got), len(f.bad))
			}
			for i, r := range got {
				var msg string
				for _, h := range r.Headers {
					if h.Key == "clink.error" {
						msg = string(h.Value)
					}
				}
				if string(r.Value) != f.bad[i].value || !strings.Contains(msg, f.bad[i].want) {
					t.Errorf("%s, dead letter: clink.error %q, want it to contain %q", f.bad[i].name, msg, f.bad[i].want)
				}
			}
		})
	}
}

// TestProtobufFile: format 'protobuf' reads messages of a local .proto
// file; a column whose field has another type, or names no field, fails
// the plan naming it.
func TestProtobufFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/edge.proto"
	if err := os.WriteFile(path, []byte(protoV2), 0o644); err != nil {
		t.Fatal(err)
	}
	b := broker(t, "in:1")
	strip := func(r string) string { return r[6:] } // no registry frame: header and the one-byte index
	produce(t, b.Addr(), "in",
		rec{0, "", strip(protoRecord(t, 1, protoV2, map[string]any{"host": "a", "ts": time.UnixMilli(1000), "bytes": int64(10), "status": int32(200)}))},
		rec{0, "", strip(protoRecord(t, 1, protoV2, map[string]any{"host": "b", "ts": time.UnixMilli(2000), "bytes": int64(20)}))},
	)
	opts := []string{"format", "protobuf", "protobuf.proto-file", path, "protobuf.message-name", "Request", "scan_bounded", "latest"}
	res := job(t, table("requests", "host STRING, bytes BIGINT, status INT", b.Addr(), "in", opts...)+"SELECT * FROM requests", 1024, 0, 30*time.Second)
	want := []string{`{"host":"a","bytes":10,"status":200}`, `{"host":"b","bytes":20,"status":null}`}
	if res.err != nil || !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows %q, error %v", res.rows, res.err)
	}
	for cols, msg := range map[string]string{
		"host BIGINT":  `"host"`,
		"agent STRING": `"agent"`,
	} {
		_, err := start(t, table("requests", cols, b.Addr(), "in", opts...)+"SELECT * FROM requests", 1024, 30*time.Second)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want it to name %s", cols, err, msg)
		}
	}
}

// TestRegistryPlanningCheck: a column the subject's latest schema cannot
// fill fails the plan, naming the field.
func TestRegistryPlanningCheck(t *testing.T) {
	url, cl := devRegistry(t)
	nested := `{"type":"record","name":"R","fields":[{"name":"sensor_id","type":"string"},
		{"name":"ts","type":"long"},{"name":"loc","type":{"type":"record","name":"L","fields":[{"name":"lat","type":"double"}]}}]}`
	if _, err := cl.Register(context.Background(), "in-value", nested, registry.Avro); err != nil {
		t.Fatal(err)
	}
	b := broker(t, "in:1")
	_, err := start(t, table("readings", "sensor_id STRING, ts BIGINT, loc DOUBLE", b.Addr(), "in", "format", "avro-confluent", "avro-confluent.url", url)+"SELECT * FROM readings", 1024, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), `"loc"`) || !strings.Contains(err.Error(), "subject in-value version 1") {
		t.Fatalf("error %v, want it to name field loc and the subject", err)
	}
	if _, err := cl.Register(context.Background(), "p-value", protoV1, registry.Protobuf); err != nil {
		t.Fatal(err)
	}
	_, err = start(t, table("requests", "host BIGINT", b.Addr(), "in", "format", "protobuf-confluent", "protobuf-confluent.url", url, "protobuf-confluent.subject", "p-value")+"SELECT * FROM requests", 1024, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), `"host"`) {
		t.Fatalf("error %v, want it to name field host", err)
	}
}
