package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
	"github.com/clink-dev/clink/connectors/conformance"
)

// TestClusterIdlePartition (#16): the tutorial's "scale it out" step on a
// cluster. The readings are keyed by sensor onto partitions 0, 1 and 3 of
// a four-partition topic; partition 2 stays empty. At parallelism 4 the
// subtask owning partition 2 has nothing else, at 5 one subtask owns no
// partition: with idle_timeout_ms set, neither holds the watermark back
// and every window closes, exact (the sensors verifier).
func TestClusterIdlePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams for about 10 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	addr := serveBroker(t, bin, "--topic", "readings:4", "--topic", "readings5:4")
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(t.TempDir(), "ck"))
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "3", "--id", "w1")
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "3", "--id", "w2")
	c := workload.Default()
	c.Ticks = 400
	for _, tc := range []struct {
		topic string
		par   int
	}{{"readings", 4}, {"readings5", 5}} {
		t.Run(fmt.Sprintf("parallelism=%d", tc.par), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			sqlFile := filepath.Join(dir, tc.topic+".sql") // the job's name
			sql := `SET 'execution.checkpointing.interval' = '500ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = '` + tc.topic + `',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000', 'idle_timeout_ms' = '1000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + out + `');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
			if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
				t.Fatal(err)
			}
			job := submitJob(t, bin, coord, "--parallelism", strconv.Itoa(tc.par), sqlFile)
			waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
			if err := conformance.Stream(addr, tc.topic, keyedOnThree(c), 2000); err != nil {
				t.Fatal(err)
			}
			waitVerified(t, "windows", verify, log, "-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks))
			if code := post(t, httpAddr, "/api/v1/jobs/"+job+"/cancel", "", nil); code != http.StatusAccepted {
				t.Fatalf("cancel: %d", code)
			}
			waitState(t, httpAddr, job, "CANCELED", 30*time.Second)
		})
	}
}

// keyedOnThree is the sensor workload keyed by sensor onto partitions 0, 1
// and 3 (partition 2 gets nothing), each of them ending with a reading
// far in the future that closes every window.
func keyedOnThree(c workload.Config) []conformance.Record {
	parts := []int32{0, 1, 3}
	var recs []conformance.Record
	c.Emit(func(s, tick int) {
		id := c.SensorID(s)
		v := workload.AppendRecord(nil, id, c.TS(tick), workload.Tenths(s, tick))
		recs = append(recs, conformance.Record{Partition: parts[s%3], Key: []byte(id), Value: bytes.TrimSuffix(v, []byte("\n"))})
	})
	end := c.TS(c.Ticks) + 24*3600*1000
	for _, p := range parts {
		recs = append(recs, conformance.Record{Partition: p, Value: fmt.Appendf(nil, `{"sensor_id":"~end","ts":%d,"temp_c":0}`, end)})
	}
	return recs
}
