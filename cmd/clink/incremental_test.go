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
	"github.com/clink-dev/clink/engine"
)

// TestIncrementalSIGKILL streams readings through the dev broker at a
// steady pace into a window aggregate whose 60 s watermark lag keeps many
// windows open, with a checkpoint every 20 ms, so that each checkpoint
// changes a small share of the groups and is a delta. It SIGKILLs the job
// once its newest checkpoint is a chain of several deltas on a full part
// that is not the job's first (a compaction happened), restores from that
// chain, kills it the same way again and lets the last run consume the
// rest: every window is exact and written once, as recomputed here from
// the input. The state tools read the incremental checkpoint as the full
// one it stands for.
func TestIncrementalSIGKILL(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	addr := serveBroker(t, bin, "--topic", "readings:1")
	const keys, ticks = 2000, 60
	rng := rand.New(rand.NewPCG(7, 7))
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
			key := fmt.Sprintf("key-%04d", k)
			rows = append(rows, fmt.Appendf(nil, `{"k":%q,"ts":%d,"v":%d}`, key, ts, v))
			id := fmt.Sprintf("%s|%d", key, ts-ts%10000)
			if want[id] == nil {
				want[id] = &win{}
			}
			want[id].n++
			want[id].s += v
		}
	}
	// One reading far ahead moves the watermark past every window; its
	// own window never closes.
	rows = append(rows, []byte(`{"k":"flush","ts":1800000000000,"v":0}`))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("readings"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := make(chan error, 1)
	go func() {
		// 100 readings every 5 ms: about 20 000 a second.
		for lo := 0; lo < len(rows); lo += 100 {
			var recs []*kgo.Record
			for _, r := range rows[lo:min(lo+100, len(rows))] {
				recs = append(recs, &kgo.Record{Value: r})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		produced <- nil
	}()
	out, ck := filepath.Join(dir, "out"), filepath.Join(dir, "ck")
	script := filepath.Join(dir, "job.sql")
	os.WriteFile(script, []byte(fmt.Sprintf(`
CREATE TABLE input (k STRING, ts BIGINT, v BIGINT) WITH ('connector' = 'kafka', 'brokers' = '%s', 'topic' = 'readings',
  'format' = 'json', 'event_time_column' = 'ts', 'watermark_lag_ms' = '60000');
CREATE TABLE out (k STRING, window_start BIGINT, window_end BIGINT, n BIGINT, s BIGINT) WITH (
  'connector' = 'file', 'path' = '%s', 'format' = 'json');
INSERT INTO out SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM input GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k;
`, addr, out)), 0o644)
	args := []string{"run", "--checkpoint-dir", ck, "--checkpoint-interval-ms", "20", "--checkpoints-retained", "2", script}
	store, err := checkpoint.NewStore(ck, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// chain reports the newest checkpoint when the window aggregate's
	// part in it is a chain of at least three deltas on a full part
	// written after a chain of (nearly) DefaultMaxDeltas deltas seen in
	// this run: the restore reads deltas after a compaction.
	var longest, longestAt uint64 // the longest chain seen in the run and where
	chain := func() (uint64, bool) {
		id, ok, _ := store.Latest()
		if !ok {
			return 0, false
		}
		cp, err := store.Open(id)
		if err != nil {
			return 0, false
		}
		for _, p := range cp.Manifest.Parts {
			if !strings.HasPrefix(p.Operator, "window") {
				continue
			}
			if n := uint64(len(p.Chain)); n > longest {
				longest, longestAt = n, id
			}
			if longest >= engine.DefaultMaxDeltas-2 && len(p.Chain) >= 3 && p.Chain[0].Checkpoint > longestAt {
				return id, true
			}
		}
		return 0, false
	}
	outRows := func() int { return bytes.Count(conformance.ReadFiles(t, out), []byte("\n")) }
	for run := 0; run < 3; run++ {
		longest, longestAt = 0, 0
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		deadline := time.After(90 * time.Second)
		killedAt := uint64(0)
		for stopped := false; !stopped; {
			select {
			case err := <-done:
				t.Fatalf("run %d ended: %v\n%s", run, err, stderr.String())
			case <-deadline:
				cmd.Process.Kill()
				t.Fatalf("run %d: not done after 90 s (%d windows written)\n%s", run, outRows(), stderr.String())
			case <-time.After(2 * time.Millisecond):
				if run == 2 {
					if outRows() < len(want) {
						continue
					}
					cmd.Process.Kill()
				} else if id, ok := chain(); ok {
					cmd.Process.Kill()
					t.Logf("run %d: killed with checkpoint %d a chain of deltas after a compaction", run, id)
					killedAt = id
				} else {
					continue
				}
				<-done
				stopped = true
			}
		}
		if run == 0 {
			checkStateTools(t, bin, store, killedAt)
		}
		if run > 0 && !strings.Contains(stderr.String(), "restore point: checkpoint") {
			t.Fatalf("run %d did not restore:\n%s", run, stderr.String())
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
}

// checkStateTools: state-cat of incremental checkpoint id lists the same
// rows as state-cat of a savepoint written from it (full parts).
func checkStateTools(t *testing.T, bin string, store *checkpoint.Store, id uint64) {
	t.Helper()
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	spDir := t.TempDir()
	if err := checkpoint.WriteSavepoint(cp, filepath.Join(spDir, fmt.Sprintf("chk-%d", id))); err != nil {
		t.Fatal(err)
	}
	lines := func(args ...string) []string {
		o, e, code := runCLI(t, bin, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, e)
		}
		ls := strings.Split(strings.TrimSpace(o), "\n")
		slices.Sort(ls)
		return ls
	}
	got := lines("state-cat", "--dir", store.Dir(), "--id", fmt.Sprint(id), "--format", "json")
	full := lines("state-cat", "--dir", spDir, "--format", "json")
	if len(got) < 100 || !slices.Equal(got, full) {
		t.Fatalf("state-cat of incremental checkpoint %d: %d lines, of its full savepoint: %d lines", id, len(got), len(full))
	}
}
