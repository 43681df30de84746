package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
	"github.com/clink-dev/clink/connectors/postgres/pgtest"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// testSchema has a column of each type the sink maps.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "window_start", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "avg_temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "hot", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// batch builds rows [from, to) of testSchema: row i is ("s<i%5>", i,
// i/10 or null every 7th, i%2==0, i s after 2024-01-01, i.05, day i, i%100).
// With sparse, the batch holds twice the rows and a selection vector picks
// the wanted ones. Its column names differ from the table's, as a query's
// do.
func batch(mem memory.Allocator, from, to int, sparse bool) *vector.Batch {
	fields := make([]arrow.Field, testSchema.NumFields())
	for i, f := range testSchema.Fields() {
		fields[i] = arrow.Field{Name: fmt.Sprintf("$%d", i), Type: f.Type, Nullable: true}
	}
	b := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	var sel []int32
	row := func(i int) {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("s%d", i%5))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%7 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 10)
		}
		b.Field(3).(*array.BooleanBuilder).Append(i%2 == 0)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(baseMs + int64(i)*1000))
		b.Field(5).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*100 + 5))
		b.Field(6).(*array.Date32Builder).Append(arrow.Date32(19723 + i%1000))
		b.Field(7).(*array.Int32Builder).Append(int32(i % 100))
	}
	for i := from; i < to; i++ {
		if sparse {
			row(-1)
			sel = append(sel, int32(2*(i-from)+1))
		}
		row(i)
	}
	return &vector.Batch{Rec: b.NewRecordBatch(), Sel: sel}
}

const baseMs = 1704067200000 // 2024-01-01T00:00:00Z

// want renders rows [from, to) as rows renders a scan: computed
// independently of the sink, from the definition of batch.
func want(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		v := "null"
		if i%7 != 0 {
			v = fmt.Sprint(float64(i) / 10)
		}
		ts := time.UnixMilli(baseMs + int64(i)*1000).UTC().Format("2006-01-02T15:04:05")
		day := time.Unix((19723+int64(i%1000))*86400, 0).UTC().Format("2006-01-02")
		out = append(out, fmt.Sprintf("s%d|%d|%s|%v|%s|%d.%02d|%s|%d", i%5, i, v, i%2 == 0, ts, (i*100+5)/100, (i*100+5)%100, day, i%100))
	}
	sort.Strings(out)
	return out
}

// target is a catalog and a warehouse for the sink under test.
type target struct {
	name string
	opts map[string]string
	// read opens the catalog with iceberg-go alone, as a reader would.
	read func(t *testing.T) catalog.Catalog
}

// sqliteLocal: a SQLite catalog and a local warehouse (always available).
func sqliteLocal(t *testing.T) *target {
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	wh := filepath.Join(dir, "warehouse")
	return &target{name: "sqlite+local",
		opts: map[string]string{"catalog_uri": "sqlite://" + db, "warehouse": wh},
		read: func(t *testing.T) catalog.Catalog {
			return readCatalog(t, "sqlite", "file:"+db+"?_pragma=busy_timeout(30000)", sqlcat.SQLite, "file://"+wh, nil)
		}}
}

// postgresLocal: a PostgreSQL catalog (pgtest starts a server; skipped
// without one) and a local warehouse.
func postgresLocal(t *testing.T) *target {
	s := pgtest.Start(t)
	u := s.CreateDatabase(t, "lake")
	wh := filepath.Join(t.TempDir(), "warehouse")
	// The password comes from the environment, as it should in a job.
	pu, _ := url.Parse(u)
	pw, _ := pu.User.Password()
	t.Setenv("CLINK_TEST_CATALOG_PASSWORD", pw)
	pu.User = url.User(pu.User.Username())
	return &target{name: "postgres+local",
		opts: map[string]string{"catalog_uri": pu.String(), "catalog_password": "env://CLINK_TEST_CATALOG_PASSWORD", "warehouse": wh},
		read: func(t *testing.T) catalog.Catalog {
			return readCatalog(t, "pgx", u, sqlcat.Postgres, "file://"+wh, nil)
		}}
}

// sqliteS3: a SQLite catalog and the warehouse in MinIO (ostest starts
// it; skipped without the binary).
func sqliteS3(t *testing.T) *target {
	s := ostest.MinIO(t)
	if err := s.Client.CreateBucket(context.Background(), "lake"); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "catalog.db")
	opts := map[string]string{"catalog_uri": "sqlite://" + db, "warehouse": "s3://lake/warehouse"}
	for k, v := range s.Options {
		opts[k] = v
	}
	return &target{name: "sqlite+s3",
		opts: opts,
		read: func(t *testing.T) catalog.Catalog {
			ak, _ := connectors.Secret("", s.Options["s3.access_key"])
			sk, _ := connectors.Secret("", s.Options["s3.secret_key"])
			props := ib.Properties{iceio.S3EndpointURL: s.Options["s3.endpoint"], iceio.S3Region: s.Options["s3.region"],
				iceio.S3AccessKeyID: ak, iceio.S3SecretAccessKey: sk}
			return readCatalog(t, "sqlite", "file:"+db+"?_pragma=busy_timeout(30000)", sqlcat.SQLite, "s3://lake/warehouse", props)
		}}
}

func readCatalog(t *testing.T, driver, dsn string, dialect sqlcat.SupportedDialect, warehouse string, props ib.Properties) catalog.Catalog {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if props == nil {
		props = ib.Properties{}
	}
	props["warehouse"] = warehouse
	cat, err := sqlcat.NewCatalog("clink", db, dialect, props)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// targets are the catalogs and warehouses every scenario runs against.
var targets = []struct {
	name string
	make func(t *testing.T) *target
}{{"sqlite+local", sqliteLocal}, {"postgres+local", postgresLocal}, {"sqlite+s3", sqliteS3}}

func (tg *target) table(subtask, par int, extra ...string) *connectors.Table {
	o := connectors.Options{"connector": "iceberg", "namespace": "sensors"}
	for k, v := range tg.opts {
		o[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		o[extra[i]] = extra[i+1]
	}
	return &connectors.Table{Name: "windows", Schema: testSchema, Options: o,
		Runtime: connectors.Runtime{Mem: memory.DefaultAllocator, Subtask: subtask, Parallelism: par}}
}

func (tg *target) txSink(t *testing.T, subtask, par int, extra ...string) TxSink {
	t.Helper()
	s, err := NewSink(tg.table(subtask, par, extra...))
	if err != nil {
		t.Fatal(err)
	}
	tx, ok := s.(TxSink)
	if !ok {
		t.Fatalf("NewSink returned %T, want TxSink", s)
	}
	if err := tx.StartTransactions(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return tx
}

// load loads the table with the reader's catalog.
func (tg *target) load(t *testing.T) *table.Table {
	t.Helper()
	tbl, err := tg.read(t).LoadTable(context.Background(), table.Identifier{"sensors", "windows"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rows scans the table's current snapshot with iceberg-go and renders
// its rows, sorted.
func (tg *target) rows(t *testing.T) []string {
	t.Helper()
	tbl := tg.load(t)
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	return render(t, at)
}

func render(t *testing.T, at arrow.Table) []string {
	t.Helper()
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) == 0 {
				t.Fatalf("no column %s in %s", name, rec.Schema())
			}
			return rec.Column(idx[0])
		}
		sid := col("sensor_id").(*array.String)
		ws := col("window_start").(*array.Int64)
		avg := col("avg_temp").(*array.Float64)
		hot := col("hot").(*array.Boolean)
		ts := col("ts").(*array.Timestamp)
		amt := col("amount").(*array.Decimal128)
		day := col("day").(*array.Date32)
		n := col("n").(*array.Int32)
		if u := ts.DataType().(*arrow.TimestampType); u.Unit != arrow.Microsecond || u.TimeZone != "" {
			t.Fatalf("ts is %s, want timestamp[us] (Iceberg timestamp)", u)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			v := "null"
			if avg.IsValid(i) {
				v = fmt.Sprint(avg.Value(i))
			}
			a := amt.Value(i).BigInt().Int64()
			out = append(out, fmt.Sprintf("%s|%d|%s|%v|%s|%d.%02d|%s|%d", sid.Value(i), ws.Value(i), v, hot.Value(i),
				time.UnixMicro(int64(ts.Value(i))).UTC().Format("2006-01-02T15:04:05"), a/100, a%100,
				day.Value(i).ToTime().Format("2006-01-02"), n.Value(i)))
		}
	}
	sort.Strings(out)
	return out
}

// snapshots returns the summaries of the table's snapshots of this sink.
func (tg *target) snapshots(t *testing.T) []ib.Properties {
	t.Helper()
	var out []ib.Properties
	for _, s := range tg.load(t).Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[PropSink] != "" {
			out = append(out, s.Summary.Properties)
		}
	}
	return out
}

// checkpoints renders the snapshots' (checkpoint, subtask) pairs, sorted,
// and fails on a pair committed twice.
func (tg *target) checkpoints(t *testing.T) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, p := range tg.snapshots(t) {
		k := p[PropCheckpointID] + "/" + p[PropSubtask]
		if seen[k] {
			t.Errorf("checkpoint/subtask %s committed twice", k)
		}
		seen[k] = true
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// dataFiles lists the sink's files in the table's data directory.
func (tg *target) dataFiles(t *testing.T) []string {
	t.Helper()
	tbl := tg.load(t)
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	dir := tbl.Location() + "/data"
	w := &writer{cfg: &config{fileTag: fileTagOf("windows")}, fio: fsys.(iceio.WriteFileIO), dataDir: dir}
	files, err := w.list()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		out = append(out, f.name)
	}
	sort.Strings(out)
	return out
}

// crash abandons s as a killed process would: the open file stays as it
// is, nothing more is committed.
func crash(s TxSink) {
	if s.cur != nil {
		s.cur.f.FileWriter.Close()
		s.cur = nil
	}
	s.Close()
}

func write(t *testing.T, s engine.Sink, from, to int) {
	t.Helper()
	if err := s.Write(batch(memory.DefaultAllocator, from, to, from%2 == 1)); err != nil {
		t.Fatal(err)
	}
}

// snapshotTo writes the sinks' state (sink i as subtask i) into
// checkpoint id, complete or not.
func snapshotTo(t *testing.T, store *checkpoint.Store, id uint64, complete bool, sinks ...TxSink) {
	t.Helper()
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sinks {
		snap := &engine.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: memory.DefaultAllocator,
			Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return w.Part("sink_windows", i, slots) }}
		if err := s.SnapshotState(snap); err != nil {
			t.Fatal(err)
		}
	}
	if complete {
		if err := w.Commit(checkpoint.Meta{Job: "test"}); err != nil {
			t.Fatal(err)
		}
	}
}

// restoreFrom restores s (subtask of par) from complete checkpoint id.
func restoreFrom(t *testing.T, store *checkpoint.Store, s TxSink, id uint64, subtask, par int) error {
	t.Helper()
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Restore{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: par, Subtask: subtask}
	for _, pi := range cp.PartsOf("sink_windows") {
		part, err := cp.ReadPart(pi.Operator, pi.Subtask)
		if err != nil {
			t.Fatal(err)
		}
		defer part.Release()
		r.Parts = append(r.Parts, part)
	}
	return s.RestoreState(r)
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.Strings(out)
	return out
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// diff describes how got differs from want, briefly.
func diff(got, want []string) string {
	g := map[string]int{}
	for _, s := range got {
		g[s]++
	}
	var missing, extra []string
	for _, s := range want {
		if g[s] == 0 {
			missing = append(missing, s)
		} else {
			g[s]--
		}
	}
	for s, n := range g {
		for range n {
			extra = append(extra, s)
		}
	}
	sort.Strings(extra)
	trim := func(x []string) []string {
		if len(x) > 5 {
			return append(x[:5:5], "...")
		}
		return x
	}
	return fmt.Sprintf("%d rows, want %d; missing %d %v; extra %d %v", len(got), len(want), len(missing), trim(missing), len(extra), trim(extra))
}
