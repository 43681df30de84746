package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
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
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// The sensor story under SIGKILL with the Parquet sink on the three
// object stores: one job (three INSERTs) writes the same windows to
// s3:// (MinIO), gs:// (fake-gcs-server) and azure:// (Azurite), all
// running on 127.0.0.1, while `clink run`
// is killed with SIGKILL at random moments and restarted at parallelism 1
// to 3. Each store's published prefix is then listed with the store's
// own client, every Parquet object read back and turned into JSON lines,
// and the independent verifier must find every window exactly once;
// nothing under the published prefixes may be partial or staged. The kill
// points come from a seed printed in the log; CLINK_KILL_SEED repeats a
// run.
func TestObjectStoreSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("streams for about 15 s")
	}
	stores := []*ostest.Server{ostest.MinIO(t), ostest.FakeGCS(t), ostest.Azurite(t)}
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
	rng := rand.New(rand.NewPCG(seed, 0x0b57))

	ctx := context.Background()
	addr := serveBroker(t, bin, "--topic", "readings:4")
	dir := t.TempDir()
	ckdir := filepath.Join(dir, "checkpoints")
	sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temperature DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
`
	for i, s := range stores {
		if err := s.Client.CreateBucket(ctx, "lake"); err != nil {
			t.Fatalf("%s: %v", s.Scheme, err)
		}
		// Small files: several per checkpoint now and then.
		sql += fmt.Sprintf(`CREATE TABLE out%d (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'filesystem', 'format' = 'parquet', 'path' = '%s', 'rolling_max_bytes' = '4KB', %s);
INSERT INTO out%d
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temperature), MIN(temperature), MAX(temperature)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`, i, s.URL("lake", "sensors/windows"), s.With(), i)
	}
	sqlFile := filepath.Join(dir, "pipeline.sql")
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}

	c := workload.Default()
	c.Ticks = 1200
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
	const kills = 5
	for i := range kills {
		kill := time.Duration(300+rng.IntN(1700)) * time.Millisecond
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
		n, _ := filepath.Glob(filepath.Join(ckdir, "chk-*", "_metadata.json"))
		t.Logf("kill %d after %s at parallelism %d (%d complete checkpoints kept)", i+1, kill, par, len(n))
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// The last run sees every window close; it is killed too once every
	// store's published output holds them all.
	check := func() (string, bool) {
		var reports []string
		ok := true
		for _, s := range stores {
			in := filepath.Join(dir, s.Scheme+".jsonl")
			if err := os.WriteFile(in, publishedJSON(t, s), 0o644); err != nil {
				t.Fatal(err)
			}
			o, err := exec.Command(verify, "-in", in, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)).CombinedOutput()
			reports = append(reports, s.Scheme+": "+strings.TrimSpace(string(o)))
			ok = ok && err == nil && bytes.Contains(o, []byte("\nPASS"))
		}
		return strings.Join(reports, "\n"), ok
	}
	cmd := start(2)
	defer cmd.Process.Kill()
	last := time.Now()
	var report string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		var ok bool
		report, ok = check()
		if ok || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("the last run published every window after %s", time.Since(last).Round(time.Millisecond))
	cmd.Process.Kill()
	cmd.Wait()
	// A final check once the job is gone: exactly once, nothing partial.
	report, ok := check()
	if !ok {
		t.Fatalf("verify after %d SIGKILLs:\n%s\nclink stderr:\n%s", kills, report, logs.String())
	}
	t.Logf("after %d SIGKILLs:\n%s", kills, report)
	for _, s := range stores {
		pub, _ := s.Client.List(ctx, "lake", "sensors/windows/")
		staged, err := s.Client.List(ctx, "lake", "sensors/_clink_staging/windows/")
		if err != nil {
			t.Fatal(err)
		}
		// Staged files of the last run's checkpoints not yet published
		// stay for its recovery; they are outside the published prefix.
		t.Logf("%s: %d files published, %d staged", s.Scheme, len(pub), len(staged))
	}
	restores := strings.Count(logs.String(), "restore point: checkpoint")
	if restores < 2 {
		t.Errorf("only %d of %d runs restored from a checkpoint:\n%s", restores, kills+1, logs.String())
	}
}

var finalPart = regexp.MustCompile(`^part-[0-9a-f]{8}-\d+-\d+-\d+\.parquet$`)

// publishedJSON lists s's published prefix with its own client, reads
// every object as Parquet (a partial or foreign object fails the test)
// and returns the rows as JSON lines.
func publishedJSON(t *testing.T, s *ostest.Server) []byte {
	t.Helper()
	ctx := context.Background()
	const prefix = "sensors/windows/"
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
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				row[f.Name] = value(rec.Column(c), i)
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

func value(a arrow.Array, i int) any {
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
