package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The checkpoint flags as a user meets them: the guarantee on stderr, a
// finished job that does nothing twice, refusals with their reasons.
func TestCheckpointCLI(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\",\"ts\":1000}\n{\"k\":\"b\",\"ts\":1500}\n{\"k\":\"a\",\"ts\":12000}\n"), 0o644)
	out := filepath.Join(dir, "out.jsonl")
	ck := filepath.Join(dir, "ck")
	ddl := "CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector'='file','path'='" + in + "','event_time_column'='ts');\n"
	job := ddl + "CREATE TABLE o (k STRING, window_start BIGINT, c BIGINT) WITH ('connector'='file','path'='" + out + "');\n" +
		"INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k"
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"run"}, args...)...)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	msg, err := run("--checkpoint-dir", ck, "-e", job)
	if err != nil || !strings.Contains(msg, "starting fresh") || !strings.Contains(msg, "clink: job insert-into_o: guarantee EXACTLY_ONCE") {
		t.Fatalf("first run: %v\n%s", err, msg)
	}
	first, _ := os.ReadFile(out)
	if strings.Count(string(first), "\n") != 3 {
		t.Fatalf("output %q", first)
	}
	msg, err = run("--checkpoint-dir", ck, "-e", job)
	if err != nil || !strings.Contains(msg, "restore point: checkpoint 1") || !strings.Contains(msg, "0 rows read") {
		t.Fatalf("second run: %v\n%s", err, msg)
	}
	if again, _ := os.ReadFile(out); string(again) != string(first) {
		t.Fatalf("a finished job restarted changed its output: %q", again)
	}
	// A query whose aggregate's state differs is refused, naming it.
	msg, err = run("--checkpoint-dir", ck, "-e", strings.Replace(job, "COUNT(*)", "COUNT(k)", 1))
	if err == nil || !strings.Contains(msg, "window_aggregate: the aggregates changed from [COUNT(*)] to [COUNT(k VARCHAR)] (incompatible)") {
		t.Fatalf("other job: %v\n%s", err, msg)
	}
	msg, err = run("--parallelism", "2", "-e", ddl+"SELECT k FROM t UNION ALL SELECT k FROM t")
	if err != nil {
		t.Fatalf("union at parallelism 2: %v\n%s", err, msg)
	}
	// A self-join: the table is read once per subtask, behind a tee, and
	// each reading is exchanged on its side's key.
	self := ddl + "SELECT a.k, b.ts FROM t a JOIN t b ON a.k = b.k"
	serial, err := run("-e", self)
	if err != nil {
		t.Fatalf("self-join: %v\n%s", err, serial)
	}
	msg, err = run("--parallelism", "2", "-e", self)
	if err != nil || !slices.Equal(jsonLines(msg), jsonLines(serial)) || len(jsonLines(msg)) == 0 {
		t.Fatalf("self-join at parallelism 2: %v\n%s\nat parallelism 1:\n%s", err, msg, serial)
	}
	msg, err = run("--checkpoint-dir", filepath.Join(dir, "ck3"), "-e", ddl+"SELECT k, window_start, COUNT(*) AS c FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k")
	if err != nil || !strings.Contains(msg, "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'print')") {
		t.Fatalf("print sink: %v\n%s", err, msg)
	}
	msg, err = run("-e", "CREATE TABLE s (x INT) WITH ('connector'='print','delivery_guarantee'='exactly_once'); INSERT INTO s SELECT 1")
	if err == nil || !strings.Contains(msg, "cannot deliver exactly once") {
		t.Fatalf("print exactly_once: %v\n%s", err, msg)
	}
	msg, err = run("-e", job)
	if err != nil || !strings.Contains(msg, "clink: job insert-into_o: guarantee NONE") {
		t.Fatalf("without checkpoints: %v\n%s", err, msg)
	}
	// Flink's SET keys configure the same, flags override them; the
	// fingerprint ignores them (a new interval keeps the state).
	ck4 := filepath.Join(dir, "ck4")
	set := "SET 'execution.checkpointing.interval' = '200 ms';\nSET 'state.checkpoints.dir' = 'file://" + ck4 + "';\nSET 'parallelism.default' = '2';\n"
	msg, err = run("-e", set+job)
	if err != nil || !strings.Contains(msg, "checkpoints: "+ck4+" (every 200ms); starting fresh") {
		t.Fatalf("SET checkpoints: %v\n%s", err, msg)
	}
	msg, err = run("--checkpoint-interval-ms", "50", "-e", strings.Replace(set, "200 ms", "1s", 1)+job)
	if err != nil || !strings.Contains(msg, "(every 50ms); restore point: checkpoint") {
		t.Fatalf("flag over SET: %v\n%s", err, msg)
	}
	msg, err = run("-e", "SET 'execution.checkpointing.interval' = 'often';\n"+job)
	if err == nil || !strings.Contains(msg, "line 1:") || !strings.Contains(msg, "not a positive duration") {
		t.Fatalf("bad interval: %v\n%s", err, msg)
	}
}

// jsonLines returns the JSON lines of a run's output, sorted.
func jsonLines(out string) []string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "{") {
			rows = append(rows, l)
		}
	}
	slices.Sort(rows)
	return rows
}
