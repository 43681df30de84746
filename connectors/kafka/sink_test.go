package kafka_test

import (
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Rows read from one topic are written to another keyed by sensor: the
// values are the rows as JSON, and each key lands in the partition
// Kafka's own partitioner (murmur2) picks for it.
func TestSinkRoundTripWithKey(t *testing.T) {
	b := broker(t, "in:2", "out:3")
	var input []rec
	for i := 0; i < 40; i++ {
		s := string(rune('a' + i%5))
		if i%10 == 9 {
			input = append(input, rec{int32(i % 2), "", `{"sensor_id":null,"ts":` + strconv.Itoa(i) + `,"v":` + strconv.Itoa(i) + `}`})
			continue
		}
		input = append(input, rec{int32(i % 2), "", reading(s, int64(i), i)})
	}
	produce(t, b.Addr(), "in", input...)
	ddl := table("r", cols, b.Addr(), "in", "scan_bounded", "latest") +
		"CREATE TABLE out (" + cols + ") WITH ('connector' = 'kafka', 'brokers' = '" + b.Addr() + "', 'topic' = 'out', 'key_column' = 'sensor_id');\n"
	for _, batch := range []int{3, 1024} {
		res := job(t, ddl+"INSERT INTO out SELECT * FROM r", batch, 0, 30*time.Second)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if n := res.total("rows_written"); n != int64(len(input)) {
			t.Errorf("batch %d: rows_written = %d, want %d", batch, n, len(input))
		}
	}
	got := consumeAll(t, b.Addr(), "out")
	if len(got) != 2*len(input) {
		t.Fatalf("%d records in out, want %d", len(got), 2*len(input))
	}
	part := kgo.StickyKeyPartitioner(nil).ForTopic("out")
	var values, want []string
	for _, r := range got {
		values = append(values, string(r.Value))
		if r.Key == nil {
			if string(r.Value[:17]) != `{"sensor_id":null` {
				t.Errorf("record %s has no key", r.Value)
			}
			continue
		}
		if string(r.Value[:15]) != `{"sensor_id":"`+string(r.Key) {
			t.Errorf("key %q for value %s", r.Key, r.Value)
		}
		if p := part.Partition(&kgo.Record{Key: r.Key}, 3); int32(p) != r.Partition {
			t.Errorf("key %q in partition %d, Kafka's partitioner says %d", r.Key, r.Partition, p)
		}
	}
	for _, in := range input {
		want = append(want, in.value, in.value)
	}
	sort.Strings(values)
	sort.Strings(want)
	for i := range want {
		if values[i] != want[i] {
			t.Fatalf("value %d: %s, want %s", i, values[i], want[i])
		}
	}
}

func TestSinkMissingTopicAndKeyColumn(t *testing.T) {
	b := broker(t, "in:1")
	src := table("r", cols, b.Addr(), "in", "scan_bounded", "latest")
	res := job(t, src+"CREATE TABLE out ("+cols+") WITH ('connector' = 'kafka', 'brokers' = '"+b.Addr()+"', 'topic' = 'nope');\nINSERT INTO out SELECT * FROM r", 1024, 0, 30*time.Second)
	if want := "kafka sink 'out': topic nope does not exist (brokers " + b.Addr() + ")"; res.err == nil || res.err.Error() != want {
		t.Errorf("error %v, want %s", res.err, want)
	}
	res = job(t, src+"CREATE TABLE out ("+cols+") WITH ('connector' = 'kafka', 'brokers' = '"+b.Addr()+"', 'topic' = 'in', 'key_column' = 'sensor');\nINSERT INTO out SELECT * FROM r", 1024, 0, 30*time.Second)
	if want := "kafka sink 'out': key_column 'sensor' is not a column of out"; res.err == nil || res.err.Error() != want {
		t.Errorf("error %v, want %s", res.err, want)
	}
}
