package stateio

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/checkpoint"
)

func TestExportIceberg(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	out := t.TempDir()
	c7 := writeCheckpoint(t, dir, 7, baseState())
	st := baseState()
	st.offsets[0] = 2000
	c8 := writeCheckpoint(t, dir, 8, st)
	for _, c := range []*checkpoint.Checkpoint{c7, c8} {
		got, err := Export(ctx, c, ExportOptions{Format: Iceberg, Dir: out})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Path != "clink.source" || got[0].Rows != 3 || got[1].Path != "clink.window_agg" || got[1].Rows != 4 {
			t.Fatalf("exported %v", got)
		}
	}
	// A later state with one more column widens the table.
	store, _ := checkpoint.NewStore(dir, checkpoint.Options{})
	w, _ := store.Begin(9)
	slots := []checkpoint.Slot{{Name: "window_agg", Values: append(append([]arrow.Field{}, aggSlots[0].Values...), arrow.Field{Name: "max_temp", Type: arrow.PrimitiveTypes.Uint64})}}
	p, err := w.Part("window_agg", 0, slots)
	if err != nil {
		t.Fatal(err)
	}
	b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
	b.Windowed("window_agg", 1, `["new"]`, 0, 10)
	b.Value("max_temp").(*array.Uint64Builder).Append(1 << 63)
	writeRecord(t, p, b)
	if err := w.Commit(checkpoint.Meta{Job: "sensors"}); err != nil {
		t.Fatal(err)
	}
	c9, _ := store.Open(9)
	if _, err := Export(ctx, c9, ExportOptions{Format: Iceberg, Dir: out, Selection: Selection{Operator: "window_agg"}}); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite", filepath.Join(out, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sqlcat.NewCatalog("clink", db, sqlcat.SQLite, iceberg.Properties{})
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
	// The latest snapshot holds both exports; the first only checkpoint 7.
	rows := scan(t, src.Scan(table.WithSnapshotID(snaps[0].SnapshotID), table.WithSelectedFields("slot", "partition", "offset")))
	if want := "source_offsets 0 1284|source_offsets 1 977|watermark null null"; rows != want {
		t.Errorf("snapshot 1: %s, want %s", rows, want)
	}
	rows = scan(t, src.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("partition"), int32(0))), table.WithSelectedFields("offset")))
	if rows != "1284|2000" {
		t.Errorf("offsets of partition 0: %s", rows)
	}

	agg, err := cat.LoadTable(ctx, table.Identifier{"clink", "window_agg"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(agg.Metadata().Snapshots()); n != 3 {
		t.Errorf("clink.window_agg has %d snapshots, want 3", n)
	}
	rows = scan(t, agg.Scan(table.WithSelectedFields("key", "window_start", "sum_amount", "last_seen", "max_temp"),
		table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("key_group"), int32(1)))))
	if want := `["new"] 0 null null 9223372036854775808`; rows != want {
		t.Errorf("row of checkpoint 9: %s, want %s", rows, want)
	}
	rows = scan(t, agg.Scan(table.WithSelectedFields("key", "window_start", "sum_amount", "last_seen", "max_temp"),
		table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("key_group"), int32(100)))))
	if want := `["sensor-02"] 0 -7.05 "2026-03-01 08:00:01.000000" null|["sensor-02"] 0 -7.05 "2026-03-01 08:00:01.000000" null`; rows != want {
		t.Errorf("rows of sensor-02: %s, want %s", rows, want)
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
				col := rec.Column(c)
				if s, ok := col.(*array.String); ok && !s.IsNull(i) {
					vals = append(vals, s.Value(i))
					continue
				}
				vals = append(vals, string(appendValue(nil, col, i)))
			}
			rows = append(rows, strings.Join(vals, " "))
		}
	}
	slices.Sort(rows)
	return strings.Join(rows, "|")
}
