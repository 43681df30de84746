package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

// TestClusterSavepoint: `clink savepoint` takes a savepoint of a running
// cluster job (it runs on) into <checkpoint dir>/savepoints; checkpoints
// retained 1 remove the checkpoint it was taken as, not the savepoint;
// after a cancel, a script dropping the window's state is refused, the
// SQL with a changed watermark lag submitted over HTTP with
// from_savepoint, and then the first run embedded with `clink run --from-savepoint`, each resume from
// it and write every window exactly once (the sensors verifier).
func TestClusterSavepoint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams for about 10 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	addr := serveBroker(t, bin, "--topic", "readings:4")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `SET 'execution.checkpointing.interval' = '200ms';
SET 'execution.checkpointing.num-retained' = '1';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
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
	log := &syncBuffer{}
	ck := filepath.Join(dir, "ck")
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", ck)
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", "w1")
	job := submitJob(t, bin, coord, "--parallelism", "2", sqlFile)
	waitState(t, httpAddr, job, "RUNNING", 30*time.Second)

	c := workload.Default()
	c.Ticks = 600
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()
	time.Sleep(1500 * time.Millisecond)

	sp := strings.TrimSpace(clink(t, bin, "", "savepoint", job, "--coordinator", coord))
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(ck, "savepoints", "savepoint-pipeline-")) + `(\d+)$`).FindStringSubmatch(sp)
	if m == nil {
		t.Fatalf("savepoint path %q\n%s", sp, log.String())
	}
	if d := getJob(t, httpAddr, job); d["state"] != "RUNNING" || d["savepoint"] != sp {
		t.Fatalf("after the savepoint: %v", d)
	}
	spID, _ := strconv.ParseUint(m[1], 10, 64)
	// More checkpoints, one retained: the savepoint's checkpoint goes, the
	// savepoint stays.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lc, _ := getJob(t, httpAddr, job)["latest_checkpoint"].(map[string]any)
		if id, _ := lc["id"].(float64); uint64(id) >= spID+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoints after the savepoint:\n%s", log.String())
		}
	}
	if _, err := os.Stat(filepath.Join(ck, "pipeline", "chk-"+m[1])); !os.IsNotExist(err) {
		t.Errorf("chk-%s outlived retention 1: %v", m[1], err)
	}
	if _, err := os.Stat(filepath.Join(sp, "_metadata.json")); err != nil {
		t.Fatalf("the savepoint did not outlive retention: %v", err)
	}
	if code := post(t, httpAddr, "/api/v1/jobs/"+job+"/cancel", "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitState(t, httpAddr, job, "CANCELED", 30*time.Second)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	verified := func(what, lag string) {
		t.Helper()
		waitVerified(t, what, verify, log, "-in", out, "-lag", lag, "-window", "10000", "-ticks", strconv.Itoa(c.Ticks))
	}

	// The window aggregate removed: its state would be lost; the
	// Coordinator refuses the restore, naming it, before any Worker runs.
	dropped := strings.Replace(sql, "SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)\nFROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;",
		"SELECT sensor_id, ts, ts, 1, temp_c, temp_c, temp_c FROM readings;", 1)
	body, _ := json.Marshal(map[string]any{"sql": dropped, "name": "pipeline", "parallelism": 2, "from_savepoint": sp})
	var refused struct {
		Errors []string `json:"errors"`
	}
	if code := post(t, httpAddr, "/api/v1/jobs", string(body), &refused); code != http.StatusBadRequest ||
		!strings.Contains(strings.Join(refused.Errors, ""), "window_aggregate") || !strings.Contains(strings.Join(refused.Errors, ""), "--allow-non-restored-state") {
		t.Fatalf("restore dropping the window's state: %d %q", code, refused.Errors)
	}

	// HTTP submit with from_savepoint, the watermark lag changed (it
	// does not shape state: every operator restores; no reading is late
	// at either lag, so every window is the same).
	sql2 := strings.Replace(sql, "'watermark_lag_ms' = '3000'", "'watermark_lag_ms' = '6000'", 1)
	body, _ = json.Marshal(map[string]any{"sql": sql2, "name": "pipeline", "parallelism": 2, "from_savepoint": sp})
	var sub struct {
		Job           int    `json:"job"`
		RestorePoint  uint64 `json:"restore_point"`
		FromSavepoint string `json:"from_savepoint"`
	}
	if code := post(t, httpAddr, "/api/v1/jobs", string(body), &sub); code != http.StatusAccepted || sub.RestorePoint != spID || sub.FromSavepoint != sp {
		t.Fatalf("submit from_savepoint: %d %+v\n%s", code, sub, log.String())
	}
	job2 := strconv.Itoa(sub.Job)
	waitState(t, httpAddr, job2, "RUNNING", 30*time.Second)
	// A checkpoint after the restore: the sink went back to the
	// savepoint's output before it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		lc, _ := getJob(t, httpAddr, job2)["latest_checkpoint"].(map[string]any)
		if id, _ := lc["id"].(float64); uint64(id) > spID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after the restore:\n%s", log.String())
		}
	}
	verified("restored over HTTP", "6000")
	if !strings.Contains(log.String(), "job_id="+job2+" restore point: checkpoint "+m[1]+" (savepoint "+sp+")") {
		t.Errorf("the log does not name the savepoint restored")
	}
	if code := post(t, httpAddr, "/api/v1/jobs/"+job2+"/cancel", "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	waitState(t, httpAddr, job2, "CANCELED", 30*time.Second)

	// Embedded, from the same savepoint: the file sink goes back to the
	// savepoint's output and writes the rest again, once.
	elog := &syncBuffer{}
	p := startProc(t, bin, elog, "run", "--parallelism", "2", "--checkpoint-dir", filepath.Join(dir, "ck-embedded"), "--from-savepoint", sp, sqlFile)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ms, _ := filepath.Glob(filepath.Join(dir, "ck-embedded", "chk-*", "_metadata.json"))
		if len(ms) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint of the embedded run:\n%s", elog.String())
		}
	}
	verified("restored embedded", "3000")
	if !strings.Contains(elog.String(), "restore point: checkpoint "+m[1]+" (savepoint "+sp+")") {
		t.Errorf("embedded run's stderr:\n%s", elog.String())
	}
	p.kill()
}

// post sends an HTTP POST with a JSON body and decodes the answer into
// out (when not nil).
func post(t *testing.T, httpAddr, path, body string, out any) int {
	t.Helper()
	resp, err := http.Post("http://"+httpAddr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// waitVerified runs the sensors verifier with args until it passes, for
// up to 90 s (the last windows land as the watermark passes them), and
// fails the test with its report and log otherwise.
func waitVerified(t *testing.T, what, verify string, log *syncBuffer, args ...string) {
	t.Helper()
	var report string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		o, err := exec.Command(verify, args...).Output()
		report = string(o)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if !strings.HasPrefix(report, "PASS") {
		t.Fatalf("%s: verify:\n%s\ncluster log:\n%s", what, report, log.String())
	}
}
