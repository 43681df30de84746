package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
	"github.com/clink-dev/clink/connectors/postgres/pgtest"
)

// The sensor story under SIGKILL with the PostgreSQL sink exactly once:
// the workload streams through the dev broker (its own process) while
// `clink run --checkpoint-dir` writing into a private PostgreSQL server
// with prepared transactions is killed with SIGKILL six times at random
// moments and restarted at parallelism 1 to 3 (each restore commits what
// the checkpoint lists and rolls back what the killed run prepared after
// it, also for subtasks a lower parallelism no longer has). The table is
// then read back with psql as JSON lines and the independent verifier
// must find every window exactly once; no (sensor_id, window_start) may
// repeat (the table has no key that would refuse a duplicate). The kill
// points come from a seed printed in the log; CLINK_KILL_SEED repeats a
// run. Without PostgreSQL the test is skipped (CLINK_REQUIRE_POSTGRES=1
// fails it).
func TestPostgresSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("streams for about 10 s")
	}
	began := time.Now()
	srv := pgtest.Start(t)
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
	rng := rand.New(rand.NewPCG(seed, 0x9057))

	srv.CreateDatabase(t, "sensors")
	srv.Exec(t, "sensors", `CREATE TABLE sensor_windows (sensor_id text, window_start bigint, window_end bigint,
		readings bigint, avg_temp double precision, min_temp double precision, max_temp double precision)`)
	addr := serveBroker(t, bin, "--topic", "readings:4")
	dir := t.TempDir()
	ckdir := filepath.Join(dir, "checkpoints")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	// The connection string (with the password) comes from the
	// environment, not the SQL.
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temperature DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'postgres', 'url' = 'env://CLINK_TEST_PG_URL', 'delivery_guarantee' = 'exactly_once');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CLINK_TEST_PG_URL="+srv.URL("sensors"))

	// The workload streams at about 1000 readings per second for about
	// 8 s; then one record per partition far in the future moves every
	// partition's watermark past the last window.
	c := workload.Default()
	c.Ticks = 1000
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()

	logs := &syncBuffer{}
	start := func(par int) *exec.Cmd {
		cmd := exec.Command(bin, "run", "--quiet", "--parallelism", strconv.Itoa(par), "--checkpoint-dir", ckdir, "--checkpoint-interval-ms", "100", sqlFile)
		cmd.Env = env
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	const kills = 6
	for i := range kills {
		kill := time.Duration(150+rng.IntN(1400)) * time.Millisecond
		par := 1 + rng.IntN(3)
		cmd := start(par)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("clink run exited on its own: %v\n%s", err, logs.String())
		case <-time.After(kill):
		}
		cmd.Process.Kill() // SIGKILL
		<-exited
		state, _ := srv.Psql("sensors", "-At", "-F", " ", "-c", "SELECT (SELECT count(*) FROM sensor_windows), (SELECT count(*) FROM pg_prepared_xacts)")
		f := strings.Fields(state)
		if len(f) != 2 {
			f = []string{"?", "?"}
		}
		t.Logf("kill %d after %s at parallelism %d: %s windows committed, %s transactions left prepared (%s)", i+1, kill, par, f[0], f[1], time.Since(began).Round(time.Millisecond))
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// The last run sees every window close; it is killed too once the
	// committed table holds them all.
	out := filepath.Join(dir, "table.jsonl")
	readBack := func() {
		t.Helper()
		rows, err := srv.Psql("sensors", "-At", "-c", "SELECT row_to_json(w) FROM sensor_windows w ORDER BY sensor_id, window_start")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	t.Logf("workload produced (%s)", time.Since(began).Round(time.Millisecond))
	cmd := start(2)
	defer cmd.Process.Kill()
	report := verifyUntilPass(verify, vargs, func() { readBack() }, 60*time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.HasPrefix(report, "PASS") {
		t.Fatalf("verify after %d SIGKILLs:\n%s\nclink stderr:\n%s", kills, report, logs.String())
	}
	// Exactly once: a final check after the job is gone (nothing
	// appeared twice, nothing partial is visible).
	readBack()
	o, err := exec.Command(verify, vargs...).CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, o)
	}
	t.Logf("postgres sink: %s", strings.TrimSpace(string(o)))
	dups, err := srv.Psql("sensors", "-At", "-c", "SELECT sensor_id, window_start, count(*) FROM sensor_windows GROUP BY 1, 2 HAVING count(*) > 1")
	if err != nil || strings.TrimSpace(dups) != "" {
		t.Fatalf("duplicate windows (%v):\n%s", err, dups)
	}
	n, _ := srv.Psql("sensors", "-At", "-c", "SELECT count(*) FROM sensor_windows")
	t.Logf("%s windows in the table, none twice (%s)", strings.TrimSpace(n), time.Since(began).Round(time.Millisecond))
	restores := strings.Count(logs.String(), "restore point: checkpoint")
	if restores < 3 {
		t.Errorf("only %d of %d runs restored from a checkpoint:\n%s", restores, kills+1, logs.String())
	}
}
