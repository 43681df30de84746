package main

import (
	"os"
	"os/exec"
	"path/filepath"
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
	if err != nil || !strings.Contains(msg, "starting fresh") || !strings.Contains(msg, "guarantee EXACTLY_ONCE") {
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
	// Another query against the same checkpoints is refused.
	msg, err = run("--checkpoint-dir", ck, "-e", strings.Replace(job, "COUNT(*)", "COUNT(k)", 1))
	if err == nil || !strings.Contains(msg, "different job") {
		t.Fatalf("other job: %v\n%s", err, msg)
	}
	msg, err = run("--checkpoint-dir", filepath.Join(dir, "ck2"), "-e", ddl+"SELECT k, COUNT(*) AS c FROM t GROUP BY k")
	if err == nil || !strings.Contains(msg, "checkpoints are not supported for operator group_aggregate yet") {
		t.Fatalf("unwindowed aggregate: %v\n%s", err, msg)
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
	if err != nil || !strings.Contains(msg, "guarantee NONE") {
		t.Fatalf("without checkpoints: %v\n%s", err, msg)
	}
}
