package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStateExportJob: clink state-export --job N against a running job
// checkpointing every 100 ms with one checkpoint retained succeeds every
// time (20 runs): the Coordinator pins the checkpoint it names until the
// export ends, so retention cannot remove it mid-read (before, 4 runs in
// 6 failed). state-cat --job too, through the Flight address.
func TestStateExportJob(t *testing.T) {
	bin := build(t)
	addr := serveBroker(t, bin, "--topic", "readings:2")
	dir := t.TempDir()
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(dir, "ck"))
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", "w1")
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, `{"sensor_id":"s%d","ts":%d,"temp_c":%d.5}`+"\n", i%50, i*10, i%30)
	}
	clink(t, bin, in.String(), "kafka", "produce", "--brokers", addr, "--topic", "readings")
	sqlFile := filepath.Join(dir, "job.sql")
	os.WriteFile(sqlFile, []byte(`SET 'execution.checkpointing.interval' = '100ms';
SET 'state.checkpoints.num-retained' = '1';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '`+addr+`', 'topic' = 'readings', 'event_time_column' = 'ts');
CREATE TABLE o (sensor_id STRING, n BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO o SELECT sensor_id, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '100' SECOND), sensor_id;
`), 0o644)
	job := submitJob(t, bin, coord, "--parallelism", "2", sqlFile)
	waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
	waitFor(t, log, "job_id="+job+" checkpoint 1 complete", 30*time.Second)
	ids := map[string]bool{}
	for i := range 20 {
		out := filepath.Join(dir, fmt.Sprintf("export-%d", i))
		stdout, stderr, code := runCLI(t, bin, "state-export", "--job", job, "--coordinator", httpAddr, "--out", out)
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, stdout, stderr)
		}
		if m := strings.Index(stderr, "reading checkpoint "); m >= 0 {
			ids[strings.Fields(stderr[m+len("reading checkpoint "):])[0]] = true
		}
		parts, _ := filepath.Glob(filepath.Join(out, "*", "*.parquet"))
		if len(parts) == 0 {
			parts, _ = filepath.Glob(filepath.Join(out, "*.parquet"))
		}
		if len(parts) == 0 {
			t.Fatalf("run %d: no Parquet files in %s\n%s", i, out, stdout)
		}
	}
	t.Logf("20 exports of %d different checkpoints", len(ids))
	stdout, stderr, code := runCLI(t, bin, "state-cat", "--job", job, "--coordinator", coord, "--format", "json", "--limit", "3")
	if code != 0 || strings.Count(stdout, "\n") != 3 {
		t.Fatalf("state-cat --job: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, bin, "state-export", "--job", "99", "--coordinator", httpAddr, "--out", filepath.Join(dir, "x")); code == 0 || !strings.Contains(stderr, "no job 99") {
		t.Fatalf("an unknown job: exit %d: %s", code, stderr)
	}
}
