package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScanParallelism (#16): a table's scan.parallelism (Flink's name)
// reads it with fewer subtasks than the job's; the windows are those of
// parallelism 1, row for row. More than the job's, or on a connector that
// cannot split its reading, is refused with the reason.
func TestScanParallelism(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	rng := rand.New(rand.NewPCG(16, 4))
	for f := range 5 {
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, "{\"k\":\"s%d\",\"ts\":%d,\"v\":%d}\n", rng.IntN(7), f*1000+i*150, rng.IntN(100))
		}
		os.WriteFile(filepath.Join(in, fmt.Sprintf("part-%d.jsonl", f)), []byte(b.String()), 0o644)
	}
	query := func(scan string) string {
		opt := ""
		if scan != "" {
			opt = ", 'scan.parallelism' = '" + scan + "'"
		}
		return "CREATE TABLE t (k STRING, ts BIGINT, v BIGINT) WITH ('connector' = 'file', 'path' = '" + in + "', 'event_time_column' = 'ts', 'watermark_lag_ms' = '1000'" + opt + ");\n" +
			"SELECT k, window_start, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY TUMBLE(ts, INTERVAL '5' SECOND), k"
	}
	run := func(args ...string) (string, error) {
		b, err := exec.Command(bin, append([]string{"run"}, args...)...).CombinedOutput()
		return string(b), err
	}
	ref, err := run("-e", query(""))
	if err != nil || len(jsonLines(ref)) == 0 {
		t.Fatalf("parallelism 1: %v\n%s", err, ref)
	}
	for _, c := range []struct{ par, scan string }{{"3", "1"}, {"3", "2"}, {"4", "3"}, {"2", "2"}} {
		got, err := run("--parallelism", c.par, "-e", query(c.scan))
		if err != nil || !slices.Equal(jsonLines(got), jsonLines(ref)) {
			t.Errorf("parallelism %s, scan.parallelism %s: %v\n%s\nwant:\n%s", c.par, c.scan, err, got, ref)
		}
	}
	for _, c := range []struct{ par, scan, want string }{
		{"2", "3", "table t: scan.parallelism 3 is more than the job's parallelism 2"},
		{"2", "0", "table t: scan.parallelism must be a whole number >= 1"},
	} {
		got, err := run("--parallelism", c.par, "-e", query(c.scan))
		if err == nil || !strings.Contains(got, c.want) {
			t.Errorf("parallelism %s, scan.parallelism %s: %v\n%s\nwant the error %q", c.par, c.scan, err, got, c.want)
		}
	}
	got, err := run("-e", "CREATE TABLE b (x BIGINT) WITH ('connector' = 'nexmark', 'scan.parallelism' = '1'); SELECT * FROM b")
	if err == nil || !strings.Contains(got, "connector 'nexmark' has no option 'scan.parallelism'") {
		t.Errorf("nexmark: %v\n%s", err, got)
	}
}
