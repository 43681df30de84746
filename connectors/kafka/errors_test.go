package kafka_test

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

var badInput = []rec{
	{0, "k1", `{"sensor_id":"x","ts":1000,"v":1}`},
	{0, "k2", `{"sensor_id":"x","ts":"soon","v":2}`},
	{0, "", `{"sensor_id":"y","ts":2000,"v":3}`},
	{0, "k4", `not json`},
}

const cols = "sensor_id STRING, ts BIGINT, v BIGINT"

func TestSourceBadRecordFails(t *testing.T) {
	b := broker(t, "in:1")
	produce(t, b.Addr(), "in", badInput...)
	res := job(t, table("readings", cols, b.Addr(), "in", "scan_bounded", "latest")+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	want := `kafka source 'readings': topic in partition 0 offset 1: field "ts": expected an integer, found "soon"`
	if res.err == nil || res.err.Error() != want {
		t.Fatalf("error %v\nwant  %s", res.err, want)
	}
}

func TestSourceBadRecordSkip(t *testing.T) {
	b := broker(t, "in:1")
	produce(t, b.Addr(), "in", badInput...)
	res := job(t, table("readings", cols, b.Addr(), "in", "scan_bounded", "latest", "on_error", "skip")+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []string{`{"sensor_id":"x","ts":1000,"v":1}`, `{"sensor_id":"y","ts":2000,"v":3}`}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows %q, want %q", res.rows, want)
	}
	if n := res.total("records_skipped"); n != 2 {
		t.Errorf("records_skipped = %d, want 2", n)
	}
}

func TestSourceDeadLetter(t *testing.T) {
	b := broker(t, "in:1", "bad:1")
	produce(t, b.Addr(), "in", badInput...)
	ddl := table("readings", cols, b.Addr(), "in", "scan_bounded", "latest", "on_error", "dead_letter", "dead_letter_topic", "bad")
	res := job(t, ddl+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if len(res.rows) != 2 {
		t.Fatalf("rows %q", res.rows)
	}
	if n := res.total("records_dead_lettered"); n != 2 {
		t.Errorf("records_dead_lettered = %d, want 2", n)
	}
	got := consumeAll(t, b.Addr(), "bad")
	if len(got) != 2 {
		t.Fatalf("%d dead letters, want 2", len(got))
	}
	want := []struct{ key, value, offset, err string }{
		{"k2", badInput[1].value, "1", `field "ts": expected an integer, found "soon"`},
		{"k4", "not json", "3", "invalid JSON at column 1: expected an object, found 'n'"},
	}
	for i, r := range got {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		w := want[i]
		if string(r.Key) != w.key || string(r.Value) != w.value || h["clink.topic"] != "in" || h["clink.partition"] != "0" || h["clink.offset"] != w.offset {
			t.Errorf("dead letter %d: key %q value %q headers %v", i, r.Key, r.Value, h)
		}
		if h["clink.error"] != w.err {
			t.Errorf("dead letter %d: clink.error %q, want %q", i, h["clink.error"], w.err)
		}
	}
}

func TestSourceMissingTopic(t *testing.T) {
	b := broker(t, "in:1")
	res := job(t, table("readings", cols, b.Addr(), "nope")+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	want := "kafka source 'readings': topic nope does not exist (brokers " + b.Addr() + ")"
	if res.err == nil || res.err.Error() != want {
		t.Fatalf("error %v\nwant  %s", res.err, want)
	}
}

func TestSourceMissingDeadLetterTopic(t *testing.T) {
	b := broker(t, "in:1")
	res := job(t, table("readings", cols, b.Addr(), "in", "on_error", "dead_letter", "dead_letter_topic", "nope")+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	want := "kafka source 'readings': dead_letter_topic: topic nope does not exist (brokers " + b.Addr() + ")"
	if res.err == nil || res.err.Error() != want {
		t.Fatalf("error %v\nwant  %s", res.err, want)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestSourceUnreachableBroker(t *testing.T) {
	addr := freeAddr(t)
	start := time.Now()
	res := job(t, table("readings", cols, addr, "in", "connect_timeout_ms", "2000")+"SELECT * FROM readings", 1024, 0, 30*time.Second)
	want := "kafka source 'readings': cannot reach brokers " + addr + ": "
	if res.err == nil || !strings.HasPrefix(res.err.Error(), want) || !strings.Contains(res.err.Error(), "connection refused") {
		t.Fatalf("error %v\nwant  %s... connection refused", res.err, want)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s to fail", d)
	}
}

func TestSinkUnreachableBroker(t *testing.T) {
	addr := freeAddr(t)
	b := broker(t, "in:1")
	ddl := table("readings", cols, b.Addr(), "in", "scan_bounded", "latest") +
		"CREATE TABLE out (" + cols + ") WITH ('connector' = 'kafka', 'brokers' = '" + addr + "', 'topic' = 'out', 'connect_timeout_ms' = '2000');\n"
	res := job(t, ddl+"INSERT INTO out SELECT * FROM readings", 1024, 0, 30*time.Second)
	want := "kafka sink 'out': cannot reach brokers " + addr + ": "
	if res.err == nil || !strings.HasPrefix(res.err.Error(), want) {
		t.Fatalf("error %v\nwant  %s...", res.err, want)
	}
}

func TestOptionErrors(t *testing.T) {
	b := broker(t, "in:1")
	for _, c := range []struct {
		opts []string
		want string
	}{
		{[]string{"on_error", "dead_letter"}, "on_error = 'dead_letter' needs option 'dead_letter_topic'"},
		{[]string{"dead_letter_topic", "bad"}, "option 'dead_letter_topic' needs on_error = 'dead_letter' (it is 'fail')"},
		{[]string{"start_offsets", "0:1,x"}, "option 'start_offsets': 'x' is not partition:offset"},
		{[]string{"start_offsets", "0:1", "start_timestamp_ms", "5"}, "give either 'start_offsets' or 'start_timestamp_ms', not both"},
		{[]string{"start_offsets", "3:0"}, "start_offsets names partition 3; topic in has 1 partitions"},
		{[]string{"security_protocol", "SASL_PLAINTEXT", "sasl_password", "env://CLINK_TEST_UNSET_VAR"}, "security_protocol 'SASL_PLAINTEXT' needs option 'sasl_username'"},
		{[]string{"security_protocol", "SASL_PLAINTEXT", "sasl_username", "u", "sasl_password", "env://CLINK_TEST_UNSET_VAR"}, "option 'sasl_password': environment variable CLINK_TEST_UNSET_VAR is not set"},
		{[]string{"idle_timeout", "100"}, "has no option 'idle_timeout' (did you mean 'idle_timeout_ms'?)"},
		{[]string{"scan_bounded", "forever"}, "option 'scan_bounded': 'forever' is not one of 'unbounded', 'latest'"},
	} {
		res := job(t, table("readings", cols, b.Addr(), "in", c.opts...)+"SELECT * FROM readings", 1024, 0, 30*time.Second)
		if res.err == nil || !strings.Contains(res.err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to contain %q", c.opts, res.err, c.want)
		}
	}
}

// TestSourceBadRecordContract: a NULL or missing event time, invalid
// UTF-8, a byte-order mark, a truncated record and a value out of its
// column's range are bad records under every on_error mode, named by
// topic/partition/offset and field.
func TestSourceBadRecordContract(t *testing.T) {
	input := []rec{
		{0, "", `{"sensor_id":"a","ts":1000,"v":1}`},
		{0, "", `{"sensor_id":"b","v":2}`},
		{0, "", `{"sensor_id":"c","ts":null,"v":3}`},
		{0, "", "{\"sensor_id\":\"d\xff\",\"ts\":1500,\"v\":4}"},
		{0, "", "\ufeff{\"sensor_id\":\"e\",\"ts\":1600,\"v\":5}"},
		{0, "", `{"sensor_id":"g","ts":1700`},
		{0, "", `{"sensor_id":"h","ts":1800,"v":99999999999999999999}`},
		{0, "", `{"sensor_id":"f","ts":2000,"v":6}`},
	}
	errs := []string{
		`topic in partition 0 offset 1: field "ts": null or missing, and it must hold a value (the event-time column)`,
		`topic in partition 0 offset 2: field "ts": null or missing, and it must hold a value (the event-time column)`,
		`topic in partition 0 offset 3: field "sensor_id": invalid UTF-8 in a string: byte 0xff at column 16`,
		`topic in partition 0 offset 4: invalid JSON at column 1: expected an object, found a UTF-8 byte-order mark (U+FEFF)`,
		`topic in partition 0 offset 5: invalid JSON at column 27: unexpected end of line`,
		`topic in partition 0 offset 6: field "v": 99999999999999999999 out of range for int64`,
	}
	b := broker(t, "in:1", "bad:1")
	produce(t, b.Addr(), "in", input...)
	opts := []string{"scan_bounded", "latest", "event_time_column", "ts"}
	query := "SELECT sensor_id, v FROM readings"

	res := job(t, table("readings", cols, b.Addr(), "in", opts...)+query, 1024, 0, 30*time.Second)
	if want := "kafka source 'readings': " + errs[0]; res.err == nil || res.err.Error() != want {
		t.Fatalf("fail: error %v\nwant %s", res.err, want)
	}

	want := []string{`{"sensor_id":"a","v":1}`, `{"sensor_id":"f","v":6}`}
	res = job(t, table("readings", cols, b.Addr(), "in", append(opts, "on_error", "skip")...)+query, 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("skip: rows %q, want %q", res.rows, want)
	}
	if n := res.total("records_skipped"); n != int64(len(errs)) {
		t.Errorf("records_skipped = %d, want %d", n, len(errs))
	}

	res = job(t, table("readings", cols, b.Addr(), "in", append(opts, "on_error", "dead_letter", "dead_letter_topic", "bad")...)+query, 1024, 0, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("dead_letter: rows %q, want %q", res.rows, want)
	}
	got := consumeAll(t, b.Addr(), "bad")
	if len(got) != len(errs) {
		t.Fatalf("%d dead letters, want %d", len(got), len(errs))
	}
	for i, r := range got {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		_, wantErr, _ := strings.Cut(errs[i], ": ")
		if string(r.Value) != input[i+1].value || h["clink.error"] != wantErr {
			t.Errorf("dead letter %d: value %q error %q, want %q", i, r.Value, h["clink.error"], wantErr)
		}
	}
}
