package iceberg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg/spec"
)

func open(t *testing.T, opts map[string]string) (*config, error) {
	t.Helper()
	all := map[string]string{"connector": "iceberg"}
	for k, v := range opts {
		all[k] = v
	}
	vo, err := spec.Connector{}.Spec().Validate(all)
	if err != nil {
		return nil, err
	}
	return newConfig(&connectors.Table{Name: "windows", Schema: testSchema, Options: vo})
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		err  string // "" = valid
	}{
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/tmp/wh"}, ""},
		{map[string]string{"catalog_uri": "/tmp/c.sqlite", "warehouse": "s3://bucket/wh"}, ""},
		{map[string]string{"catalog_uri": "postgres://u@h/db", "warehouse": "file:///tmp/wh"}, ""},
		{map[string]string{"catalog_type": "rest", "catalog_uri": "http://rest:8181"}, ""},
		{map[string]string{"catalog_uri": "mysql://h/db", "warehouse": "/tmp/wh"}, "neither a SQLite database"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db"}, "needs option 'warehouse'"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "gs://b/w"}, "unknown scheme"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "s3:///w"}, "has no bucket"},
		{map[string]string{"catalog_type": "rest", "catalog_uri": "rest:8181"}, "http:// or https://"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "table": "a.b"}, "not a table name"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "namespace": "a..b"}, "empty level"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "target_file_size": "big"}, "not a positive size"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "commit_interval_ms": "0"}, "not positive"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "s3.secret_key": "env://"}, "names no variable"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "catalog_typ": "sql"}, "did you mean 'catalog_type'"},
		{map[string]string{"warehouse": "/w"}, "needs option 'catalog_uri'"},
	} {
		_, err := open(t, c.opts)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%v: %v", c.opts, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: error %v, want one saying %q", c.opts, err, c.err)
		}
	}
	cfg, err := open(t, map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/tmp/wh", "s3.path_style": "true",
		"namespace": "a.b", "sink_id": "job-7"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.ident(), "."); got != "a.b.windows" {
		t.Errorf("identifier %s", got)
	}
	if cfg.warehouse != "file:///tmp/wh" || cfg.io["s3.force-virtual-addressing"] != "false" || cfg.fileTag != fileTagOf("job-7") {
		t.Errorf("config %+v", cfg)
	}
}

// No error names a secret: not a password in the catalog URI, not one
// from catalog_password, not an S3 key.
func TestNoSecretInErrors(t *testing.T) {
	t.Setenv("CLINK_TEST_PW", "env-secret-pw")
	t.Setenv("CLINK_TEST_S3_SECRET", "s3-secret-key")
	for _, opts := range []map[string]string{
		{"catalog_uri": "postgres://clink:inline-secret-pw@127.0.0.1:1/db?connect_timeout=1", "warehouse": "/tmp/wh"},
		{"catalog_uri": "postgres://clink@127.0.0.1:1/db?connect_timeout=1", "catalog_password": "env://CLINK_TEST_PW", "warehouse": "/tmp/wh"},
		{"catalog_uri": "postgres://clink@127.0.0.1:1/db", "catalog_password": "env://CLINK_TEST_UNSET", "warehouse": "/tmp/wh"},
		{"catalog_uri": "sqlite://" + t.TempDir() + "/c.db", "warehouse": "s3://nobucket/wh", "s3.endpoint": "http://127.0.0.1:1",
			"s3.access_key": "key", "s3.secret_key": "env://CLINK_TEST_S3_SECRET"},
	} {
		all := connectors.Options{"connector": "iceberg"}
		for k, v := range opts {
			all[k] = v
		}
		s, err := NewSink(&connectors.Table{Name: "windows", Schema: testSchema, Options: all,
			Runtime: connectors.Runtime{Mem: memory.DefaultAllocator, Parallelism: 1}})
		if err != nil {
			t.Fatal(err)
		}
		s.(TxSink).StartTransactions()
		err = s.Write(batch(memory.DefaultAllocator, 0, 3, false))
		if err == nil {
			err = s.(TxSink).PreCommit()
		}
		s.Close()
		if err == nil {
			t.Errorf("%v: no error", opts)
			continue
		}
		t.Log(err)
		for _, secret := range []string{"inline-secret-pw", "env-secret-pw", "s3-secret-key"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error names a secret: %v", err)
			}
		}
	}
}

// An existing table: columns matched by name in any order, ignoring case,
// promoted types accepted (int to long, timestamp to timestamptz, a wider
// decimal), a column the Clink table lacks written as nulls; a required
// column without a Clink column, or a type that cannot be written, is
// refused when the sink opens.
func TestExistingTable(t *testing.T) {
	tg := sqliteLocal(t)
	cat := tg.read(t)
	ctx := context.Background()
	if err := cat.CreateNamespace(ctx, table.Identifier{"sensors"}, nil); err != nil {
		t.Fatal(err)
	}
	create := func(name string, fields ...ib.NestedField) {
		t.Helper()
		if _, err := cat.CreateTable(ctx, table.Identifier{"sensors", name}, ib.NewSchema(0, fields...)); err != nil {
			t.Fatal(err)
		}
	}
	create("windows",
		ib.NestedField{ID: 1, Name: "extra", Type: ib.PrimitiveTypes.String},
		ib.NestedField{ID: 2, Name: "N", Type: ib.PrimitiveTypes.Int64},
		ib.NestedField{ID: 3, Name: "ts", Type: ib.PrimitiveTypes.TimestampTz},
		ib.NestedField{ID: 4, Name: "amount", Type: ib.DecimalTypeOf(20, 2)},
		ib.NestedField{ID: 5, Name: "day", Type: ib.PrimitiveTypes.Date},
		ib.NestedField{ID: 6, Name: "hot", Type: ib.PrimitiveTypes.Bool},
		ib.NestedField{ID: 7, Name: "avg_temp", Type: ib.PrimitiveTypes.Float64},
		ib.NestedField{ID: 8, Name: "window_start", Type: ib.PrimitiveTypes.Int64, Required: true},
		ib.NestedField{ID: 9, Name: "sensor_id", Type: ib.PrimitiveTypes.String},
	)
	s := tg.txSink(t, 0, 1, "create_table", "false")
	write(t, s, 0, 20)
	if err := s.PreCommit(); err != nil {
		t.Fatal(err)
	}
	snapshotTo(t, newStore(t), 1, true, s)
	if err := s.Commit(1); err != nil {
		t.Fatal(err)
	}
	tbl := tg.load(t)
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 20 {
		t.Fatalf("%d rows", at.NumRows())
	}
	for i, f := range at.Schema().Fields() {
		switch f.Name {
		case "extra":
			if n := at.Column(i).NullN(); n != 20 {
				t.Errorf("extra has %d nulls, want 20", n)
			}
		case "ts":
			if tt := f.Type.(*arrow.TimestampType); tt.TimeZone == "" {
				t.Errorf("ts is %s, want a zoned timestamp", tt)
			}
		case "amount":
			if !arrow.TypeEqual(f.Type, &arrow.Decimal128Type{Precision: 20, Scale: 2}) {
				t.Errorf("amount is %s", f.Type)
			}
		}
	}

	for _, c := range []struct {
		fields []ib.NestedField
		err    string
	}{
		{[]ib.NestedField{{ID: 1, Name: "sensor_id", Type: ib.PrimitiveTypes.String}}, "not a column of the Iceberg table"},
		{append(allOptional(), ib.NestedField{ID: 20, Name: "must", Type: ib.PrimitiveTypes.Int64, Required: true}), "column must is required"},
		{replace(allOptional(), "window_start", ib.PrimitiveTypes.String), "cannot be written into Iceberg column window_start"},
		{replace(allOptional(), "avg_temp", ib.PrimitiveTypes.Float32), "cannot be written into Iceberg column avg_temp"},
	} {
		name := "t" + strings.ReplaceAll(strings.Fields(c.err)[0], " ", "")
		name += strings.Fields(c.err)[len(strings.Fields(c.err))-1]
		create(name, c.fields...)
		s := tg.txSink(t, 0, 1, "table", name, "create_table", "false")
		err := s.Write(batch(memory.DefaultAllocator, 0, 1, false))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("table %s: %v, want an error saying %q", name, err, c.err)
		}
	}
	s2 := tg.txSink(t, 0, 1, "table", "missing", "create_table", "false")
	if err := s2.PreCommit(); err == nil || !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("a missing table with create_table false: %v", err)
	}
}

func allOptional() []ib.NestedField {
	sc, err := newSchema(testSchema)
	if err != nil {
		panic(err)
	}
	return sc.Fields()
}

func replace(fields []ib.NestedField, name string, typ ib.Type) []ib.NestedField {
	for i := range fields {
		if fields[i].Name == name {
			fields[i].Type = typ
		}
	}
	return fields
}
