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
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/conformance"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// TestObjectStoreCheckpointSIGKILL runs the sensor window pipeline with
// --checkpoint-dir s3://... on MinIO, credentials and endpoint from the
// environment as on a pod (AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL_S3, ...).
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
CREATE TABLE input (k STRING, ts BIGINT, v BIGINT) WITH ('connector' = 'kafka', 'brokers' = '%s', 'topic' = 'readings',
  'format' = 'json', 'event_time_column' = 'ts', 'watermark_lag_ms' = '20000');
CREATE TABLE out (k STRING, window_start BIGINT, window_end BIGINT, n BIGINT, s BIGINT) WITH (
  'connector' = 'file', 'path' = '%s', 'format' = 'json');
INSERT INTO out SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM input GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
`, addr, out)), 0o644)
	args := []string{"run", "--checkpoint-dir", ck, "--checkpoint-interval-ms", "100", "--checkpoints-retained", "2", script}
	store, err := checkpoint.NewStore(ck, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	outRows := func() int { return bytes.Count(conformance.ReadFiles(t, out), []byte("\n")) }
	var killedAt uint64
	for run := 0; run < 3; run++ {
		cmd := exec.Command(bin, args...)
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
