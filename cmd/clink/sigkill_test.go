package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/bench/workload"
)

// The reference story under SIGKILL: the sensor workload streams into the
// dev broker (its own process) while `clink run --checkpoint-dir` is killed
// with SIGKILL ten times at random moments and restarted; the independent
// verifier (examples/sensors/verify, which recomputes every window from
// the workload definition) must then find every window exactly once in the
// exactly-once file sink. The kill points come from a seed printed in the
// log; CLINK_KILL_SEED repeats a run.
func TestSIGKILLRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("streams for about 20 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CLINK_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kill seed %d (CLINK_KILL_SEED=%d repeats these kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5161))

	addr := serveBroker(t, bin, "--topic", "readings:4")
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "windows", "--partitions", "2")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	ckdir := filepath.Join(dir, "checkpoints")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temperature DOUBLE) WITH (
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
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
INSERT INTO window_topic
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}

	// The workload streams at about 1000 readings per second; then one
	// record per partition far in the future moves every partition's
	// watermark past the last window (its own window never closes).
	c := workload.Default()
	c.Ticks = 1500
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()

	logs := &syncBuffer{}
	runOnce := func(kill time.Duration, par int) {
		cmd := exec.Command(bin, "run", "--quiet", "--parallelism", strconv.Itoa(par), "--checkpoint-dir", ckdir, "--checkpoint-interval-ms", "100", sqlFile)
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("clink run exited on its own: %v\n%s", err, logs.String())
		case <-time.After(kill):
		}
		cmd.Process.Kill() // SIGKILL
		<-exited
	}
	// Each run has its own parallelism (1 to 3): a restore rescales the
	// state (key groups, partitions, part files).
	for i := range 10 {
		kill := time.Duration(150+rng.IntN(1400)) * time.Millisecond
		par := 1 + rng.IntN(3)
		runOnce(kill, par)
		n, _ := filepath.Glob(filepath.Join(ckdir, "chk-*", "_metadata.json"))
		t.Logf("kill %d after %s at parallelism %d (%d complete checkpoints kept)", i+1, kill, par, len(n))
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	// The last run sees every window close; it is killed too once the
	// committed output holds them all.
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	cmd := exec.Command(bin, "run", "--quiet", "--parallelism", "2", "--checkpoint-dir", ckdir, "--checkpoint-interval-ms", "100", sqlFile)
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
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
			report = string(o)
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.HasPrefix(report, "PASS") {
		t.Fatalf("verify after 10 SIGKILLs:\n%s\nclink stderr:\n%s", report, logs.String())
	}
	// Exactly once: a final check after the job is gone (no duplicates
	// appeared, nothing partial is visible).
	o, err := exec.Command(verify, vargs...).CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, o)
	}
	t.Logf("file sink: %s", strings.TrimSpace(string(o)))
	// The Kafka sink, read by a read_committed consumer: each window once.
	if err := os.WriteFile(topicOut, consumeCommitted(t, addr, "windows"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(verify, targs...).CombinedOutput(); err != nil {
		t.Fatalf("verify the Kafka sink's topic (read_committed): %v\n%s", err, o)
	} else {
		t.Logf("kafka sink: %s", strings.TrimSpace(string(o)))
	}
	restores := strings.Count(logs.String(), "restore point: checkpoint")
	if restores < 5 {
		t.Errorf("only %d of 11 runs restored from a checkpoint:\n%s", restores, logs.String())
	}
}

// streamWorkload produces c's readings keyed by sensor at about rate per
// second, then one end-of-stream record per partition of the topic.
func streamWorkload(addr string, c workload.Config, rate int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("readings"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var firstErr error
	done := func(_ *kgo.Record, err error) {
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	start := time.Now()
	n := 0
	part := func(s int) int32 { return int32(s % 4) } // each sensor in one partition, in order
	c.Emit(func(s, tick int) {
		id := c.SensorID(s)
		v := workload.AppendRecord(nil, id, c.TS(tick), workload.Tenths(s, tick))
		cl.Produce(ctx, &kgo.Record{Key: []byte(id), Value: bytes.TrimSuffix(v, []byte("\n")), Partition: part(s)}, done)
		n++
		if n%100 == 0 {
			if d := time.Duration(n) * time.Second / time.Duration(rate); time.Since(start) < d {
				time.Sleep(d - time.Since(start))
			}
		}
	})
	end := c.TS(c.Ticks) + 24*3600*1000
	for p := range int32(4) {
		v := fmt.Sprintf(`{"sensor_id":"~end","ts":%d,"temperature":0}`, end)
		cl.Produce(ctx, &kgo.Record{Value: []byte(v), Partition: p}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return firstErr
}

// consumeCommitted reads every committed record of topic (isolation
// read_committed) until the topic is quiet, as JSON lines.
func consumeCommitted(t *testing.T, addr, topic string) []byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []byte
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(append(out, r.Value...), '\n')
			n++
		})
		if n == 0 {
			return out
		}
	}
}

// buildTool compiles a package of this module (path relative to its root)
// into the test binary's temporary directory.
func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	build(t)
	out := filepath.Join(filepath.Dir(binPath), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// verifyUntilPass reads the target back (readBack writes the file vargs
// name) and runs the verifier until it passes or timeout; it returns the
// verifier's last report.
func verifyUntilPass(verify string, vargs []string, readBack func(), timeout time.Duration) string {
	for deadline := time.Now().Add(timeout); ; time.Sleep(250 * time.Millisecond) {
		readBack()
		o, err := exec.Command(verify, vargs...).Output()
		if err == nil || time.Now().After(deadline) {
			return string(o)
		}
	}
}
