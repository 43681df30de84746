package flightsql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/kafka"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/flight/flightsql"
	"github.com/clink-dev/clink/substrait/sql"
)

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startCluster runs a Coordinator with Flight SQL and a Worker of two
// slots, and submits a streaming window job over Kafka that checkpoints
// every 100 ms keeping one checkpoint.
func startCluster(t *testing.T, token string) (*cluster.Coordinator, string) {
	t.Helper()
	dir := t.TempDir()
	b, err := kafka.StartBroker(kafka.BrokerConfig{Topics: []kafka.TopicSpec{{Name: "in", Partitions: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	for i := range 1000 {
		kc.Produce(context.Background(), &kgo.Record{Key: []byte(fmt.Sprint(i % 5)), Value: fmt.Appendf(nil, `{"k":"k%d","ts":%d}`, i%5, i*100)}, nil)
	}
	if err := kc.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := &logBuf{}
	c, err := cluster.NewCoordinator(cluster.CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", FlightSQLAddr: "127.0.0.1:0",
		CheckpointDir: filepath.Join(dir, "ck"), CheckpointInterval: 100 * time.Millisecond, Token: token, Connectors: builtin.Registry(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); c.Run(ctx) }()
	w, err := cluster.NewWorker(cluster.WorkerConfig{ID: "w1", Coordinator: c.FlightAddr(), Slots: 2, Token: token,
		Connectors: builtin.Registry(), Stdout: log, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	go func() { defer wg.Done(); w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() {
			t.Logf("cluster log:\n%s", log.String())
		}
	})
	plan, err := sql.Compile(`SET 'execution.checkpointing.num-retained' = '1';
CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector'='kafka', 'brokers'='`+b.Addr()+`', 'topic'='in', 'event_time_column'='ts');
CREATE TABLE o (k STRING, window_start BIGINT, n BIGINT) WITH ('connector'='file', 'path'='`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); c.Workers() < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no Worker registered")
		}
	}
	resp, err := c.Submit(&cluster.SubmitRequest{Name: "windows", Plan: data, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	id := string(resp.Job)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, _ := c.Job(id); d.State == cluster.StateRunning && d.Latest != nil && d.Latest.ID >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint 2")
		}
	}
	return c, id
}

func query(t *testing.T, ctx context.Context, cl *afsql.Client, q string) []string {
	t.Helper()
	info, err := cl.Execute(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return read(t, ctx, cl, info)
}

func read(t *testing.T, ctx context.Context, cl *afsql.Client, info *flight.FlightInfo) []string {
	t.Helper()
	var out []string
	for _, ep := range info.Endpoint {
		r, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var b strings.Builder
			if err := array.RecordToJSON(r.RecordBatch(), &b); err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				if l != "" {
					out = append(out, l)
				}
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	return out
}

// TestCluster: a Flight SQL client reads a running window job: the job
// list, its operators, a join of both, its window state grouped by slot
// (as the tutorial), the tables' listing; a wrong token is refused.
func TestCluster(t *testing.T) {
	c, id := startCluster(t, "s3cret")
	cl, err := afsql.NewClient(c.FlightSQLAddr(), nil, nil, cflight.DialOptions("s3cret")...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()

	if got := query(t, ctx, cl, "SELECT id, name, status, guarantee FROM jobs"); len(got) != 1 ||
		got[0] != fmt.Sprintf(`{"guarantee":"EXACTLY_ONCE","id":%s,"name":"windows","status":"RUNNING"}`, id) {
		t.Errorf("jobs: %v", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := query(t, ctx, cl, "SELECT SUM(records_in) AS n FROM operators WHERE operator = 'window_aggregate' AND watermark IS NOT NULL")
		if len(got) == 1 && got[0] == `{"n":1000}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operators: %v", got)
		}
	}
	got := query(t, ctx, cl, "SELECT j.name, COUNT(*) AS subtasks FROM jobs AS j JOIN operators AS o ON o.job_id = j.id WHERE o.operator = 'window_aggregate' GROUP BY j.name")
	if len(got) != 1 || got[0] != `{"name":"windows","subtasks":2}` {
		t.Errorf("join: %v", got)
	}

	// The tutorial's query over the running job's state.
	state := query(t, ctx, cl, "SELECT slot, COUNT(*) AS n FROM job_"+id+".state GROUP BY slot")
	if len(state) == 0 || !strings.Contains(strings.Join(state, "\n"), `"slot":"window_agg"`) {
		t.Errorf("state by slot: %v", state)
	}
	t.Logf("state by slot: %v", state)
	// The same with the job named in the call (clink state-query --job).
	jctx := metadata.AppendToOutgoingContext(ctx, flightsql.JobHeader, id)
	if again := query(t, jctx, cl, "SELECT slot, COUNT(*) AS n FROM state GROUP BY slot"); len(again) != len(state) {
		t.Errorf("state with %s: %v, want %v", flightsql.JobHeader, again, state)
	}
	// Prepared, it reads the newest checkpoint at each execution.
	prep, err := cl.Prepare(ctx, "SELECT slot, COUNT(*) AS n FROM job_"+id+".state GROUP BY slot ORDER BY slot")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		info, err := prep.Execute(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rows := read(t, ctx, cl, info); len(rows) != len(state) {
			t.Errorf("prepared: %v, want %d rows", rows, len(state))
		}
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := cl.GetSqlInfo(ctx, []afsql.SqlInfo{afsql.SqlInfoFlightSqlServerName})
	if err != nil {
		t.Fatal(err)
	}
	if rows := read(t, ctx, cl, info); len(rows) != 1 || !strings.Contains(rows[0], "Clink") {
		t.Errorf("sql info: %v", rows)
	}
	// One table per stateful operator.
	pattern := "job_" + id
	info, err = cl.GetTables(ctx, &afsql.GetTablesOpts{DbSchemaFilterPattern: &pattern})
	if err != nil {
		t.Fatal(err)
	}
	tables := read(t, ctx, cl, info)
	if len(tables) < 2 || !strings.Contains(tables[0], `"table_name":"state"`) {
		t.Fatalf("tables: %v", tables)
	}
	for _, tb := range tables[1:] {
		var name string
		fmt.Sscanf(tb[strings.Index(tb, `"table_name":"`)+len(`"table_name":"`):], "%s", &name)
		name = strings.TrimSuffix(strings.Split(name, `"`)[0], `"`)
		if rows := query(t, ctx, cl, "SELECT COUNT(*) AS n FROM job_"+id+"."+name); len(rows) != 1 {
			t.Errorf("table %s: %v", name, rows)
		}
	}
	info, err = cl.GetDBSchemas(ctx, &afsql.GetDBSchemasOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if s := read(t, ctx, cl, info); len(s) != 2 || !strings.Contains(s[1], `"db_schema_name":"job_`+id+`"`) {
		t.Errorf("schemas: %v", s)
	}

	bad, err := afsql.NewClient(c.FlightSQLAddr(), nil, nil, cflight.DialOptions("wrong")...)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := bad.Execute(ctx, "SELECT * FROM jobs"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := cl.Execute(ctx, "SELECT slot FROM job_"+id+".state WHERE nope = 1"); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "line 1:") {
		t.Errorf("bad SQL: %v", err)
	}
}

// TestPinnedRead: a query's checkpoint K stays, while the job checkpoints
// every 100 ms keeping one, until the read ends, and the read is complete.
func TestPinnedRead(t *testing.T) {
	c, id := startCluster(t, "")
	cl, err := afsql.NewClient(c.FlightSQLAddr(), nil, nil, cflight.DialOptions("")...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, _ := c.Job(id)
	dir := d.CheckpointDir
	var k uint64
	var want int64
	flightsql.SetTestHookRun(func(pinned []uint64) {
		if len(pinned) != 1 {
			t.Errorf("pinned %v", pinned)
			return
		}
		k = pinned[0]
		st, err := checkpoint.NewStore(dir, checkpoint.Options{})
		if err != nil {
			t.Error(err)
			return
		}
		ck, err := st.Open(k)
		if err != nil {
			t.Error(err)
			return
		}
		for _, p := range ck.Parts() {
			part, err := ck.ReadPart(p.Operator, p.Subtask)
			if err != nil {
				t.Error(err)
				return
			}
			want += part.NumRows()
			part.Release()
		}
		// Retention (one kept) passes K several times meanwhile.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if d, _ := c.Job(id); d.Latest != nil && d.Latest.ID >= k+3 {
				break
			}
		}
	})
	defer flightsql.SetTestHookRun(nil)
	got := query(t, context.Background(), cl, "SELECT COUNT(*) AS n FROM job_"+id+".state")
	if d, _ := c.Job(id); d.Latest == nil || d.Latest.ID < k+3 {
		t.Fatalf("job did not checkpoint past %d: %+v", k, d.Latest)
	}
	if len(got) != 1 || got[0] != fmt.Sprintf(`{"n":%d}`, want) || want == 0 {
		t.Errorf("read of pinned checkpoint %d: %v, want %d rows", k, got, want)
	}
	// Unpinned, retention removes it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if !checkpoint.Pinned(dir, k) {
			st, _ := checkpoint.NewStore(dir, checkpoint.Options{})
			if _, err := st.Open(k); err != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %d kept after the read", k)
		}
	}
}
