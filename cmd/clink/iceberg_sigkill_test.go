package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ib "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"

	"github.com/clink-dev/clink/bench/workload"
)

// The sensor story under SIGKILL with the Iceberg sink exactly once: the
// workload streams through the dev broker (its own process) while `clink
// run --checkpoint-dir` writes the windows
// into an Iceberg table (SQLite catalog, local warehouse) and is killed
// with SIGKILL six times at random moments and restarted at parallelism 1
// to 3. Each restore commits what its checkpoint lists unless a snapshot
// has it already, and deletes the data files a killed run wrote after it.
// The table is then scanned with iceberg-go, its rows turned into JSON
// lines, and the independent verifier must find every window exactly
// once; every snapshot must carry a checkpoint id, and no (checkpoint,
// subtask) may have two. The kill points come from a seed printed in the
// log; CLINK_KILL_SEED repeats a run.
func TestIcebergSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("streams for about 10 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	began := time.Now()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CLINK_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kill seed %d (CLINK_KILL_SEED=%d repeats these kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x1ce6))

	addr := serveBroker(t, bin, "--topic", "readings:4")
	dir := t.TempDir()
	ckdir := filepath.Join(dir, "checkpoints")
	catalogDB := filepath.Join(dir, "catalog.db")
	warehouse := filepath.Join(dir, "warehouse")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temperature DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'iceberg', 'catalog_uri' = 'sqlite://` + catalogDB + `', 'warehouse' = '` + warehouse + `',
  'namespace' = 'sensors', 'table' = 'windows');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}

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
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	scan := func() icebergScan { return scanIceberg(t, catalogDB, warehouse) }
	const kills = 6
	for i := range kills {
		kill := time.Duration(300+rng.IntN(1400)) * time.Millisecond
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
		s := scan()
		t.Logf("kill %d after %s at parallelism %d: %d windows in %d snapshots, %d data files (%s)", i+1, kill, par, s.rows, len(s.snapshots), s.files, time.Since(began).Round(time.Millisecond))
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// The last run sees every window close; it is killed too once the
	// table holds them all.
	out := filepath.Join(dir, "table.jsonl")
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	readBack := func() icebergScan {
		t.Helper()
		s := scan()
		if err := os.WriteFile(out, s.json, 0o644); err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Logf("workload produced (%s)", time.Since(began).Round(time.Millisecond))
	cmd := start(2)
	defer cmd.Process.Kill()
	report := verifyUntilPass(verify, vargs, func() { readBack() }, 60*time.Second)
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.HasPrefix(report, "PASS") {
		t.Fatalf("verify after %d SIGKILLs:\n%s\nclink stderr:\n%s", kills, report, logs.String())
	}
	// Exactly once: a final check after the job is gone.
	final := readBack()
	o, err := exec.Command(verify, vargs...).CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, o)
	}
	t.Logf("iceberg sink: %s", strings.TrimSpace(string(o)))
	// One snapshot per checkpoint and sink subtask, each tagged.
	seen := map[string]bool{}
	for _, p := range final.snapshots {
		id, k := p["clink.checkpoint-id"], p["clink.subtask"]
		if id == "" || k == "" || p["clink.sink"] != "sensor_windows" {
			t.Errorf("snapshot summary without the sink's properties: %v", p)
		}
		if seen[id+"/"+k] {
			t.Errorf("checkpoint %s of subtask %s committed twice", id, k)
		}
		seen[id+"/"+k] = true
	}
	t.Logf("%d windows in %d snapshots (one per checkpoint and subtask), %d data files (%s)", final.rows, len(final.snapshots), final.files, time.Since(began).Round(time.Millisecond))
	restores := strings.Count(logs.String(), "restore point: checkpoint")
	if restores < 3 {
		t.Errorf("only %d of %d runs restored from a checkpoint:\n%s", restores, kills+1, logs.String())
	}
}

// The sensor pipeline on a Coordinator and two Worker processes at
// parallelism 4: the four sink subtasks, two per process, commit to one
// Iceberg table concurrently (conflicting commits retried on the
// refreshed table), and the table holds every window exactly once.
func TestIcebergCluster(t *testing.T) {
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	dir := t.TempDir()
	in := filepath.Join(dir, "readings.jsonl")
	c := workload.Default()
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	c.Emit(func(s, tick int) {
		f.Write(workload.AppendRecord(nil, c.SensorID(s), c.TS(tick), workload.Tenths(s, tick)))
	})
	f.Close()
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(dir, "ck"), "--checkpoint-interval", "50ms")
	for _, id := range []string{"w1", "w2"} {
		startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", id)
	}
	catalogDB := filepath.Join(dir, "catalog.db")
	warehouse := filepath.Join(dir, "warehouse")
	sqlFile := filepath.Join(dir, "sensors.sql")
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temperature DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'iceberg', 'catalog_uri' = 'sqlite://` + catalogDB + `', 'warehouse' = '` + warehouse + `',
  'namespace' = 'sensors', 'table' = 'windows');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	id := submitJob(t, bin, coord, "--parallelism", "4", sqlFile)
	waitState(t, httpAddr, id, "FINISHED", time.Minute)
	s := scanIceberg(t, catalogDB, warehouse)
	out := filepath.Join(dir, "table.jsonl")
	if err := os.WriteFile(out, s.json, 0o644); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(verify, "-in", out).CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s\n%s", err, o, log.String())
	}
	subtasks := map[string]bool{}
	seen := map[string]bool{}
	for _, p := range s.snapshots {
		k := p["clink.checkpoint-id"] + "/" + p["clink.subtask"]
		if seen[k] {
			t.Errorf("checkpoint/subtask %s committed twice", k)
		}
		seen[k] = true
		subtasks[p["clink.subtask"]] = true
	}
	if len(subtasks) != 4 {
		t.Errorf("snapshots of subtasks %v, want all 4", subtasks)
	}
	t.Logf("%d windows in %d snapshots of %d subtasks", s.rows, len(s.snapshots), len(subtasks))
}

// icebergScan is what the test reads back from the table.
type icebergScan struct {
	json      []byte          // the current snapshot's rows, JSON lines
	rows      int             // how many
	snapshots []ib.Properties // every snapshot's summary
	files     int             // data files in the warehouse
}

// scanIceberg opens the SQLite catalog with iceberg-go alone (not the
// sink's code) and scans the table's current snapshot.
func scanIceberg(t *testing.T, catalogDB, warehouse string) icebergScan {
	t.Helper()
	var s icebergScan
	files, _ := filepath.Glob(filepath.Join(warehouse, "*", "*", "data", "*.parquet"))
	s.files = len(files)
	if _, err := os.Stat(catalogDB); err != nil {
		return s
	}
	db, err := sql.Open("sqlite", "file:"+catalogDB+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("clink", db, sqlcat.SQLite, ib.Properties{"warehouse": "file://" + warehouse})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sensors", "windows"})
	if err != nil {
		return s // not created yet
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil {
			s.snapshots = append(s.snapshots, snap.Summary.Properties)
		}
	}
	if tbl.CurrentSnapshot() == nil {
		return s
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scanning the table: %v", err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var lines []string
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				row[f.Name] = icebergValue(rec.Column(c), i)
			}
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
	}
	sort.Strings(lines)
	s.rows = len(lines)
	if len(lines) > 0 {
		s.json = []byte(strings.Join(lines, "\n") + "\n")
	}
	return s
}

func icebergValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	}
	return fmt.Sprint(a.ValueStr(i))
}
