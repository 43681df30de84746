package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var flightSQLRE = regexp.MustCompile(`flight sql listening on (\S+)`)

// TestSQL: clink sql -e against a Coordinator's Flight SQL endpoint, in
// both output forms and interactively; bad SQL exits 1 naming the line
// and column; clink state-query --job reads a job's state through it.
func TestSQL(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(dir, "ck"), "--flight-sql-addr", "127.0.0.1:0",
		"--checkpoint-interval", "50ms")
	var sqlAddr string
	for deadline := time.Now().Add(10 * time.Second); sqlAddr == ""; time.Sleep(20 * time.Millisecond) {
		if m := flightSQLRE.FindStringSubmatch(log.String()); m != nil {
			sqlAddr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no Flight SQL address logged:\n%s", log.String())
		}
	}
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", "w1")
	in := filepath.Join(dir, "in.jsonl")
	var rows strings.Builder
	for i := range 100 {
		fmt.Fprintf(&rows, `{"k":"k%d","ts":%d}`+"\n", i%3, i*100)
	}
	os.WriteFile(in, []byte(rows.String()), 0o644)
	file := filepath.Join(dir, "job.sql")
	os.WriteFile(file, []byte(`CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector' = 'file', 'path' = '`+in+`', 'event_time_column' = 'ts');
CREATE TABLE o (k STRING, n BIGINT) WITH ('connector' = 'file', 'path' = '`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;`), 0o644)
	id := submitJob(t, bin, coord, file)
	waitState(t, httpAddr, id, "FINISHED", time.Minute)

	got := clink(t, bin, "", "sql", "--coordinator", sqlAddr, "--output", "json", "-e", "SELECT id, status FROM jobs; SELECT id, slots FROM workers")
	if want := fmt.Sprintf(`{"id":%s,"status":"FINISHED"}`+"\n"+`{"id":"w1","slots":2}`+"\n", id); got != want {
		t.Errorf("json: got %q, want %q", got, want)
	}
	got = clink(t, bin, "", "sql", "--coordinator", sqlAddr, "-e", "SELECT id, address, slots FROM workers")
	if lines := strings.Split(got, "\n"); len(lines) != 5 || !strings.HasPrefix(lines[0], "id  address") ||
		!strings.HasPrefix(lines[1], "--  ---") || !strings.HasPrefix(lines[2], "w1  127.0.0.1:") || lines[3] != "(1 row)" {
		t.Errorf("table: %q", got)
	}
	got = clink(t, bin, "SELECT COUNT(*) AS n\n  FROM workers;\nSELECT name FROM jobs;\n", "sql", "--coordinator", sqlAddr, "--output", "json")
	if got != `{"n":1}`+"\n"+`{"name":"job"}`+"\n" {
		t.Errorf("interactive: %q", got)
	}
	_, stderr, code := runCLI(t, bin, "sql", "--coordinator", sqlAddr, "-e", "SELECT nope FROM jobs")
	if code != 1 || !strings.Contains(stderr, "line 1:8: column nope does not exist\nSELECT nope FROM jobs\n       ^") {
		t.Errorf("bad SQL: exit %d, %q", code, stderr)
	}

	// The finished job's state is its final checkpoint's: the source
	// file offsets, no open window.
	got = clink(t, bin, "", "state-query", "--job", id, "--coordinator", sqlAddr, "--sql", "SELECT slot, COUNT(*) AS n FROM state WHERE slot = 'file_offsets' GROUP BY slot")
	if got != `{"slot":"file_offsets","n":1}`+"\n" {
		t.Errorf("state-query --job: %q", got)
	}
	got = clink(t, bin, "", "sql", "--coordinator", sqlAddr, "--output", "json", "-e", "SELECT COUNT(*) AS n FROM job_"+id+".state WHERE slot = 'file_offsets'")
	if got != `{"n":1}`+"\n" {
		t.Errorf("job_%s.state: %q", id, got)
	}
	// The Coordinator's HTTP API (8081) and Flight (6123) addresses lead
	// to its Flight SQL endpoint too, as the tutorial gives them.
	for _, a := range []string{httpAddr, coord} {
		got = clink(t, bin, "", "state-query", "--job="+id, "--coordinator="+a, "--sql", "SELECT slot, COUNT(*) AS n FROM state WHERE slot = 'file_offsets' GROUP BY slot")
		if got != `{"slot":"file_offsets","n":1}`+"\n" {
			t.Errorf("state-query --coordinator=%s: %q", a, got)
		}
	}
}
