package clickhouse_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/clickhouse/chtest"
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
	sensor      string
	start       int64 // epoch ms
	n           int64
	sum, lo, hi float64
}

type engineJob = planner.Job

// readings writes readingLines to path.
func readings(t *testing.T, path string) map[[2]string]*window {
	lines, want := readingLines(t)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// readingLines are sensor readings every 250 ms over three minutes (some
// skipped), in time order, as JSON lines, and their 10-second windows,
// computed here.
func readingLines(t *testing.T) ([]string, map[[2]string]*window) {
	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC).UnixMilli()
	sensors := []string{"s-1", "s-2", "s-3", "s-4", "s-5", "späti \"6\""}
	want := map[[2]string]*window{}
	var lines []string
	for tick := 0; tick < 720; tick++ {
		for _, s := range sensors {
			if rng.IntN(10) == 0 {
				continue
			}
			ts := base + int64(tick)*250 + int64(rng.IntN(250))
			temp := math.Round((15+10*rng.Float64())*100) / 100
			lines = append(lines, fmt.Sprintf("{\"sensor\":%q,\"ts\":%q,\"temp\":%v}", s, time.UnixMilli(ts).UTC().Format("2006-01-02 15:04:05.000"), temp))
			start := ts - ts%10000
			k := [2]string{s, strconv.FormatInt(start, 10)}
			w := want[k]
			if w == nil {
				w = &window{sensor: s, start: start, lo: temp, hi: temp}
				want[k] = w
			}
			w.n++
			w.sum += temp
			w.lo, w.hi = min(w.lo, temp), max(w.hi, temp)
		}
	}
	return lines, want
}

// A windowed aggregate through the engine into ClickHouse, at parallelism
// 1 and 2 with checkpoints: ClickHouse holds every window once, equal to
// a recomputation here. window_start is Clink's BIGINT epoch ms,
// window_end a TIMESTAMP(3); both land in DateTime columns.
func TestJobSensorWindows(t *testing.T) {
	srv := chtest.StartWith(t, chtest.Config{Timezone: "America/New_York"})
	dir := t.TempDir()
	in := filepath.Join(dir, "readings.jsonl")
	want := readings(t, in)
	t.Setenv("CLINK_TEST_CH_PASSWORD", chtest.Password)

	for _, tc := range []struct {
		port string
		par  int
	}{{"http", 1}, {"http", 2}, {"native", 1}, {"native", 2}} {
		port, par := srv.HTTPPort, tc.par
		if tc.port == "native" {
			port = srv.TCPPort
		}
		t.Run(fmt.Sprintf("port=%s,parallelism=%d", tc.port, par), func(t *testing.T) {
			table := fmt.Sprintf("sensor_windows_%s_%d", tc.port, par)
			srv.MustQuery(t, `CREATE TABLE `+table+` (
				sensor String, window_start DateTime, window_end DateTime,
				n UInt64, avg_temp Float64, min_temp Float64, max_temp Float64
			) ENGINE = ReplacingMergeTree ORDER BY (sensor, window_start)`)
			script := `
CREATE TABLE readings (sensor STRING, ts TIMESTAMP(3), temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts');
CREATE TABLE windows (sensor STRING, window_start BIGINT, window_end TIMESTAMP(3),
  n BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'clickhouse', 'host' = '127.0.0.1', 'port' = '` + strconv.Itoa(port) + `',
  'table' = '` + table + `', 'user' = '` + chtest.User + `', 'password' = 'env://CLINK_TEST_CH_PASSWORD',
  'batch_rows' = '7');
INSERT INTO windows
SELECT sensor, window_start, CAST(window_end AS TIMESTAMP(3)), COUNT(*), AVG(temp), MIN(temp), MAX(temp)
FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, sensor`
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			j, err := plan(script, par, mem)
			if err != nil {
				t.Fatal(err)
			}
			store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var checkpoints atomic.Int64
			j.Checkpoint = &engine.CheckpointConfig{Store: store, Interval: 5 * time.Millisecond, Job: "test", Mem: mem,
				OnComplete: func(uint64) { checkpoints.Add(1) }}
			if g := j.Guarantee(); g != "STATE_EXACTLY_ONCE_OUTPUT_AT_LEAST_ONCE (limited by sink 'windows')" {
				t.Errorf("guarantee %s", g)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stats, err := j.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var written int64
			for _, st := range stats {
				written += st.Total("rows_written")
			}
			if written != int64(len(want)) {
				t.Errorf("sinks report %d rows written, want %d", written, len(want))
			}
			got := srv.MustQuery(t, `SELECT sensor, toUnixTimestamp(window_start), toUnixTimestamp(window_end), n, avg_temp, min_temp, max_temp
				FROM `+table+` ORDER BY sensor, window_start FORMAT TabSeparated`)
			check(t, got, want)
			t.Logf("%d windows, %d checkpoints", len(want), checkpoints.Load())
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// check compares ClickHouse's rows with the recomputed windows: each
// window once, counts, minima and maxima exact, averages to 1e-9.
func check(t *testing.T, got string, want map[[2]string]*window) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != len(want) {
		t.Errorf("%d rows in ClickHouse, want %d", len(lines), len(want))
	}
	seen := map[[2]string]bool{}
	for _, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			t.Fatalf("row %q", line)
		}
		sensor := strings.ReplaceAll(f[0], `\\`, `\`)
		start, _ := strconv.ParseInt(f[1], 10, 64)
		end, _ := strconv.ParseInt(f[2], 10, 64)
		k := [2]string{sensor, strconv.FormatInt(start*1000, 10)}
		w := want[k]
		if w == nil || seen[k] {
			t.Errorf("unexpected or repeated row %q", line)
			continue
		}
		seen[k] = true
		n, _ := strconv.ParseInt(f[3], 10, 64)
		avg, _ := strconv.ParseFloat(f[4], 64)
		lo, _ := strconv.ParseFloat(f[5], 64)
		hi, _ := strconv.ParseFloat(f[6], 64)
		if end != start+10 || n != w.n || lo != w.lo || hi != w.hi || math.Abs(avg-w.sum/float64(w.n)) > 1e-9 {
			t.Errorf("row %q, want n=%d avg=%v min=%v max=%v", line, w.n, w.sum/float64(w.n), w.lo, w.hi)
		}
	}
	var missing []string
	for k := range want {
		if !seen[k] {
			missing = append(missing, k[0]+"@"+k[1])
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%d windows missing, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
}

// exactly_once is refused at planning and a changelog at compilation,
// both naming the table; neither needs a server.
func TestJobRefusals(t *testing.T) {
	in := filepath.Join(t.TempDir(), "readings.jsonl")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ddl := `CREATE TABLE readings (sensor STRING, ts TIMESTAMP(3), temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts');
CREATE TABLE out (sensor STRING, n BIGINT) WITH ('connector' = 'clickhouse', 'port' = '1', 'table' = 't'%s);
`
	_, err := plan(fmt.Sprintf(ddl, ", 'sink.delivery-guarantee' = 'exactly-once'")+
		"INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor", 1, memory.NewGoAllocator())
	if err == nil || !strings.Contains(err.Error(), "sink 'out': connector 'clickhouse' cannot deliver exactly once") {
		t.Errorf("exactly_once: %v", err)
	}
	_, err = plan(fmt.Sprintf(ddl, "")+"INSERT INTO out SELECT sensor, COUNT(*) FROM readings GROUP BY sensor", 1, memory.NewGoAllocator())
	if err == nil || !strings.Contains(err.Error(), "table out (connector 'clickhouse') cannot consume the updates of this query") {
		t.Errorf("changelog: %v", err)
	}
}
