package lineage_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/lineage/lineagetest"
	"github.com/clink-dev/clink/substrait/sql"
)

const script = `
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = 'broker-1:9092,broker-2:9092', 'topic' = 'sensors',
  'event_time_column' = 'ts');
CREATE TABLE pg (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'postgres', 'host' = 'db-1', 'port' = '5433', 'database' = 'metrics', 'table' = 'Ops.Temps');
CREATE TABLE ch (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'clickhouse', 'host' = 'ch-1', 'port' = '9000', 'database' = 'm', 'table' = 'temps');
CREATE TABLE lake (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = 's3://lake/sensors/temps', 'format' = 'parquet');
CREATE TABLE gcs (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = 'gs://bkt/out/', 'format' = 'parquet');
CREATE TABLE az (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = 'azure://cont/dir/x', 'format' = 'parquet', 'azure.account' = 'acct');
CREATE TABLE ice (sensor_id STRING, temp_c DOUBLE) WITH (
  'connector' = 'iceberg', 'catalog_uri' = 'postgres://u:secret@cat-1:5432/cat', 'warehouse' = 's3://wh/x', 'namespace' = 'a.b');
CREATE TABLE local (sensor_id STRING, temp_c DOUBLE) WITH ('connector' = 'file', 'path' = '/data/out.jsonl');
CREATE TABLE hole (sensor_id STRING, temp_c DOUBLE) WITH ('connector' = 'blackhole');
CREATE TABLE pgurl (sensor_id STRING, temp_c DOUBLE) WITH ('connector' = 'postgres', 'url' = 'env://LINEAGE_TEST_PG_URL');
INSERT INTO pg SELECT sensor_id, temp_c FROM readings;
INSERT INTO ch SELECT sensor_id, temp_c FROM readings;
INSERT INTO lake SELECT sensor_id, temp_c FROM readings;
INSERT INTO gcs SELECT sensor_id, temp_c FROM readings;
INSERT INTO az SELECT sensor_id, temp_c FROM readings;
INSERT INTO ice SELECT sensor_id, temp_c FROM readings;
INSERT INTO local SELECT sensor_id, temp_c FROM readings;
INSERT INTO hole SELECT sensor_id, temp_c FROM readings;
INSERT INTO pgurl SELECT sensor_id, temp_c FROM readings;
`

func TestJobOfNamesDatasets(t *testing.T) {
	t.Setenv("LINEAGE_TEST_PG_URL", "postgres://alice:pw@pg-2:6543/sales?sslmode=disable")
	reg := builtin.Registry()
	plan, err := sql.Compile(script, reg)
	if err != nil {
		t.Fatal(err)
	}
	job, errs := lineage.JobOf(plan, reg, "j", script)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if job.Bounded {
		t.Error("a Kafka job is bounded")
	}
	got := func(ds []lineage.Dataset) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Namespace+" "+d.Name)
		}
		return out
	}
	if in := got(job.Inputs); strings.Join(in, "|") != "kafka://broker-1:9092 sensors" {
		t.Errorf("inputs %q", in)
	}
	want := []string{
		"postgres://db-1:5433 metrics.ops.temps",
		"clickhouse://ch-1:9000 m.temps",
		"s3://lake sensors/temps",
		"gs://bkt out",
		"wasbs://cont@acct.dfs.core.windows.net dir/x",
		"postgres://cat-1:5432/cat clink.a.b.ice",
		"file /data/out.jsonl",
		"clink://blackhole hole",
		"postgres://pg-2:6543 sales.public.pgurl",
	}
	if out := got(job.Outputs); strings.Join(out, "|") != strings.Join(want, "|") {
		t.Errorf("outputs\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
	if f := job.Inputs[0].Fields; len(f) != 3 || f[1] != (lineage.Field{Name: "ts", Type: "BIGINT"}) {
		t.Errorf("fields %v", f)
	}
}

func testJob() *lineage.Job {
	return &lineage.Job{Name: "insert-into_out", SQL: "INSERT INTO out SELECT * FROM t",
		Inputs:  []lineage.Dataset{{Namespace: "kafka://b:9092", Name: "t", Fields: []lineage.Field{{Name: "a", Type: "BIGINT"}}}},
		Outputs: []lineage.Dataset{{Namespace: "file", Name: "/tmp/out", Fields: []lineage.Field{{Name: "a", Type: "BIGINT"}}}}}
}

func TestEventsValidateAndPair(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	c := lineage.New(lineage.Config{URL: r.URL, APIKey: "k3y", Namespace: "prod", Version: "v1.2.3", RunningInterval: time.Nanosecond})
	parent := lineage.NewRunID()
	a := c.NewRun(testJob(), parent)
	a.Start()
	a.Checkpoint()
	a.Checkpoint()
	a.Fail("worker w1 lost")
	a.Complete() // after the end: nothing
	b := c.NewRun(testJob(), parent)
	b.Start()
	b.Abort()
	c.NewRun(testJob(), "").Complete() // never started: nothing
	c.Close(5 * time.Second)
	evs := r.Events()
	var types []string
	for _, e := range evs {
		types = append(types, e.EventType)
	}
	if got := strings.Join(types, ","); got != "START,RUNNING,RUNNING,FAIL,START,ABORT" {
		t.Fatalf("events %s", got)
	}
	r.Check(t, true)
	if evs[0].Run.RunID == evs[4].Run.RunID {
		t.Error("two attempts share a run id")
	}
	if e := evs[3]; e.Run.Facets["errorMessage"].(map[string]any)["message"] != "worker w1 lost" {
		t.Errorf("FAIL facets %v", e.Run.Facets)
	}
	if p := evs[4].Run.Facets["parent"].(map[string]any)["run"].(map[string]any)["runId"]; p != parent {
		t.Errorf("parent %v, want %s", p, parent)
	}
	if e := evs[0]; e.Job.Namespace != "prod" || e.Producer != "https://github.com/clink-dev/clink/tree/v1.2.3" {
		t.Errorf("namespace %s producer %s", e.Job.Namespace, e.Producer)
	}
	for _, h := range r.Authorization() {
		if h != "Bearer k3y" {
			t.Errorf("Authorization %q", h)
		}
	}
}

func TestRunningRateLimited(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	c := lineage.New(lineage.Config{URL: r.URL, RunningInterval: time.Hour})
	run := c.NewRun(testJob(), "")
	run.Start()
	for range 10 {
		run.Checkpoint()
	}
	run.Complete()
	c.Close(5 * time.Second)
	if n := len(r.Events()); n != 2 {
		t.Fatalf("%d events, want START and COMPLETE: %s", n, lineagetest.Summary(r.Events()))
	}
	r.Check(t, true)
}

func TestRetriesServerErrors(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	r.Answer(func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return 0
	})
	c := lineage.New(lineage.Config{URL: r.URL, Backoff: time.Millisecond})
	run := c.NewRun(testJob(), "")
	run.Start()
	run.Complete()
	c.Close(5 * time.Second)
	if n := len(r.Events()); n != 2 || r.Posts() != 5 {
		t.Fatalf("%d events in %d posts, want 2 in 5", n, r.Posts())
	}
	r.Check(t, true)
}

// TestDownReceiverDoesNotBlock: with nothing listening, emitting returns
// at once, a full queue drops RUNNING events first, and Close gives up at
// its deadline.
func TestDownReceiverDoesNotBlock(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // connection refused from now on
	c := lineage.New(lineage.Config{URL: "http://" + addr, QueueSize: 4, RunningInterval: time.Nanosecond, Backoff: 50 * time.Millisecond, Retries: 1000})
	run := c.NewRun(testJob(), "")
	start := time.Now()
	run.Start()
	for range 100 {
		run.Checkpoint()
	}
	run.Complete()
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("emitting took %s", d)
	}
	_, dropped, _ := c.Stats()
	if dropped < 90 {
		t.Errorf("%d dropped, want the RUNNING events beyond the queue", dropped)
	}
	start = time.Now()
	c.Close(300 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s", d)
	}
	if _, _, failed := c.Stats(); failed == 0 {
		t.Error("no event counted as not delivered")
	}
}

// TestDownThenUp: events queued while the receiver is down arrive once it
// answers, START and COMPLETE kept over the RUNNING dropped.
func TestDownThenUp(t *testing.T) {
	r := lineagetest.NewReceiver(t)
	down := true
	r.Answer(func(int) int {
		if down {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	c := lineage.New(lineage.Config{URL: r.URL, QueueSize: 3, RunningInterval: time.Nanosecond, Backoff: 10 * time.Millisecond, Retries: 1000})
	run := c.NewRun(testJob(), "")
	run.Start()
	for range 20 {
		run.Checkpoint()
	}
	run.Complete()
	time.Sleep(50 * time.Millisecond)
	r.Answer(func(int) int { return 0 })
	c.Close(5 * time.Second)
	evs := r.Events()
	if len(evs) < 2 || evs[0].EventType != lineage.Start || evs[len(evs)-1].EventType != lineage.Complete {
		t.Fatalf("events %s", lineagetest.Summary(evs))
	}
	r.Check(t, true)
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("OPENLINEAGE_URL", "")
	if _, ok, _ := lineage.ConfigFromEnv(); ok {
		t.Error("on without OPENLINEAGE_URL")
	}
	t.Setenv("OPENLINEAGE_URL", "http://x:5000")
	t.Setenv("OPENLINEAGE_DISABLED", "true")
	if _, ok, _ := lineage.ConfigFromEnv(); ok {
		t.Error("on with OPENLINEAGE_DISABLED=true")
	}
	t.Setenv("OPENLINEAGE_DISABLED", "")
	t.Setenv("OPENLINEAGE_NAMESPACE", "ns")
	t.Setenv("OPENLINEAGE_API_KEY", "k")
	t.Setenv("CLINK_OPENLINEAGE_RUNNING_INTERVAL", "5s")
	cfg, ok, err := lineage.ConfigFromEnv()
	if !ok || err != nil || cfg.Namespace != "ns" || cfg.APIKey != "k" || cfg.RunningInterval != 5*time.Second {
		t.Errorf("%+v %v %v", cfg, ok, err)
	}
}

// TestValidatorRejects: the schema copy does reject what the spec
// forbids, so that the other tests' validation means something.
func TestValidatorRejects(t *testing.T) {
	v, err := lineagetest.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	good := `{"eventType":"START","eventTime":"2026-12-02T10:00:00.000Z","producer":"https://github.com/clink-dev/clink","schemaURL":"` + lineage.SchemaURL + `","run":{"runId":"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},"job":{"namespace":"n","name":"j","facets":{"sql":{"_producer":"https://x","_schemaURL":"https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json#/$defs/SQLJobFacet","query":"SELECT 1"}}}}`
	if err := v.Validate([]byte(good)); err != nil {
		t.Fatalf("a valid event: %v", err)
	}
	for name, bad := range map[string]string{
		"run id":     strings.Replace(good, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "attempt-1", 1),
		"event type": strings.Replace(good, `"START"`, `"STARTED"`, 1),
		"time":       strings.Replace(good, "2026-12-02T10:00:00.000Z", "yesterday", 1),
		"facet":      strings.Replace(good, `"query":"SELECT 1"`, `"dialect":"flink"`, 1),
		"no job":     strings.Replace(good, `"job":`, `"jobs":`, 1),
	} {
		if err := v.Validate([]byte(bad)); err == nil {
			t.Errorf("%s: an invalid event passed", name)
		}
	}
}
