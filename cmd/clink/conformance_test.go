package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/clink-dev/clink/bench/workload"
	"github.com/clink-dev/clink/connectors/conformance"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
	"github.com/clink-dev/clink/connectors/postgres/pgtest"
)

// The conformance suite (connectors/conformance) run against every
// exactly-once sink and the checkpointed sources: each is killed with
// SIGKILL at every two-phase point (the txn ledger's test hook), restored
// and rescaled, and the output read back with the system's own client is
// checked by the independent sensor verifier (examples/sensors/verify,
// which recomputes every window from the workload definition).

// sensorColumns are the sensor pipeline's input and output columns and its
// query (pipeline.sql's).
const (
	sensorColumns = "sensor_id STRING, ts BIGINT, temp_c DOUBLE"
	windowColumns = "sensor_id STRING, window_start BIGINT, window_end BIGINT, readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE"
	windowQuery   = "SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c) FROM input GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id"
)

// sensorCheck checks rows with the verifier against workload c.
func sensorCheck(t *testing.T, c workload.Config) func(rows []byte, partial bool) (string, bool) {
	verify := buildTool(t, "./examples/sensors/verify")
	dir := t.TempDir()
	n := 0
	return func(rows []byte, partial bool) (string, bool) {
		n++
		in := filepath.Join(dir, fmt.Sprintf("rows-%d.jsonl", n))
		if err := os.WriteFile(in, rows, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-in", in, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
		if partial {
			args = append(args, "-partial")
		}
		o, err := exec.Command(verify, args...).Output()
		return string(o), err == nil && bytes.HasPrefix(o, []byte("PASS"))
	}
}

// sensorRecords are c's readings keyed by sensor, each sensor in one of 4
// partitions in order, then one record per partition far in the future
// that moves every partition's watermark past the last window (its own
// window never closes).
func sensorRecords(c workload.Config) []conformance.Record {
	var recs []conformance.Record
	c.Emit(func(s, tick int) {
		id := c.SensorID(s)
		v := workload.AppendRecord(nil, id, c.TS(tick), workload.Tenths(s, tick))
		recs = append(recs, conformance.Record{Partition: int32(s % 4), Key: []byte(id), Value: bytes.TrimSuffix(v, []byte("\n"))})
	})
	end := c.TS(c.Ticks) + 24*3600*1000
	for p := range int32(4) {
		recs = append(recs, conformance.Record{Partition: p, Value: fmt.Appendf(nil, `{"sensor_id":"~end","ts":%d,"temp_c":0}`, end)})
	}
	return recs
}

// sinkEnv is the sink suite's environment: the sensor workload streamed
// at about 1000 readings a second for about 6 s into the tumbling-window
// query.
func sinkEnv(t *testing.T) conformance.Env {
	c := workload.Default()
	c.Ticks = 800
	return conformance.Env{Bin: build(t), Workload: conformance.Workload{
		Columns: sensorColumns, With: "'event_time_column' = 'ts', 'watermark_lag_ms' = '3000'",
		Partitions: 4, Records: sensorRecords(c), Rate: 1000,
		OutColumns: windowColumns, Query: windowQuery, Check: sensorCheck(t, c),
	}}
}

func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the conformance suite streams for about 10 s")
	}
}

func TestConformanceFileSink(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	conformance.RunSinks(t, sinkEnv(t), conformance.Sink{
		Name: "file",
		With: func(t *testing.T, table string) string {
			return fmt.Sprintf("'connector' = 'file', 'path' = '%s'", filepath.Join(dir, table))
		},
		Committed: func(t *testing.T, table string) []byte { return conformance.ReadFiles(t, filepath.Join(dir, table)) },
	})
}

func TestConformanceKafkaSink(t *testing.T) {
	skipShort(t)
	env := sinkEnv(t)
	addr := conformance.Broker(t, env.Bin, "out0:2")
	conformance.RunSinks(t, env, conformance.Sink{
		Name: "kafka",
		With: func(t *testing.T, table string) string {
			return fmt.Sprintf("'connector' = 'kafka', 'brokers' = '%s', 'topic' = '%s', 'key_column' = 'sensor_id', 'delivery_guarantee' = 'exactly_once'", addr, table)
		},
		Committed: func(t *testing.T, table string) []byte { return conformance.ReadCommitted(t, addr, table) },
	})
}

// The PostgreSQL sink with prepared transactions, read back with psql;
// no (sensor_id, window_start) may repeat (the table has no key that
// would refuse a duplicate). Without PostgreSQL it is skipped
// (CLINK_REQUIRE_POSTGRES=1 fails it).
func TestConformancePostgresSink(t *testing.T) {
	skipShort(t)
	srv := pgtest.Start(t)
	srv.CreateDatabase(t, "sensors")
	query := func(t *testing.T, sql string) string {
		t.Helper()
		out, err := srv.Psql("sensors", "-At", "-c", sql)
		if err != nil {
			t.Fatalf("psql: %v", err)
		}
		return out
	}
	conformance.RunSinks(t, sinkEnv(t), conformance.Sink{
		Name: "postgres",
		With: func(t *testing.T, table string) string {
			srv.Exec(t, "sensors", `CREATE TABLE `+table+` (sensor_id text, window_start bigint, window_end bigint,
				readings bigint, avg_temp double precision, min_temp double precision, max_temp double precision)`)
			// The connection string (with the password) comes from the
			// environment, not the SQL.
			return "'connector' = 'postgres', 'url' = 'env://CLINK_TEST_PG_URL', 'delivery_guarantee' = 'exactly_once'"
		},
		Env: []string{"CLINK_TEST_PG_URL=" + srv.URL("sensors")},
		Committed: func(t *testing.T, table string) []byte {
			return []byte(query(t, "SELECT row_to_json(w) FROM "+table+" w ORDER BY sensor_id, window_start"))
		},
		After: func(t *testing.T, table string) {
			if dups := query(t, "SELECT sensor_id, window_start, count(*) FROM "+table+" GROUP BY 1, 2 HAVING count(*) > 1"); strings.TrimSpace(dups) != "" {
				t.Errorf("duplicate windows:\n%s", dups)
			}
			t.Logf("%s windows, %s transactions left prepared (the last run's, for its recovery)",
				strings.TrimSpace(query(t, "SELECT count(*) FROM "+table)), strings.TrimSpace(query(t, "SELECT count(*) FROM pg_prepared_xacts")))
		},
	})
}

// The Parquet sink on the three object stores in one job (three INSERTs):
// s3:// (MinIO), gs:// (fake-gcs-server) and azure:// (Azurite), on
// 127.0.0.1. Each published prefix is listed with the store's own client
// and every object read as Parquet; nothing under it may be partial or
// staged.
func TestConformanceObjectStoreSink(t *testing.T) {
	skipShort(t)
	stores := []*ostest.Server{ostest.MinIO(t), ostest.FakeGCS(t), ostest.Azurite(t)}
	ctx := context.Background()
	var sinks []conformance.Sink
	for _, s := range stores {
		if err := s.Client.CreateBucket(ctx, "lake"); err != nil {
			t.Fatalf("%s: %v", s.Scheme, err)
		}
		sinks = append(sinks, conformance.Sink{
			Name: s.Scheme,
			// Small files: several per checkpoint now and then.
			With: func(t *testing.T, table string) string {
				return fmt.Sprintf("'connector' = 'filesystem', 'format' = 'parquet', 'path' = '%s', 'rolling_max_bytes' = '4KB', %s", s.URL("lake", "sensors/"+table), s.With())
			},
			Committed: func(t *testing.T, table string) []byte { return publishedJSON(t, s, "sensors/"+table+"/") },
			After: func(t *testing.T, table string) {
				pub, _ := s.Client.List(ctx, "lake", "sensors/"+table+"/")
				staged, err := s.Client.List(ctx, "lake", "sensors/_clink_staging/"+table+"/")
				if err != nil {
					t.Fatal(err)
				}
				// Staged files of the last run's checkpoints not yet
				// published stay for its recovery, outside the published
				// prefix.
				t.Logf("%s: %d files published, %d staged", s.Scheme, len(pub), len(staged))
			},
		})
	}
	conformance.RunSinks(t, sinkEnv(t), sinks...)
}

// The Iceberg sink (SQLite catalog, local warehouse), scanned with
// iceberg-go alone; every snapshot carries a checkpoint id, and no
// (checkpoint, subtask) has two.
func TestConformanceIcebergSink(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	catalogDB := filepath.Join(dir, "catalog.db")
	warehouse := filepath.Join(dir, "warehouse")
	conformance.RunSinks(t, sinkEnv(t), conformance.Sink{
		Name: "iceberg",
		With: func(t *testing.T, table string) string {
			return fmt.Sprintf("'connector' = 'iceberg', 'catalog_uri' = 'sqlite://%s', 'warehouse' = '%s', 'namespace' = 'sensors', 'table' = '%s'", catalogDB, warehouse, table)
		},
		Committed: func(t *testing.T, table string) []byte { return scanIceberg(t, catalogDB, warehouse, table).json },
		After: func(t *testing.T, table string) {
			s := scanIceberg(t, catalogDB, warehouse, table)
			seen := map[string]bool{}
			for _, p := range s.snapshots {
				id, k := p["clink.checkpoint-id"], p["clink.subtask"]
				if id == "" || k == "" || p["clink.sink"] != table {
					t.Errorf("snapshot summary without the sink's properties: %v", p)
				}
				if seen[id+"/"+k] {
					t.Errorf("checkpoint %s of subtask %s committed twice", id, k)
				}
				seen[id+"/"+k] = true
			}
			t.Logf("%d windows in %d snapshots (one per checkpoint and subtask), %d data files", s.rows, len(s.snapshots), s.files)
		},
	})
}

// sourceEnv runs the source suite with short checkpoint intervals, so
// that a bounded input spans several checkpoints.
func sourceEnv(t *testing.T) conformance.Env {
	return conformance.Env{Bin: build(t), Interval: 20 * time.Millisecond}
}

// The file source: the sensor workload in four files (four partitions).
func TestConformanceFileSource(t *testing.T) {
	skipShort(t)
	c := workload.Default()
	c.Ticks = 40000
	in := t.TempDir()
	files := make([]*bytes.Buffer, 4)
	for i := range files {
		files[i] = &bytes.Buffer{}
	}
	c.Emit(func(s, tick int) {
		files[s%4].Write(workload.AppendRecord(nil, c.SensorID(s), c.TS(tick), workload.Tenths(s, tick)))
	})
	for i, f := range files {
		if err := os.WriteFile(filepath.Join(in, fmt.Sprintf("readings-%d.jsonl", i)), f.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := sourceEnv(t)
	env.Interval = 10 * time.Millisecond // a checkpoint every few batches
	conformance.RunSource(t, env, conformance.Source{
		Name: "file", Columns: sensorColumns, Bounded: true,
		With: func(t *testing.T, _ bool) string {
			return fmt.Sprintf("'connector' = 'file', 'path' = '%s', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000'", in)
		},
		OutColumns: windowColumns, Query: windowQuery, Check: sensorCheck(t, c),
	})
}

// The Kafka source: the sensor workload streamed into the dev broker.
func TestConformanceKafkaSource(t *testing.T) {
	skipShort(t)
	env := sourceEnv(t)
	env.Interval = 100 * time.Millisecond
	c := workload.Default()
	c.Ticks = 500
	addr := conformance.Broker(t, env.Bin, "readings:4")
	produced := make(chan error, 1)
	go func() { produced <- conformance.Stream(addr, "readings", sensorRecords(c), 2000) }()
	t.Cleanup(func() {
		if err := <-produced; err != nil {
			t.Errorf("streaming the workload: %v", err)
		}
	})
	conformance.RunSource(t, env, conformance.Source{
		Name: "kafka", Columns: sensorColumns,
		With: func(t *testing.T, _ bool) string {
			return fmt.Sprintf("'connector' = 'kafka', 'brokers' = '%s', 'topic' = 'readings', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000'", addr)
		},
		OutColumns: windowColumns, Query: windowQuery, Check: sensorCheck(t, c),
	})
}

// The Nexmark source (bids, bounded): windowed counts per channel against
// an uninterrupted run's.
func TestConformanceNexmarkSource(t *testing.T) {
	skipShort(t)
	conformance.RunSource(t, sourceEnv(t), conformance.Source{
		Name: "nexmark", Bounded: true,
		Columns: "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR",
		With: func(t *testing.T, _ bool) string {
			return "'connector' = 'nexmark', 'table' = 'bid', 'events' = '600000', 'seed' = '7', 'base_time_ms' = '1767225600000', 'event_time_column' = 'dateTime'"
		},
		OutColumns: "window_start BIGINT, channel VARCHAR, bids BIGINT, total BIGINT, top BIGINT",
		Query:      "SELECT window_start, channel, COUNT(*), SUM(price), MAX(price) FROM input GROUP BY TUMBLE(dateTime, INTERVAL '1' SECOND), channel",
	})
}

// buildTool compiles a package of this module (path relative to its root)
// into the test binary's temporary directory.
func buildTool(t *testing.T, pkg string) string {
	t.Helper()
	build(t)
	out := filepath.Join(filepath.Dir(binPath), filepath.Base(pkg))
	if _, err := os.Stat(out); err == nil {
		return out
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = "../.."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// streamWorkload produces c's readings to topic "readings" of the broker
// at addr at about rate per second (sensorRecords).
func streamWorkload(addr string, c workload.Config, rate int) error {
	return conformance.Stream(addr, "readings", sensorRecords(c), rate)
}

var finalPart = regexp.MustCompile(`^part-[0-9a-f]{8}-\d+-\d+-\d+\.parquet$`)

// publishedJSON lists s's published prefix with its own client, reads
// every object as Parquet (a partial or foreign object fails the test)
// and returns the rows as JSON lines.
func publishedJSON(t *testing.T, s *ostest.Server, prefix string) []byte {
	t.Helper()
	ctx := context.Background()
	keys, err := s.Client.List(ctx, "lake", prefix)
	if err != nil {
		t.Fatalf("%s: listing: %v", s.Scheme, err)
	}
	var out []byte
	for _, k := range keys {
		if !finalPart.MatchString(strings.TrimPrefix(k, prefix)) {
			t.Fatalf("%s: %s under the published prefix is not a final part file", s.Scheme, k)
		}
		data, err := s.Client.Get(ctx, "lake", k)
		if err != nil {
			t.Fatalf("%s: %s: %v", s.Scheme, k, err)
		}
		out, err = appendParquetJSON(out, data)
		if err != nil {
			t.Fatalf("%s: %s (%d bytes) is not a complete Parquet file: %v", s.Scheme, k, len(data), err)
		}
	}
	return out
}

// appendParquetJSON appends the rows of a Parquet file as JSON objects,
// one a line, keyed by column name.
func appendParquetJSON(out, data []byte) ([]byte, error) {
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return out, err
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return out, err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return out, err
	}
	defer tbl.Release()
	return appendTableJSON(out, tbl)
}

// appendTableJSON appends the rows of tbl as JSON objects, one a line.
func appendTableJSON(out []byte, tbl arrow.Table) ([]byte, error) {
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				row[f.Name] = jsonValue(rec.Column(c), i)
			}
			b, err := json.Marshal(row)
			if err != nil {
				return out, err
			}
			out = append(append(out, b...), '\n')
		}
	}
	return out, nil
}

func jsonValue(a arrow.Array, i int) any {
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
	return a.ValueStr(i)
}

// consumeCommitted reads every committed record of topic (isolation
// read_committed) until the topic is quiet, as JSON lines.
func consumeCommitted(t *testing.T, addr, topic string) []byte {
	return conformance.ReadCommitted(t, addr, topic)
}
