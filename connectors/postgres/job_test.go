package postgres_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/postgres"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// plan compiles and plans script at the given parallelism.
func plan(script string, parallelism int, mem memory.Allocator) (*planner.Job, error) {
	reg := builtin.Registry()
	p, err := sql.Compile(script, reg)
	if err != nil {
		return nil, err
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 7, Linger: 5 * time.Millisecond, Mem: mem, Stdout: os.Stdout, Stderr: os.Stderr, Parallelism: parallelism}
	return planner.BuildParallel(p, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, parallelism)
}

type window struct {
	n           int64
	sum, lo, hi float64
}

// readings writes sensor readings every 250 ms over three minutes (some
// skipped) to path as JSON lines, and returns their 10-second windows
// (key sensor|window_start) computed here.
func readings(t *testing.T, path string) map[string]*window {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC).UnixMilli()
	sensors := []string{"s-1", "s-2", "s-3", "s-4", "s-5", "späti \"6\""}
	want := map[string]*window{}
	var b strings.Builder
	for tick := 0; tick < 720; tick++ {
		for _, s := range sensors {
			if rng.IntN(10) == 0 {
				continue
			}
			ts := base + int64(tick)*250 + int64(rng.IntN(250))
			temp := math.Round((15+10*rng.Float64())*100) / 100
			fmt.Fprintf(&b, "{\"sensor\":%q,\"ts\":%d,\"temp\":%v}\n", s, ts, temp)
			k := s + "|" + strconv.FormatInt(ts-ts%10000, 10)
			w := want[k]
			if w == nil {
				w = &window{lo: temp, hi: temp}
				want[k] = w
			}
			w.n++
			w.sum += temp
			w.lo, w.hi = min(w.lo, temp), max(w.hi, temp)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// checkpointed turns checkpoints on for j, every few milliseconds.
func checkpointed(t *testing.T, j *planner.Job, mem memory.Allocator) {
	t.Helper()
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Checkpoint = &engine.CheckpointConfig{Store: store, Interval: 5 * time.Millisecond, Job: "test", Mem: mem}
}

// run runs a job with checkpoints.
func run(t *testing.T, j *planner.Job, mem memory.Allocator) []*engine.Stats {
	t.Helper()
	if j.Checkpoint == nil {
		checkpointed(t, j, mem)
	}
	var checkpoints atomic.Int64
	j.Checkpoint.OnComplete = func(uint64) { checkpoints.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stats, err := j.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d checkpoints", checkpoints.Load())
	return stats
}

// A windowed aggregate through the engine into PostgreSQL at parallelism
// 1 and 2, exactly once and at least once: the table holds every window
// once, equal to the recomputation.
func TestJobSensorWindows(t *testing.T) {
	srv, db, url := postgres.SharedDatabase(t)
	in := filepath.Join(t.TempDir(), "readings.jsonl")
	want := readings(t, in)
	t.Setenv("CLINK_TEST_PG_URL", url)
	conn := srv.Connect(t, db)
	for _, tc := range []struct {
		par       int
		guarantee string
	}{{1, "exactly_once"}, {2, "exactly_once"}, {2, "at_least_once"}} {
		t.Run(fmt.Sprintf("parallelism=%d,%s", tc.par, tc.guarantee), func(t *testing.T) {
			table := fmt.Sprintf("w_%d_%s", tc.par, tc.guarantee)
			srv.Exec(t, db, `CREATE TABLE `+table+` (sensor text, window_start bigint, window_end timestamptz,
				n bigint, avg_temp double precision, min_temp double precision, max_temp double precision, PRIMARY KEY (sensor, window_start))`)
			script := `
CREATE TABLE readings (sensor STRING, ts BIGINT, temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts');
CREATE TABLE windows (sensor STRING, window_start BIGINT, window_end TIMESTAMP(3),
  n BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'postgres', 'url' = 'env://CLINK_TEST_PG_URL', 'table' = '` + table + `',
  'delivery_guarantee' = '` + tc.guarantee + `', 'batch_rows' = '7');
INSERT INTO windows
SELECT sensor, window_start, CAST(window_end AS TIMESTAMP(3)), COUNT(*), AVG(temp), MIN(temp), MAX(temp)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor`
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			j, err := plan(script, tc.par, mem)
			if err != nil {
				t.Fatal(err)
			}
			checkpointed(t, j, mem)
			wantG := "EXACTLY_ONCE"
			if tc.guarantee != "exactly_once" {
				wantG = "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'windows')"
			}
			if g := j.Guarantee(); g != wantG {
				t.Errorf("guarantee %s", g)
			}
			run(t, j, mem)
			var left int
			if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_prepared_xacts").Scan(&left); err != nil || left != 0 {
				t.Errorf("%d prepared transactions left (%v)", left, err)
			}
			rows, err := conn.Query(context.Background(), `SELECT sensor, window_start, (extract(epoch FROM window_end) * 1000)::bigint, n, avg_temp, min_temp, max_temp FROM `+table)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for rows.Next() {
				var sensor string
				var start, end, n int64
				var avg, lo, hi float64
				if err := rows.Scan(&sensor, &start, &end, &n, &avg, &lo, &hi); err != nil {
					t.Fatal(err)
				}
				w := want[sensor+"|"+strconv.FormatInt(start, 10)]
				if w == nil || end != start+10000 || n != w.n || lo != w.lo || hi != w.hi || math.Abs(avg-w.sum/float64(w.n)) > 1e-9 {
					t.Errorf("row %s %d %d %d %v %v %v", sensor, start, end, n, avg, lo, hi)
				}
				seen++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if seen != len(want) {
				t.Errorf("%d rows (the primary key forbids duplicates), want %d windows", seen, len(want))
			}
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// An unwindowed GROUP BY is a changelog; into an upsert sink keyed by
// PRIMARY KEY ... NOT ENFORCED it leaves one row per key with the final
// aggregates, exactly once and at least once.
func TestJobChangelogUpsert(t *testing.T) {
	srv, db, url := postgres.SharedDatabase(t)
	in := filepath.Join(t.TempDir(), "readings.jsonl")
	windows := readings(t, in)
	type total struct {
		n      int64
		lo, hi float64
	}
	want := map[string]*total{}
	for k, w := range windows {
		s := k[:strings.LastIndexByte(k, '|')]
		tt := want[s]
		if tt == nil {
			tt = &total{lo: w.lo, hi: w.hi}
			want[s] = tt
		}
		tt.n += w.n
		tt.lo, tt.hi = min(tt.lo, w.lo), max(tt.hi, w.hi)
	}
	t.Setenv("CLINK_TEST_PG_URL", url)
	conn := srv.Connect(t, db)
	for _, guarantee := range []string{"exactly_once", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			table := "totals_" + guarantee
			srv.Exec(t, db, `CREATE TABLE `+table+` (sensor text PRIMARY KEY, n bigint, lo double precision, hi double precision);
				INSERT INTO `+table+` VALUES ('s-1', -1, -1, -1)`)
			script := `
CREATE TABLE readings (sensor STRING, ts BIGINT, temp DOUBLE) WITH ('connector' = 'file', 'path' = '` + in + `');
CREATE TABLE totals (sensor STRING, n BIGINT, lo DOUBLE, hi DOUBLE, PRIMARY KEY (sensor) NOT ENFORCED) WITH (
  'connector' = 'postgres', 'url' = 'env://CLINK_TEST_PG_URL', 'table' = '` + table + `', 'mode' = 'upsert',
  'delivery_guarantee' = '` + guarantee + `', 'batch_rows' = '3');
INSERT INTO totals SELECT sensor, COUNT(*), MIN(temp), MAX(temp) FROM readings GROUP BY sensor`
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			j, err := plan(script, 2, mem)
			if err != nil {
				t.Fatal(err)
			}
			run(t, j, mem)
			rows, err := conn.Query(context.Background(), "SELECT sensor, n, lo, hi FROM "+table)
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for rows.Next() {
				var s string
				var n int64
				var lo, hi float64
				if err := rows.Scan(&s, &n, &lo, &hi); err != nil {
					t.Fatal(err)
				}
				if w := want[s]; w == nil || w.n != n || w.lo != lo || w.hi != hi {
					t.Errorf("row %s %d %v %v, want %+v", s, n, lo, hi, w)
				}
				got++
			}
			if got != len(want) {
				t.Errorf("%d rows, want %d", got, len(want))
			}
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// Mistakes are refused when the job is planned, naming the table (and
// where the SQL layer knows it, the option's position).
func TestJobRefusals(t *testing.T) {
	in := filepath.Join(t.TempDir(), "readings.jsonl")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ddl := `CREATE TABLE readings (sensor STRING, ts BIGINT, temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts');
CREATE TABLE out (sensor STRING, n BIGINT) WITH ('connector' = 'postgres', 'port' = '1'%s);
`
	for _, tc := range []struct{ opts, query, want string }{
		{", 'mode' = 'merge'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", "table out: option 'mode': 'merge' is not one of 'append', 'upsert'"},
		{", 'sink.delivery-guarantee' = 'exactly-twice'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", "'exactly-twice' is not one of"},
		{", 'batch_rows' = 'many'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", "option 'batch_rows': 'many' is not an integer"},
		{"", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", "table out cannot consume the updates of this query: the postgres sink applies updates only with 'mode' = 'upsert' and a primary key"},
		{", 'mode' = 'upsert'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", "applies updates only with 'mode' = 'upsert' and a primary key"},
		{", 'mode' = 'upsert'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor", "'mode' = 'upsert' needs a primary key"},
		{", 'primary_key' = 'nope', 'mode' = 'upsert'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor", "option 'primary_key': 'nope' is not a column of out"},
		{", 'connect_timeout_ms' = '2000'", "INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor", "postgres sink 'out': cannot connect to 127.0.0.1:1/postgres as user postgres"},
	} {
		_, err := plan(fmt.Sprintf(ddl, tc.opts)+tc.query, 1, memory.NewGoAllocator())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.opts, err, tc.want)
		}
	}
}
