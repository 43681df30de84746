package kafka_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

const windowQuery = "SELECT sensor_id, window_start, COUNT(*) AS c, SUM(v) AS s FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id"

// lateness is one sensor per partition; each partition's order decides
// what is late, whatever the interleaving and batch size.
var latenessInput = []rec{
	{0, "", reading("a", 1000, 1)},
	{1, "", reading("b", 2000, 10)},
	{0, "", reading("a", 12000, 2)},
	{2, "", reading("c", 9000, 100)},
	{0, "", reading("a", 5000, 4)}, // late in partition 0: its watermark is 12000
	{1, "", reading("b", 3000, 20)},
	{0, "", reading("a", 21000, 8)},
	{2, "", reading("c", 11000, 200)},
	{1, "", reading("b", 25000, 40)}, // partition 1 has seen only 3000: not late
}

func TestSourcePartitionsBounded(t *testing.T) {
	b := broker(t, "r:3")
	produce(t, b.Addr(), "r", latenessInput...)
	want := []string{
		`{"sensor_id":"a","window_start":0,"c":1,"s":1}`,
		`{"sensor_id":"a","window_start":10000,"c":1,"s":2}`,
		`{"sensor_id":"a","window_start":20000,"c":1,"s":8}`,
		`{"sensor_id":"b","window_start":0,"c":2,"s":30}`,
		`{"sensor_id":"b","window_start":20000,"c":1,"s":40}`,
		`{"sensor_id":"c","window_start":0,"c":1,"s":100}`,
		`{"sensor_id":"c","window_start":10000,"c":1,"s":200}`,
	}
	ddl := table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r",
		"event_time_column", "ts", "scan_bounded", "latest")
	for _, batch := range []int{1, 7, 1024} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			res := job(t, ddl+windowQuery, batch, 0, 30*time.Second)
			if res.err != nil {
				t.Fatal(res.err)
			}
			if !reflect.DeepEqual(res.rows, want) {
				t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(res.rows, "\n"), strings.Join(want, "\n"))
			}
			if got := res.total("late_rows_dropped"); got != 1 {
				t.Errorf("late rows dropped = %d, want 1", got)
			}
			if got := res.total("rows_read"); got != int64(len(latenessInput)) {
				t.Errorf("rows_read = %d, want %d", got, len(latenessInput))
			}
		})
	}
}

// Unbounded, the source watermark is the minimum over partitions: only
// windows every partition has passed fire, and the job runs until stopped.
func TestSourceUnboundedFiresOnlyPassedWindows(t *testing.T) {
	b := broker(t, "r:3")
	produce(t, b.Addr(), "r", latenessInput...)
	ddl := table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r", "event_time_column", "ts")
	res := job(t, ddl+windowQuery, 1024, 3, 30*time.Second)
	if res.err != nil {
		t.Fatal(res.err)
	}
	// Partition 2's watermark is 11000: the [0, 10000) windows fire, no
	// other can.
	want := []string{
		`{"sensor_id":"a","window_start":0,"c":1,"s":1}`,
		`{"sensor_id":"b","window_start":0,"c":2,"s":30}`,
		`{"sensor_id":"c","window_start":0,"c":1,"s":100}`,
	}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(res.rows, "\n"), strings.Join(want, "\n"))
	}
}

// A quiet partition holds the watermark back until idle_timeout_ms; it
// rejoins when it speaks, and its rows for windows that fired meanwhile
// are late.
func TestSourceIdleness(t *testing.T) {
	b := broker(t, "r:2")
	produce(t, b.Addr(), "r", rec{0, "", reading("a", 1000, 1)}, rec{0, "", reading("a", 15000, 2)})
	ddl := table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r", "event_time_column", "ts")

	// Without idleness the empty partition 1 holds every window back.
	res := job(t, ddl+windowQuery, 1024, 1, 2*time.Second)
	if res.err != nil || len(res.rows) != 0 {
		t.Fatalf("without idle_timeout_ms: rows %q, err %v", res.rows, res.err)
	}

	r, err := start(t, table("r", "sensor_id STRING, ts BIGINT, v BIGINT", b.Addr(), "r", "event_time_column", "ts", "idle_timeout_ms", "300")+windowQuery, 1024, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r.waitRows(1, 20*time.Second)
	if got := r.out.lines(); len(got) != 1 || got[0] != `{"sensor_id":"a","window_start":0,"c":1,"s":1}` {
		t.Fatalf("after partition 1 went idle: rows %q", got)
	}
	// Partition 1 speaks: its row for the fired window [0, 10000) is late.
	// Then both partitions pass 30000 and [10000, 20000) fires.
	produce(t, b.Addr(), "r", rec{1, "", reading("b", 2000, 10)}, rec{0, "", reading("a", 31000, 4)}, rec{1, "", reading("b", 32000, 20)})
	r.waitRows(2, 20*time.Second)
	res = r.stop()
	if res.err != nil {
		t.Fatal(res.err)
	}
	want := []string{`{"sensor_id":"a","window_start":0,"c":1,"s":1}`, `{"sensor_id":"a","window_start":10000,"c":1,"s":2}`}
	if !reflect.DeepEqual(res.rows, want) {
		t.Fatalf("rows %q, want %q", res.rows, want)
	}
	if n := res.total("late_rows_dropped"); n != 1 {
		t.Errorf("late_rows_dropped = %d, want 1", n)
	}
}
