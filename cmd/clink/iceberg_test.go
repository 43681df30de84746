package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'iceberg', 'catalog_uri' = 'sqlite://` + catalogDB + `', 'warehouse' = '` + warehouse + `',
  'namespace' = 'sensors', 'table' = 'windows');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	id := submitJob(t, bin, coord, "--parallelism", "4", sqlFile)
	waitState(t, httpAddr, id, "FINISHED", time.Minute)
	s := scanIceberg(t, catalogDB, warehouse, "windows")
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
// sink's code) and scans the current snapshot of table sensors.<name>.
func scanIceberg(t *testing.T, catalogDB, warehouse, name string) icebergScan {
	t.Helper()
	var s icebergScan
	files, _ := filepath.Glob(filepath.Join(warehouse, "*", name, "data", "*.parquet"))
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
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sensors", name})
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
