package iceberg

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/connectors/postgres/pgtest"
)

var (
	aggValues = []arrow.Field{
		{Name: "sum_amount", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}},
		{Name: "last_seen", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "small", Type: arrow.PrimitiveTypes.Int8},
	}
	sourceSlots = []checkpoint.Slot{{Name: "source_offsets", Raw: true, Values: []arrow.Field{
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	}}}
)

// writeCheckpoint writes checkpoint id: window_agg (one row per key, its
// value columns values) and source (offsets per partition).
func writeCheckpoint(t *testing.T, dir string, id uint64, keys []string, values []arrow.Field, offsets []int64) *checkpoint.Checkpoint {
	t.Helper()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	write := func(op string, slots []checkpoint.Slot, fill func(*checkpoint.RowBuilder)) {
		p, err := w.Part(op, 0, slots)
		if err != nil {
			t.Fatal(err)
		}
		b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
		defer b.Release()
		fill(b)
		rec, err := b.NewRecord()
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		if err := p.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("window_agg", []checkpoint.Slot{{Name: "window_agg", Values: values}}, func(b *checkpoint.RowBuilder) {
		for i, k := range keys {
			b.Windowed("window_agg", int32(i), `["`+k+`"]`, 0, 60000)
			b.Value("sum_amount").(*array.Decimal128Builder).Append(decimal128.FromI64(int64(-705 * (i + 1))))
			b.Value("last_seen").(*array.TimestampBuilder).Append(1772352000123)
			b.Value("small").(*array.Int8Builder).Append(int8(i))
			if len(values) > 3 {
				b.Value("max_id").(*array.Uint64Builder).Append(1<<64 - 1)
			}
		}
	})
	if offsets != nil {
		write("source", sourceSlots, func(b *checkpoint.RowBuilder) {
			for p, off := range offsets {
				b.Raw("source_offsets")
				b.Value("partition").(*array.Int32Builder).Append(int32(p))
				b.Value("offset").(*array.Int64Builder).Append(off)
			}
		})
	}
	if err := w.Commit(checkpoint.Meta{Job: "sensors"}); err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestExport(t *testing.T) {
	ctx := context.Background()
	dir, out := t.TempDir(), t.TempDir()
	c7 := writeCheckpoint(t, dir, 7, []string{"a", "b"}, aggValues, []int64{1284, 977})
	c8 := writeCheckpoint(t, dir, 8, []string{"a", "b"}, aggValues, []int64{2000, 977})
	for _, c := range []*checkpoint.Checkpoint{c7, c8} {
		got, err := Export(ctx, c, Options{Dir: out})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != (stateio.Exported{Path: "clink.source", Rows: 2}) || got[1] != (stateio.Exported{Path: "clink.window_agg", Rows: 2}) {
			t.Fatalf("exported %v", got)
		}
	}
	// A later state with another column (UBIGINT, which Iceberg lacks)
	// widens the table; older rows read it as null.
	wider := append(append([]arrow.Field{}, aggValues...), arrow.Field{Name: "max_id", Type: arrow.PrimitiveTypes.Uint64})
	c9 := writeCheckpoint(t, dir, 9, []string{"c"}, wider, nil)
	if _, err := Export(ctx, c9, Options{Dir: out, Selection: stateio.Selection{Operator: "window_agg"}}); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", filepath.Join(out, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sqlcat.NewCatalog("clink", db, sqlcat.SQLite, ib.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()

	src, err := cat.LoadTable(ctx, table.Identifier{"clink", "source"})
	if err != nil {
		t.Fatal(err)
	}
	snaps := src.Metadata().Snapshots()
	if len(snaps) != 2 || snaps[0].Summary.Properties[PropCheckpointID] != "7" || snaps[1].Summary.Properties[PropCheckpointID] != "8" || snaps[1].Summary.Properties[PropJob] != "sensors" {
		t.Fatalf("snapshots of clink.source: %+v", snaps)
	}
	// Each snapshot adds its checkpoint's rows: the first holds checkpoint 7.
	if got := scan(t, src.Scan(table.WithSnapshotID(snaps[0].SnapshotID), table.WithSelectedFields("slot", "partition", "offset"))); got != "source_offsets 0 1284|source_offsets 1 977" {
		t.Errorf("snapshot of checkpoint 7: %s", got)
	}
	if got := scan(t, src.Scan(table.WithRowFilter(ib.EqualTo(ib.Reference("partition"), int32(0))), table.WithSelectedFields("offset", ColCheckpointID))); got != "1284 7|2000 8" {
		t.Errorf("offsets of partition 0: %s", got)
	}
	if got := scan(t, src.Scan(table.WithRowFilter(ib.EqualTo(ib.Reference(ColCheckpointID), int64(8))), table.WithSelectedFields("offset"))); got != "2000|977" {
		t.Errorf("offsets of checkpoint 8: %s", got)
	}

	agg, err := cat.LoadTable(ctx, table.Identifier{"clink", "window_agg"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(agg.Metadata().Snapshots()); n != 3 {
		t.Errorf("clink.window_agg has %d snapshots, want 3", n)
	}
	got := scan(t, agg.Scan(table.WithSelectedFields("key", "window_start", "sum_amount", "last_seen", "small", "max_id")))
	want := strings.Join([]string{
		`["a"] 0 -7.05 2026-03-01T08:00:00.123Z 0 (null)`,
		`["a"] 0 -7.05 2026-03-01T08:00:00.123Z 0 (null)`,
		`["b"] 0 -14.1 2026-03-01T08:00:00.123Z 1 (null)`,
		`["b"] 0 -14.1 2026-03-01T08:00:00.123Z 1 (null)`,
		`["c"] 0 -7.05 2026-03-01T08:00:00.123Z 0 18446744073709551615`,
	}, "|")
	if got != want {
		t.Errorf("clink.window_agg:\n%s\nwant\n%s", strings.ReplaceAll(got, "|", "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
}

func TestCatalogURI(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 1, []string{"a"}, aggValues, nil)
	out := t.TempDir()
	elsewhere := filepath.Join(t.TempDir(), "cat.db")
	if _, err := Export(context.Background(), c, Options{Dir: out, Catalog: "sqlite://" + elsewhere}); err != nil {
		t.Fatal(err)
	}
	if _, err := Export(context.Background(), c, Options{Dir: out, Catalog: "mysql://x"}); err == nil || !strings.Contains(err.Error(), "give sqlite://PATH or postgres://") {
		t.Errorf("unknown catalog: %v", err)
	}
}

// scan renders the scanned rows, sorted, as "v v v|v v v".
func scan(t *testing.T, s *table.Scan) string {
	t.Helper()
	tbl, err := s.ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var rows []string
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var vals []string
			for c := 0; c < int(rec.NumCols()); c++ {
				vals = append(vals, rec.Column(c).ValueStr(i))
			}
			rows = append(rows, strings.Join(vals, " "))
		}
	}
	slices.Sort(rows)
	return strings.Join(rows, "|")
}

// TestPostgresCatalog runs against the PostgreSQL server that
// CLINK_ICEBERG_POSTGRES names (a database URL, e.g.
// postgres://clink:clink@127.0.0.1:5432/icecat?sslmode=disable), else
// against one pgtest starts (skipped without the binaries unless
// CLINK_REQUIRE_POSTGRES=1). It drops the table clink.window_agg there
// first and last.
func TestPostgresCatalog(t *testing.T) {
	uri := os.Getenv("CLINK_ICEBERG_POSTGRES")
	if uri == "" {
		uri = pgtest.Start(t).CreateDatabase(t, "icecat")
	}
	ctx := context.Background()
	dir, out := t.TempDir(), t.TempDir()
	cat, err := openCatalog(ctx, Options{Dir: out, Catalog: uri})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ident := table.Identifier{Namespace, "window_agg"}
	drop := func() { cat.DropTable(ctx, ident) }
	drop()
	t.Cleanup(drop)
	for id := uint64(1); id <= 2; id++ {
		c := writeCheckpoint(t, dir, id, []string{"a"}, aggValues, nil)
		got, err := Export(ctx, c, Options{Dir: out, Catalog: uri})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Rows != 1 {
			t.Fatalf("exported %v", got)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got := scan(t, tbl.Scan(table.WithSelectedFields("key", "sum_amount"))); got != `["a"] -7.05|["a"] -7.05` {
		t.Errorf("rows %s", got)
	}
	if snaps := tbl.Metadata().Snapshots(); len(snaps) != 2 || snaps[1].Summary.Properties[PropCheckpointID] != "2" {
		t.Errorf("snapshots %+v", snaps)
	}
}
