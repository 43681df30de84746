package flightsql

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cflight "github.com/clink-dev/clink/flight"
)

type fakeCatalog struct{}

func (fakeCatalog) Jobs() []Job {
	return []Job{
		{ID: "1", Name: "windows", Status: "RUNNING", Guarantee: "EXACTLY_ONCE", Parallelism: 2, StartTime: 1000, LatestCheckpoint: 7},
		{ID: "2", Name: "done", Status: "FINISHED", Guarantee: "NONE", Parallelism: 1, StartTime: 1000, EndTime: 5000},
	}
}

func (fakeCatalog) Operators() []Operator {
	wm := int64(4000)
	return []Operator{
		{Job: "1", Name: "source", Subtask: 0, Worker: "w1", RecordsOut: 10, Watermark: &wm},
		{Job: "1", Name: "source", Subtask: 1, Worker: "w2", RecordsOut: 12},
		{Job: "1", Name: "window_agg", Subtask: 0, Worker: "w1", RecordsIn: 22, RecordsOut: 3, LateDropped: 1},
		{Job: "2", Name: "source", Subtask: 0, Worker: "w1", RecordsOut: 5},
	}
}

func (fakeCatalog) Checkpoints() []Checkpoint {
	return []Checkpoint{{Job: "1", ID: 7, Status: "COMPLETED", Kind: "checkpoint", Duration: 12, Parts: 3, Bytes: 100, SyncMS: 0.5}}
}

func (fakeCatalog) Workers() []Worker {
	return []Worker{{ID: "w1", Addr: "127.0.0.1:1", Slots: 2, Free: 0}, {ID: "w2", Addr: "127.0.0.1:2", Slots: 2, Free: 1}}
}

func startFake(t *testing.T, token string) string {
	t.Helper()
	s, err := NewServer("127.0.0.1:0", fakeCatalog{}, "test", cflight.ServerOptions(token)...)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Shutdown)
	return s.Addr()
}

func dial(t *testing.T, addr, token string) *afsql.Client {
	t.Helper()
	cl, err := afsql.NewClient(addr, nil, nil, cflight.DialOptions(token)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// rowsOf reads every endpoint of info as JSON lines, one per row.
func rowsOf(t *testing.T, cl *afsql.Client, info *flight.FlightInfo, err error) []string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ep := range info.Endpoint {
		r, err := cl.DoGet(context.Background(), ep.Ticket)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			out = append(out, recordRows(t, r.RecordBatch())...)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	return out
}

func recordRows(t *testing.T, rec arrow.RecordBatch) []string {
	t.Helper()
	var buf strings.Builder
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l != "" {
			var m map[string]any
			json.Unmarshal([]byte(l), &m)
			c, _ := json.Marshal(m)
			out = append(out, string(c))
		}
	}
	return out
}

func TestQueries(t *testing.T) {
	addr := startFake(t, "s3cret")
	cl := dial(t, addr, "s3cret")
	ctx := context.Background()
	for _, tc := range []struct{ sql, want string }{
		{"SELECT id, name, status FROM jobs WHERE status = 'RUNNING'", `{"id":1,"name":"windows","status":"RUNNING"}`},
		{"SELECT id, latest_checkpoint_id FROM clink.jobs", `{"id":1,"latest_checkpoint_id":7}|{"id":2,"latest_checkpoint_id":null}`},
		{"SELECT operator, SUM(records_out) AS out FROM operators WHERE job_id = 1 GROUP BY operator",
			`{"operator":"source","out":22}|{"operator":"window_agg","out":3}`},
		{"SELECT j.name, COUNT(*) AS n FROM jobs j JOIN operators o ON j.id = o.job_id GROUP BY j.name",
			`{"n":3,"name":"windows"}|{"n":1,"name":"done"}`},
		{"SELECT id, free_slots FROM workers WHERE free_slots > 0", `{"free_slots":1,"id":"w2"}`},
		{"SELECT job_id, id, parts FROM checkpoints", `{"id":7,"job_id":1,"parts":3}`},
		// A global aggregate over no rows has one row.
		{"SELECT COUNT(*) AS n, MAX(records_in) AS m FROM operators WHERE job_id = 99", `{"m":null,"n":0}`},
		{"SELECT COUNT(*) AS n FROM operators", `{"n":4}`},
		{"SELECT job_id, COUNT(*) AS n FROM operators WHERE job_id = 99 GROUP BY job_id", ``},
		// The endpoint sorts what the engine does not.
		{"SELECT id FROM jobs ORDER BY id DESC", `{"id":2}|{"id":1}`},
		{"SELECT id, end_time FROM jobs ORDER BY end_time", `{"end_time":5000,"id":2}|{"end_time":null,"id":1}`},
		{"SELECT id, end_time FROM jobs ORDER BY end_time NULLS FIRST", `{"end_time":null,"id":1}|{"end_time":5000,"id":2}`},
		{"SELECT operator, subtask, records_out FROM operators ORDER BY 3 DESC, operator\n",
			`{"operator":"source","records_out":12,"subtask":1}|{"operator":"source","records_out":10,"subtask":0}|{"operator":"source","records_out":5,"subtask":0}|{"operator":"window_agg","records_out":3,"subtask":0}`},
		{"SELECT operator, SUM(records_out) AS total FROM operators GROUP BY operator ORDER BY total",
			`{"operator":"window_agg","total":3}|{"operator":"source","total":27}`},
		{"SELECT operator, subtask, records_out FROM operators ORDER BY records_out DESC LIMIT 2",
			`{"operator":"source","records_out":12,"subtask":1}|{"operator":"source","records_out":10,"subtask":0}`},
	} {
		info, err := cl.Execute(ctx, tc.sql)
		got := rowsOf(t, cl, info, err)
		if strings.Join(got, "|") != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, strings.Join(got, "|"), tc.want)
		}
	}

	// Bad SQL: InvalidArgument with line:column in the user's text.
	_, err := cl.Execute(ctx, "SELECT nope\nFROM jobs")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "line 1:8: column nope does not exist") {
		t.Errorf("bad SQL: %v", err)
	}
	_, err = cl.Execute(ctx, "SELECT * FROM nosuch")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "line 1:15: table nosuch does not exist") {
		t.Errorf("unknown table: %v", err)
	}

	_, err = cl.Execute(ctx, "SELECT id FROM jobs\nORDER BY name")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "line 2:10: ORDER BY name: sort by a column of the result") {
		t.Errorf("ORDER BY a column not selected: %v", err)
	}

	_, err = cl.Execute(ctx, "SELECT slot FROM state")
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "line 1:18: table state does not exist: a job's state is job_<id>.state") {
		t.Errorf("state without a job: %v", err)
	}
	_, err = cl.Execute(metadata.AppendToOutgoingContext(ctx, JobHeader, "9"), "SELECT slot FROM state")
	if status.Code(err) != codes.NotFound {
		t.Errorf("state of no job: %v", err)
	}
	_, err = cl.Execute(metadata.AppendToOutgoingContext(ctx, JobHeader, "2"), "SELECT slot FROM state")
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "job 2 runs without checkpoints") {
		t.Errorf("state of a job without checkpoints: %v", err)
	}

	// A prepared statement runs anew each time.
	prep, err := cl.Prepare(ctx, "SELECT COUNT(*) AS n FROM operators")
	if err != nil {
		t.Fatal(err)
	}
	if f := prep.DatasetSchema().Field(0); f.Name != "n" {
		t.Errorf("prepared schema %v", prep.DatasetSchema())
	}
	for range 2 {
		info, err := prep.Execute(ctx)
		if got := rowsOf(t, cl, info, err); strings.Join(got, "|") != `{"n":4}` {
			t.Errorf("prepared: %v", got)
		}
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMetadata(t *testing.T) {
	addr := startFake(t, "")
	cl := dial(t, addr, "")
	ctx := context.Background()
	info, err := cl.GetDBSchemas(ctx, &afsql.GetDBSchemasOpts{})
	if got := strings.Join(rowsOf(t, cl, info, err), "|"); got != `{"catalog_name":null,"db_schema_name":"clink"}` {
		t.Errorf("schemas: %s", got)
	}
	pattern := "work%"
	info, err = cl.GetTables(ctx, &afsql.GetTablesOpts{TableNameFilterPattern: &pattern, IncludeSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().NumRows() != 1 {
		t.Fatalf("tables: %v", r.Err())
	}
	rec := r.RecordBatch()
	if n := rec.Column(2).(*array.String).Value(0); n != "workers" {
		t.Errorf("table %s", n)
	}
	sc, err := flight.DeserializeSchema(rec.Column(4).(*array.Binary).Value(0), nil)
	if err != nil || sc.NumFields() != len(workersCols) || sc.Field(3).Name != "free_slots" {
		t.Errorf("workers schema %v %v", sc, err)
	}

	info, err = cl.GetSqlInfo(ctx, []afsql.SqlInfo{afsql.SqlInfoFlightSqlServerName, afsql.SqlInfoFlightSqlServerReadOnly})
	if got := strings.Join(rowsOf(t, cl, info, err), "|"); !strings.Contains(got, `"Clink"`) {
		t.Errorf("sql info: %s", got)
	}
}

func TestAuth(t *testing.T) {
	addr := startFake(t, "s3cret")
	for _, tok := range []string{"", "wrong"} {
		_, err := dial(t, addr, tok).Execute(context.Background(), "SELECT * FROM jobs")
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}
