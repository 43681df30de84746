package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/bench/workload"
	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/conformance"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// TestObjectStoreCheckpointSIGKILL runs the sensor window pipeline with
// --checkpoint-dir s3://... on MinIO, credentials and endpoint from the
// environment as on a pod (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL_S3, ...);
// one run names the bucket only by Flink's SET 'state.checkpoints.dir'.
// The job is SIGKILLed twice while readings stream in and restored from
// the bucket each time; every window is exact and written once. The state
// tools read the checkpoint in the bucket, and a savepoint written there.
func TestObjectStoreCheckpointSIGKILL(t *testing.T) {
	bin := build(t)
	s3 := ostest.MinIO(t)
	if err := s3.Client.CreateBucket(context.Background(), "state"); err != nil {
		t.Fatal(err)
	}
	key, _ := os.LookupEnv("CLINK_TEST_S3_ACCESS_KEY")
	secret, _ := os.LookupEnv("CLINK_TEST_S3_SECRET_KEY")
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3.Options["s3.endpoint"])
	t.Setenv("AWS_REGION", s3.Options["s3.region"])
	registerCheckpointStores()

	dir := t.TempDir()
	addr := serveBroker(t, bin, "--topic", "readings:1")
	const keys, ticks = 300, 60
	rng := rand.New(rand.NewPCG(9, 9))
	type win struct {
		n, s int64
		seen bool
	}
	want := map[string]*win{}
	var rows [][]byte
	for tick := int64(0); tick < ticks; tick++ {
		for k := range keys {
			ts := 1_700_000_000_000 + tick*1000 + int64(k%1000)
			v := rng.Int64N(1000)
			key := fmt.Sprintf("sensor-%03d", k)
			rows = append(rows, fmt.Appendf(nil, `{"k":%q,"ts":%d,"v":%d}`, key, ts, v))
			id := fmt.Sprintf("%s|%d", key, ts-ts%10000)
			if want[id] == nil {
				want[id] = &win{}
			}
			want[id].n++
			want[id].s += v
		}
	}
	rows = append(rows, []byte(`{"k":"flush","ts":1800000000000,"v":0}`))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := make(chan error, 1)
	go func() {
		// 50 readings every 10 ms: about 5 000 a second, for 3.6 s.
		for lo := 0; lo < len(rows); lo += 50 {
			var recs []*kgo.Record
			for _, r := range rows[lo:min(lo+50, len(rows))] {
				recs = append(recs, &kgo.Record{Value: r})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		produced <- nil
	}()
	out := filepath.Join(dir, "out")
	ck := s3.URL("state", "checkpoints/sensors")
	script := filepath.Join(dir, "job.sql")
	os.WriteFile(script, []byte(fmt.Sprintf(`
SET 'state.checkpoints.dir' = '%s';
CREATE TABLE input (k STRING, ts BIGINT, v BIGINT) WITH ('connector' = 'kafka', 'brokers' = '%s', 'topic' = 'readings',
  'format' = 'json', 'event_time_column' = 'ts', 'watermark_lag_ms' = '20000');
CREATE TABLE out (k STRING, window_start BIGINT, window_end BIGINT, n BIGINT, s BIGINT) WITH (
  'connector' = 'file', 'path' = '%s', 'format' = 'json');
INSERT INTO out SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM input GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
`, ck, addr, out)), 0o644)
	args := []string{"run", "--checkpoint-dir", ck, "--checkpoint-interval-ms", "100", "--checkpoints-retained", "2", script}
	store, err := checkpoint.NewStore(ck, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	outRows := func() int { return bytes.Count(conformance.ReadFiles(t, out), []byte("\n")) }
	var killedAt uint64
	for run := 0; run < 3; run++ {
		cmd := exec.Command(bin, args...)
		if run == 1 {
			// Flink's SET alone names the bucket.
			cmd = exec.Command(bin, slices.Concat(args[:1], args[3:])...)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.After(90 * time.Second)
		for stopped := false; !stopped; {
			select {
			case err := <-done:
				t.Fatalf("run %d ended: %v\n%s", run, err, stderr.String())
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("run %d: not done after 90 s (%d windows written)\n%s", run, outRows(), stderr.String())
			case <-time.After(5 * time.Millisecond):
				if run == 2 {
					if outRows() < len(want) {
						continue
					}
				} else if id, ok, _ := store.Latest(); !ok || id < killedAt+3 {
					continue
				} else {
					killedAt = id
				}
				cmd.Process.Kill()
				t.Logf("run %d: killed (newest checkpoint %d)", run, killedAt)
				<-done
				stopped = true
			}
		}
		if run > 0 && !strings.Contains(stderr.String(), "restore point: checkpoint") {
			t.Fatalf("run %d did not restore:\n%s", run, stderr.String())
		}
		if run == 0 {
			checkRemoteStateTools(t, bin, store, ck, script)
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(conformance.ReadFiles(t, out)))
	n := 0
	for sc.Scan() {
		var r struct {
			K           string
			WindowStart int64 `json:"window_start"`
			WindowEnd   int64 `json:"window_end"`
			N, S        int64
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		w := want[fmt.Sprintf("%s|%d", r.K, r.WindowStart)]
		switch {
		case w == nil:
			t.Fatalf("unexpected window %s", sc.Text())
		case w.seen:
			t.Fatalf("window written twice: %s", sc.Text())
		case r.N != w.n || r.S != w.s || r.WindowEnd != r.WindowStart+10000:
			t.Fatalf("window %s: want n=%d s=%d", sc.Text(), w.n, w.s)
		}
		w.seen = true
	}
	if n != len(want) {
		t.Fatalf("%d windows written, want %d", n, len(want))
	}
	// Everything the job wrote is under its prefix, and retention kept
	// the bucket small: two complete checkpoints (their chains) and at
	// most the one being written when the job was killed.
	keys2, err := s3.Client.List(context.Background(), "state", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys2 {
		if !strings.HasPrefix(k, "checkpoints/sensors/") && !strings.HasPrefix(k, "savepoints/") {
			t.Errorf("object %s outside the checkpoint prefix", k)
		}
	}
	list, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 2+engineDeltaSlack {
		t.Errorf("%d checkpoints left in the bucket after retention: %v", len(list), list)
	}
}

// engineDeltaSlack: incremental chains keep older checkpoints' parts
// (their directories lose their manifests), up to a chain's length.
const engineDeltaSlack = 16

// checkRemoteStateTools: state-cat and state-query read the newest
// checkpoint in the bucket; a savepoint written into the bucket reads
// the same rows, and so does a local copy; savepoint check accepts both
// for the job's SQL.
func checkRemoteStateTools(t *testing.T, bin string, store *checkpoint.Store, ck, script string) {
	t.Helper()
	id, ok, err := store.Latest()
	if err != nil || !ok {
		t.Fatalf("no checkpoint in %s: %v", ck, err)
	}
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	sp := strings.Replace(ck, "checkpoints/sensors", fmt.Sprintf("savepoints/sp-%d", id), 1)
	if err := checkpoint.WriteSavepoint(cp, sp); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "sp")
	if err := checkpoint.WriteSavepoint(cp, local); err != nil {
		t.Fatal(err)
	}
	lines := func(args ...string) []string {
		t.Helper()
		o, e, code := runCLI(t, bin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, e)
		}
		ls := strings.Split(strings.TrimSpace(o), "\n")
		slices.Sort(ls)
		return ls
	}
	got := lines("state-cat", "--checkpoint-dir", ck, "--id", fmt.Sprint(id), "--format", "json")
	chk := lines("state-cat", ck+"/chk-"+fmt.Sprint(id), "--format", "json")
	remoteSP := lines("state-cat", sp, "--format", "json")
	localSP := lines("state-cat", local, "--format", "json")
	if len(got) < 10 || !slices.Equal(got, chk) || !slices.Equal(got, remoteSP) || !slices.Equal(got, localSP) {
		t.Fatalf("state-cat of checkpoint %d in %s: %d lines; of chk-%d: %d; of the savepoint in the bucket: %d; of a local copy: %d",
			id, ck, len(got), id, len(chk), len(remoteSP), len(localSP))
	}
	q := lines("state-query", "--checkpoint-dir", ck, "--sql", "SELECT COUNT(*) AS n FROM state")
	// An updating count: its last value is the number of state rows.
	if all := strings.Join(q, "\n"); !strings.Contains(all, fmt.Sprintf(`"n":%d}`, len(got))) || strings.Contains(all, fmt.Sprintf(`"n":%d}`, len(got)+1)) {
		t.Fatalf("state-query over %s: %d lines, no final count of %d", ck, len(q), len(got))
	}
	for _, args := range [][]string{{"--savepoint", sp}, {"--checkpoint-dir", ck}} {
		if o, e, code := runCLI(t, bin, append(append([]string{"savepoint", "check"}, args...), script)...); code != 0 {
			t.Fatalf("savepoint check %v: exit %d\n%s%s", args, code, o, e)
		}
	}
}

// TestClusterObjectStoreCheckpoints: a Coordinator and two Worker
// processes keep the sensor job's checkpoints in MinIO (no shared
// directory: the Workers upload the parts, the Coordinator the
// manifests); one Worker is SIGKILLed and started again, the job restores
// from the bucket, and every window is exact and written once.
func TestClusterObjectStoreCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams for about 8 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	s3 := ostest.MinIO(t)
	if err := s3.Client.CreateBucket(context.Background(), "state"); err != nil {
		t.Fatal(err)
	}
	key, _ := os.LookupEnv("CLINK_TEST_S3_ACCESS_KEY")
	secret, _ := os.LookupEnv("CLINK_TEST_S3_SECRET_KEY")
	t.Setenv("AWS_ACCESS_KEY_ID", key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_ENDPOINT_URL_S3", s3.Options["s3.endpoint"])
	t.Setenv("AWS_REGION", s3.Options["s3.region"])

	addr := serveBroker(t, bin, "--topic", "readings:4")
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
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	ck := s3.URL("state", "ck")
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", ck)
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "1", "--id", "w1")
	w2 := startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "1", "--id", "w2")
	job := submitJob(t, bin, coord, "--parallelism", "2", sqlFile)
	waitState(t, httpAddr, job, "RUNNING", 30*time.Second)

	c := workload.Default()
	c.Ticks = 600
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()

	registerCheckpointStores()
	store, err := checkpoint.NewStore(checkpoint.JoinLoc(ck, "pipeline"), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if id, ok, _ := store.Latest(); ok && id >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in %s after 30 s:\n%s", ck, log.String())
		}
	}
	w2.kill()
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "1", "--id", "w2")
	waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	var report string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		o, err := exec.Command(verify, vargs...).Output()
		report = string(o)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if !strings.HasPrefix(report, "PASS") {
		t.Fatalf("verify after a Worker SIGKILL:\n%s\ncluster log:\n%s", report, log.String())
	}
	if !strings.Contains(log.String(), "restore point: checkpoint") {
		t.Errorf("the cluster log shows no restore:\n%s", log.String())
	}
	keys, err := s3.Client.List(context.Background(), "state", "ck/pipeline/")
	if err != nil || len(keys) == 0 {
		t.Fatalf("no checkpoint objects under ck/pipeline/: %v", err)
	}
	t.Logf("%s; %d objects in the bucket", strings.TrimSpace(report), len(keys))
}
