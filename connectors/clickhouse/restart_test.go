package clickhouse_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/clickhouse/chtest"
	"github.com/clink-dev/clink/connectors/kafka"
	"github.com/clink-dev/clink/engine"
)

// At least once across a crash: rows reach ClickHouse only at checkpoints
// (batch_rows and batch_interval_ms never trigger), the first run fails
// when its table disappears after a checkpoint that inserted a third of
// the windows (rows buffered since are lost with it), and the second run, restored from the latest
// checkpoint, inserts the rest, some rows again. The ReplacingMergeTree
// read with FINAL holds every window once.
func TestJobRestartAtLeastOnce(t *testing.T) {
	srv := chtest.Start(t)
	b, err := kafka.StartBroker(kafka.BrokerConfig{Topics: []kafka.TopicSpec{{Name: "readings", Partitions: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lines, want := readingLines(t)
	// A reading an hour later fires every window of the others.
	lines = append(lines, `{"sensor":"end","ts":"2026-03-01 09:30:00.000","temp":0}`)
	produced := make(chan error, 1)
	go func() { produced <- trickle(b.Addr(), "readings", lines, 300*time.Microsecond) }()

	srv.MustQuery(t, `CREATE TABLE w (sensor String, window_start DateTime, window_end DateTime,
		n UInt64, avg_temp Float64, min_temp Float64, max_temp Float64
	) ENGINE = ReplacingMergeTree ORDER BY (sensor, window_start)`)
	script := `
CREATE TABLE readings (sensor STRING, ts TIMESTAMP(3), temp DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + b.Addr() + `', 'topic' = 'readings', 'event_time_column' = 'ts');
CREATE TABLE windows (sensor STRING, window_start BIGINT, window_end BIGINT,
  n BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'clickhouse', 'port' = '` + strconv.Itoa(srv.HTTPPort) + `', 'table' = 'w',
  'batch_rows' = '1000000', 'batch_interval_ms' = '3600000');
INSERT INTO windows
SELECT sensor, window_start, window_end, COUNT(*), AVG(temp), MIN(temp), MAX(temp)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor`
	dir := t.TempDir()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	job := func() (*engineJob, error) { return checkpointed(script, dir, mem) }

	// Run 1: once a checkpoint has inserted a third of the windows, the
	// table is renamed away, so the next insert (at a checkpoint) fails and
	// so does the job.
	j1, err := job()
	if err != nil {
		t.Fatal(err)
	}
	var renamed atomic.Bool
	var completed atomic.Int64
	j1.Checkpoint.OnComplete = func(uint64) { // not the test's goroutine: no t.Fatal
		completed.Add(1)
		if renamed.Load() {
			return
		}
		if n, err := srv.Query("SELECT count() FROM w"); err == nil && atoi(n) >= len(want)/3 {
			if _, err := srv.Query("RENAME TABLE w TO w_away"); err == nil {
				renamed.Store(true)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = j1.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "Table default.w doesn't exist") {
		t.Fatalf("first run: %v", err)
	}
	srv.MustQuery(t, "RENAME TABLE w_away TO w")
	first := count(t, srv, "w")
	t.Logf("first run: %d checkpoints, %d of %d windows inserted", completed.Load(), first, len(want))
	if first == 0 || first >= len(want) {
		t.Fatalf("the first run inserted %d of %d windows", first, len(want))
	}

	// Run 2 resumes from the latest checkpoint.
	j2, err := job()
	if err != nil {
		t.Fatal(err)
	}
	if j2.Checkpoint.Restore == nil {
		t.Fatal("no checkpoint to restore")
	}
	// Rows of run 2 go out at its checkpoints.
	j2.Checkpoint.Interval = 20 * time.Millisecond
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	done := make(chan error, 1)
	go func() { _, err := j2.Run(ctx2); done <- err }()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for count(t, srv, "w FINAL") < len(want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel2()
	if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
		t.Fatal(err)
	}
	total := count(t, srv, "w")
	t.Logf("after the restart: %d rows, %d windows", total, count(t, srv, "w FINAL"))
	got := srv.MustQuery(t, `SELECT sensor, toUnixTimestamp(window_start), toUnixTimestamp(window_end), n, avg_temp, min_temp, max_temp
		FROM w FINAL ORDER BY sensor, window_start FORMAT TabSeparated`)
	check(t, got, want)
	if mem.CurrentAlloc() != 0 {
		t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
	}
}

func count(t *testing.T, srv *chtest.Server, from string) int {
	t.Helper()
	return atoi(srv.MustQuery(t, "SELECT count() FROM "+from))
}

func atoi(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return -1
	}
	return n
}

// trickle produces lines one at a time, pausing between them.
func trickle(addr, topic string, lines []string, pause time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, l := range lines {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(l)}).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("producing: %w", err)
		}
		time.Sleep(pause)
	}
	return nil
}

// checkpointed plans script with checkpoints in dir, restoring the latest
// complete one, if any.
func checkpointed(script, dir string, mem memory.Allocator) (*engineJob, error) {
	j, err := plan(script, 1, mem)
	if err != nil {
		return nil, err
	}
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	j.Checkpoint = &engine.CheckpointConfig{Store: store, Interval: 20 * time.Millisecond, Job: "test", Mem: mem}
	if id, ok, err := store.Latest(); err != nil {
		return nil, err
	} else if ok {
		if j.Checkpoint.Restore, err = store.Open(id); err != nil {
			return nil, err
		}
	}
	return j, nil
}
