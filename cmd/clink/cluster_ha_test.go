package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestClusterCoordinatorSIGKILL is issue #19's story: two Coordinators on
// one --ha-dir, two Workers that know both; the sensor workload streams
// through the dev broker into the exactly-once file and Kafka sinks while
// the leader is killed with SIGKILL three times (and started again, as a
// standby). Each time the standby takes the lease with the next epoch and
// recovers the job, under the same id, from its newest checkpoint; every
// window is exact. The time from each kill to the first checkpoint
// completed after it (the sinks publish at checkpoints) is logged.
func TestClusterCoordinatorSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams for about 30 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	addr := serveBroker(t, bin, "--topic", "readings:4")
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "windows", "--partitions", "2")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `SET 'execution.checkpointing.interval' = '200ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + out + `');
CREATE TABLE window_topic (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'windows', 'key_column' = 'sensor_id',
  'delivery_guarantee' = 'exactly_once');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
INSERT INTO window_topic
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	haDir := filepath.Join(dir, "ha")
	type coordinator struct {
		flight, http string
		log          *syncBuffer
		p            *proc
	}
	cs := []*coordinator{{flight: freePort(t), http: freePort(t)}, {flight: freePort(t), http: freePort(t)}}
	start := func(c *coordinator, name string) {
		c.log = &syncBuffer{}
		c.p = startProc(t, bin, c.log, "coordinator", "--addr", c.flight, "--http-addr", c.http, "--checkpoint-dir", filepath.Join(dir, "ck"),
			"--ha-dir", haDir, "--ha-id", name) // the default lease: the figure in docs/performance.md
	}
	start(cs[0], "c1")
	waitLine := func(b *syncBuffer, want string, timeout time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(b.String(), want) {
				return
			}
		}
		t.Fatalf("no %q within %s:\n%s", want, timeout, b.String())
	}
	waitLine(cs[0].log, "leadership acquired epoch=1", 20*time.Second)
	start(cs[1], "c2")
	waitLine(cs[1].log, "standby: leader is c1 epoch=1", 20*time.Second)
	wlog := &syncBuffer{}
	list := cs[0].flight + "," + cs[1].flight
	startProc(t, bin, wlog, "worker", "--coordinators", list, "--ha-dir", haDir, "--slots", "2", "--id", "w1")
	startProc(t, bin, wlog, "worker", "--coordinators", list, "--ha-dir", haDir, "--slots", "2", "--id", "w2")
	job := submitJob(t, bin, cs[0].flight, "--parallelism", "4", sqlFile)
	waitState(t, cs[0].http, job, "RUNNING", 30*time.Second)

	c := workload.Default()
	c.Ticks = 1200
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()

	latest := func(httpAddr string) float64 {
		d := getJob(t, httpAddr, job)
		if lc, ok := d["latest_checkpoint"].(map[string]any); ok && d["state"] == "RUNNING" {
			id, _ := lc["id"].(float64)
			return id
		}
		return 0
	}
	leader, epoch := 0, 1
	for i := range 3 {
		time.Sleep(2500 * time.Millisecond)
		before := latest(cs[leader].http)
		cs[leader].p.kill()
		killed := time.Now()
		next := 1 - leader
		epoch++
		waitLine(cs[next].log, fmt.Sprintf("leadership acquired epoch=%d", epoch), 20*time.Second)
		waitLine(cs[next].log, "recovering job_id="+job+" from checkpoint", 10*time.Second)
		for deadline := time.Now().Add(30 * time.Second); latest(cs[next].http) <= before; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no checkpoint after %v on the new leader:\n%s\nworkers:\n%s", before, cs[next].log.String(), wlog.String())
			}
		}
		t.Logf("kill %d of the leader: epoch %d leads, the job (id %s) completed a checkpoint again %s after the kill", i+1, epoch, job, time.Since(killed).Round(time.Millisecond))
		// The killed Coordinator comes back as a standby.
		start(cs[leader], []string{"c1", "c2"}[leader])
		waitLine(cs[leader].log, fmt.Sprintf("epoch=%d", epoch), 20*time.Second)
		leader = next
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	topicOut := filepath.Join(dir, "topic.jsonl")
	targs := append(append([]string{}, vargs...), "-in", topicOut)
	var report string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		o, err := exec.Command(verify, vargs...).Output()
		report = string(o)
		if err == nil {
			if err := os.WriteFile(topicOut, consumeCommitted(t, addr, "windows"), 0o644); err != nil {
				t.Fatal(err)
			}
			o, err = exec.Command(verify, targs...).Output()
			report = "kafka sink: " + string(o)
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if !strings.HasPrefix(report, "kafka sink: PASS") {
		t.Fatalf("verify after 3 leader SIGKILLs:\n%s\nleader log:\n%s\nworkers:\n%s", report, cs[leader].log.String(), wlog.String())
	}
	if d := getJob(t, cs[leader].http, job); d["state"] != "RUNNING" {
		t.Errorf("job %s on the last leader: %v", job, d)
	}
	t.Logf("%s", strings.TrimSpace(report))
}

// TestClusterCoordinatorSIGSTOP: the leader is stopped (SIGSTOP) until the
// standby took over, then continued: it steps down and leaves the job to
// the new leader; no checkpoint of its epoch completes after the takeover
// (every manifest written since names the new epoch).
func TestClusterCoordinatorSIGSTOP(t *testing.T) {

	bin := build(t)
	addr := serveBroker(t, bin, "--topic", "readings:2")
	dir := t.TempDir()
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `SET 'execution.checkpointing.interval' = '100ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings', 'event_time_column' = 'ts');
CREATE TABLE o (sensor_id STRING, n BIGINT) WITH ('connector' = 'file', 'path' = '` + filepath.Join(dir, "out") + `');
INSERT INTO o SELECT sensor_id, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	haDir := filepath.Join(dir, "ha")
	logs := []*syncBuffer{{}, {}}
	flights := []string{freePort(t), freePort(t)}
	var ps []*proc
	for i := range 2 {
		ps = append(ps, startProc(t, bin, logs[i], "coordinator", "--addr", flights[i], "--http-addr", "off", "--checkpoint-dir", filepath.Join(dir, "ck"),
			"--ha-dir", haDir, "--ha-id", fmt.Sprintf("c%d", i+1), "--lease", "1s", "--lease-renew", "100ms"))
		if i == 0 {
			waitFor(t, logs[0], "leadership acquired epoch=1", 20*time.Second)
		}
	}
	waitFor(t, logs[1], "standby: leader is c1 epoch=1", 20*time.Second)
	wlog := &syncBuffer{}
	startProc(t, bin, wlog, "worker", "--coordinators", strings.Join(flights, ","), "--ha-dir", haDir, "--slots", "1", "--id", "w1")
	job := submitJob(t, bin, flights[0], sqlFile)
	waitFor(t, logs[0], "job_id="+job+" checkpoint 1 complete", 30*time.Second)
	if err := ps[0].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, logs[1], "leadership acquired epoch=2", 20*time.Second)
	waitFor(t, logs[1], "recovering job_id="+job+" from checkpoint", 10*time.Second)
	takeover := time.Now()
	waitFor(t, wlog, "(leader epoch 2)", 20*time.Second)
	if err := ps[0].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, logs[0], "leadership lost", 10*time.Second)
	waitFor(t, logs[0], "standby: leader is c2 epoch=2", 10*time.Second)
	time.Sleep(time.Second) // the new leader checkpoints on
	ms, _ := filepath.Glob(filepath.Join(dir, "ck", "pipeline", "chk-*", "_metadata.json"))
	newer := 0
	for _, m := range ms {
		st, err := os.Stat(m)
		if err != nil || !st.ModTime().After(takeover) {
			continue
		}
		b, _ := os.ReadFile(m)
		var man struct {
			Properties map[string]string `json:"properties"`
		}
		json.Unmarshal(b, &man)
		if man.Properties["leader_epoch"] != "2" {
			t.Errorf("%s written after the takeover by epoch %q", m, man.Properties["leader_epoch"])
		}
		newer++
	}
	if newer == 0 {
		t.Fatalf("no checkpoint completed after the takeover (manifests %v):\n%s", ms, logs[1].String())
	}
	t.Logf("%d checkpoints completed after the takeover, all by epoch 2", newer)
}

func waitFor(t *testing.T, b *syncBuffer, want string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(b.String(), want) {
			return
		}
	}
	t.Fatalf("no %q within %s:\n%s", want, timeout, b.String())
}
