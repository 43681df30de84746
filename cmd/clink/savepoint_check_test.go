package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSavepointCheckCases takes a checkpoint of a keyed window aggregate
// and asks `clink savepoint check` about edited scripts, one subtest per
// kind of change (docs/checkpoints.md#changing-a-job): the STATE column of
// each operator and the exit code.
func TestSavepointCheckCases(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	in2 := filepath.Join(dir, "in2.jsonl")
	var rows strings.Builder
	for i := range 40 {
		fmt.Fprintf(&rows, "{\"sensor\":\"s%d\",\"x\":%d,\"ts\":%d}\n", i%3, i, 1000+i*700)
	}
	os.WriteFile(in, []byte(rows.String()), 0o644)
	os.WriteFile(in2, []byte(rows.String()), 0o644)
	src := func(lag, extra string) string {
		return "CREATE TABLE r (sensor STRING, x BIGINT, ts BIGINT) WITH ('connector'='file','path'='" + in + "','event_time_column'='ts','watermark_lag_ms'='" + lag + "'" + extra + ");\n"
	}
	sink := func(name, extra string) string {
		return "CREATE TABLE " + name + " (sensor STRING, window_start BIGINT, c BIGINT, s BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, name+".jsonl") + "'" + extra + ");\n"
	}
	agg := "INSERT INTO o SELECT sensor, window_start, COUNT(*), SUM(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n"
	base := src("1000", "") + sink("o", "") + agg
	ck := filepath.Join(dir, "ck")
	if b, err := exec.Command(bin, "run", "--checkpoint-dir", ck, "-e", base).CombinedOutput(); err != nil {
		t.Fatalf("base run: %v\n%s", err, b)
	}
	// A script with a source read by the first INSERT only, and a second
	// statement after it: the removed-sink and removed-aggregate cases
	// start from a checkpoint of a job with two sinks.
	two := src("1000", "") + sink("o", "") + "CREATE TABLE p (sensor STRING, x BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "p.jsonl") + "');\n" +
		agg + "INSERT INTO p SELECT sensor, x FROM r;\n"
	ck2 := filepath.Join(dir, "ck2")
	if b, err := exec.Command(bin, "run", "--checkpoint-dir", ck2, "-e", two).CombinedOutput(); err != nil {
		t.Fatalf("two-sink run: %v\n%s", err, b)
	}
	// The aggregate last, so that removing it renumbers nothing.
	pFirst := src("1000", "") + sink("o", "") + "CREATE TABLE p (sensor STRING, x BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "p.jsonl") + "');\n" +
		"INSERT INTO p SELECT sensor, x FROM r;\n"
	ck3 := filepath.Join(dir, "ck3")
	if b, err := exec.Command(bin, "run", "--checkpoint-dir", ck3, "-e", pFirst+agg).CombinedOutput(); err != nil {
		t.Fatalf("aggregate-last run: %v\n%s", err, b)
	}
	check := func(t *testing.T, ckdir, sql string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{"savepoint", "check", "--checkpoint-dir", ckdir}, args...), "-e", sql)...)
		b, err := cmd.CombinedOutput()
		code := 0
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), code
	}
	// state returns each operator's STATE and WHY columns by name.
	state := func(out string) map[string]string {
		m := map[string]string{}
		header := true
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == "OPERATOR" {
				header = false
				continue
			}
			if header || len(f) < 3 || strings.HasPrefix(l, "restore:") {
				continue
			}
			m[f[0]] = strings.Join(f[2:], " ")
		}
		return m
	}
	type want struct {
		op, state string
	}
	cases := []struct {
		name  string
		ck    string
		sql   string
		allow bool
		code  int
		want  []want
	}{
		{"options", ck, src("2000", ",'on_error'='skip'") + sink("o", ",'rolling_max_bytes'='64MB'") + agg, false, 0,
			[]want{{"source_r", "restored"}, {"window_aggregate", "restored"}, {"sink_o", "restored"}}},
		{"projection and filter", ck, src("1000", "") + "CREATE TABLE o (sensor STRING, window_start BIGINT, c BIGINT, s BIGINT, u STRING) WITH ('connector'='file','path'='" + filepath.Join(dir, "o.jsonl") + "');\n" +
			"INSERT INTO o SELECT sensor, window_start, COUNT(*), SUM(x), UPPER(sensor) FROM r WHERE x >= 0 GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n", false, 0,
			[]want{{"source_r", "restored"}, {"window_aggregate", "restored"}, {"sink_o", "restored"}}},
		{"projection below the aggregate", ck, src("1000", "") + sink("o", "") +
			"INSERT INTO o SELECT sensor, window_start, COUNT(*), SUM(x) FROM (SELECT ts, x + 0 AS y, x, sensor FROM r WHERE x >= 0) GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n", false, 0,
			[]want{{"source_r", "restored"}, {"window_aggregate", "restored"}, {"sink_o", "restored"}}},
		{"added sink", ck, base + "CREATE TABLE p (sensor STRING, x BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "p2.jsonl") + "');\nINSERT INTO p SELECT sensor, x FROM r;\n", false, 0,
			[]want{{"window_aggregate", "restored"}, {"sink_o", "restored"}, {"sink_p", "new"}}},
		{"removed sink", ck2, base, false, 1,
			[]want{{"window_aggregate", "restored"}, {"sink_p", "dropped (refused)"}}},
		{"removed sink allowed", ck2, base, true, 0,
			[]want{{"window_aggregate", "restored"}, {"sink_p", "dropped"}}},
		{"new source", ck, base + "CREATE TABLE r2 (sensor STRING, x BIGINT, ts BIGINT) WITH ('connector'='file','path'='" + in2 + "');\n" +
			"CREATE TABLE p (sensor STRING, x BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "p3.jsonl") + "');\nINSERT INTO p SELECT sensor, x FROM r2;\n", false, 0,
			[]want{{"window_aggregate", "restored"}, {"source_r2", "new starts per its startup options"}, {"sink_p", "new"}}},
		{"removed aggregate", ck3, pFirst, false, 1,
			[]want{{"window_aggregate", "dropped (refused)"}}},
		{"removed aggregate allowed", ck3, pFirst, true, 0,
			[]want{{"window_aggregate", "dropped"}}},
		{"new aggregate", ck, src("1000", "") + "CREATE TABLE o (sensor STRING, window_start BIGINT, c BIGINT, s BIGINT, m BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "o.jsonl") + "');\n" +
			"INSERT INTO o SELECT sensor, window_start, COUNT(*), SUM(x), MAX(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n", true, 1,
			[]want{{"window_aggregate", "incompatible (refused) the aggregates changed from [COUNT(*), SUM(x BIGINT)] to [COUNT(*), SUM(x BIGINT), MAX(x BIGINT)]"}}},
		{"group key", ck, src("1000", "") + "CREATE TABLE o (sensor BIGINT, window_start BIGINT, c BIGINT, s BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "o.jsonl") + "');\n" +
			"INSERT INTO o SELECT x, window_start, COUNT(*), SUM(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), x;\n", true, 1,
			[]want{{"window_aggregate", "incompatible (refused)"}}},
		{"window size", ck, src("1000", "") + sink("o", "") + strings.Replace(agg, "'10'", "'20'", 1), true, 1,
			[]want{{"window_aggregate", "incompatible (refused) the window changed from TUMBLE(size 10000 ms"}}},
		{"sink guarantee", ck, src("1000", "") + sink("o", ",'delivery_guarantee'='at_least_once'") + agg, true, 1,
			[]want{{"window_aggregate", "restored"}, {"sink_o", "incompatible (refused) the delivery changed from exactly_once (staged per checkpoint) to at_least_once (written directly)"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			if c.allow {
				args = append(args, "--allow-non-restored-state")
			}
			out, code := check(t, c.ck, c.sql, args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out)
			}
			got := state(out)
			for _, w := range c.want {
				if !strings.HasPrefix(got[w.op], w.state) {
					t.Errorf("%s: %q, want %q\n%s", w.op, got[w.op], w.state, out)
				}
			}
		})
	}
}

// TestSavepointCheckAgreesWithRun restores the checkpoint with `clink run
// --from-savepoint` into a script that the report refuses and one that it
// accepts: run refuses the first naming the operator, runs the second.
func TestSavepointCheckAgreesWithRun(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"sensor\":\"a\",\"x\":1,\"ts\":1000}\n{\"sensor\":\"b\",\"x\":2,\"ts\":12000}\n"), 0o644)
	src := "CREATE TABLE r (sensor STRING, x BIGINT, ts BIGINT) WITH ('connector'='file','path'='" + in + "','event_time_column'='ts','watermark_lag_ms'='1000');\n"
	base := src + "CREATE TABLE o (sensor STRING, window_start BIGINT, s BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "o.jsonl") + "');\n" +
		"INSERT INTO o SELECT sensor, window_start, SUM(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n"
	ck := filepath.Join(dir, "ck")
	if b, err := exec.Command(bin, "run", "--checkpoint-dir", ck, "-e", base).CombinedOutput(); err != nil {
		t.Fatalf("base run: %v\n%s", err, b)
	}
	sp := filepath.Join(ck, "chk-1")
	refused := src + "CREATE TABLE o (sensor STRING, window_start BIGINT, s BIGINT, m BIGINT) WITH ('connector'='file','path'='" + filepath.Join(dir, "o2.jsonl") + "');\n" +
		"INSERT INTO o SELECT sensor, window_start, SUM(x), MAX(x) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor;\n"
	accepted := strings.Replace(base, "'1000'", "'2000'", 1)
	for _, c := range []struct {
		name, sql string
		ok        bool
	}{{"refused", refused, false}, {"accepted", accepted, true}} {
		t.Run(c.name, func(t *testing.T) {
			report, err := exec.Command(bin, "savepoint", "check", "--savepoint", sp, "-e", c.sql).CombinedOutput()
			if (err == nil) != c.ok {
				t.Fatalf("savepoint check: %v\n%s", err, report)
			}
			// The older spelling gives the same report.
			if old, _ := exec.Command(bin, "savepoint-check", "--savepoint", sp, "-e", c.sql).CombinedOutput(); string(old) != string(report) {
				t.Fatalf("savepoint-check printed\n%s\nsavepoint check printed\n%s", old, report)
			}
			b, err := exec.Command(bin, "run", "--checkpoint-dir", filepath.Join(dir, "ck-"+c.name), "--from-savepoint", sp, "-e", c.sql).CombinedOutput()
			if (err == nil) != c.ok {
				t.Fatalf("run --from-savepoint disagrees with the report: %v\n%s\nreport:\n%s", err, b, report)
			}
			if !c.ok && !strings.Contains(string(b), "window_aggregate: the aggregates changed from [SUM(x BIGINT)] to [SUM(x BIGINT), MAX(x BIGINT)] (incompatible)") {
				t.Fatalf("the refusal does not name the operator:\n%s", b)
			}
		})
	}
}
