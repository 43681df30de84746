package stateio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
)

// TestExportFile: one Parquet file holds every part's rows, with the
// union of the parts' value columns (nulls where a part has none) and the
// operator and subtask of each row; arrow-go's pqarrow reads it back, and
// the allocator is back to zero.
func TestExportFile(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	path := filepath.Join(t.TempDir(), "sub", "state.parquet")
	e, err := ExportFile(context.Background(), c, FileOptions{Path: path, Mem: mem, NewParquetWriter: parquet.NewWriter})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if e.Path != path || e.Rows != 7 {
		t.Fatalf("exported %+v", e)
	}
	recs, md := readParquet(t, path)
	defer release(recs)
	var names []string
	for _, f := range recs[0].Schema().Fields() {
		names = append(names, f.Name)
	}
	want := "slot key_group key window_start window_end partition offset watermark sum_amount cnt last_seen avg_temp tags operator subtask"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("columns %s\nwant    %s", got, want)
	}
	if v, _ := md.GetValue("clink.checkpoint_id"); v != "7" {
		t.Errorf("clink.checkpoint_id %q", v)
	}
	col := func(name string) arrow.Array {
		i := recs[0].Schema().FieldIndices(name)[0]
		return column(t, recs, i)
	}
	ops, subs, parts, cnt := col("operator").(*array.String), col("subtask").(*array.Int32), col("partition").(*array.Int32), col("cnt").(*array.Int64)
	defer ops.Release()
	defer subs.Release()
	defer parts.Release()
	defer cnt.Release()
	var rows []string
	for i := 0; i < ops.Len(); i++ {
		s := ops.Value(i) + "/" + string(rune('0'+subs.Value(i)))
		switch {
		case ops.Value(i) == "source" && (cnt.IsValid(i)):
			t.Errorf("row %d of source has cnt %d", i, cnt.Value(i))
		case ops.Value(i) == "window_agg" && parts.IsValid(i):
			t.Errorf("row %d of window_agg has partition %d", i, parts.Value(i))
		}
		rows = append(rows, s)
	}
	if got := strings.Join(rows, " "); got != "source/0 source/0 source/0 window_agg/0 window_agg/0 window_agg/0 window_agg/1" {
		t.Errorf("rows' parts: %s", got)
	}
	if !parts.IsValid(0) || parts.Value(1) != 1 || cnt.Value(3) != 10 {
		t.Errorf("values: partition %v, cnt %v", parts, cnt)
	}

	// A slot: its rows only, of the parts that declare it.
	e, err = ExportFile(context.Background(), c, FileOptions{Selection: Selection{Slot: "window_agg"}, Path: path, NewParquetWriter: parquet.NewWriter})
	if err != nil || e.Rows != 3 {
		t.Fatalf("slot window_agg: %+v %v", e, err)
	}
}

// TestExportFileTypeClash: one column name with two types in two
// operators is an error naming both parts, and writes no file.
func TestExportFileTypeClash(t *testing.T) {
	dir := t.TempDir()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		typ  arrow.DataType
	}{{"a", arrow.PrimitiveTypes.Int64}, {"b", arrow.BinaryTypes.String}} {
		p, err := w.Part(op.name, 0, []checkpoint.Slot{{Name: "s", Raw: true, Values: []arrow.Field{{Name: "v", Type: op.typ}}}})
		if err != nil {
			t.Fatal(err)
		}
		b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
		b.Raw("s")
		b.Value("v").AppendNull()
		writeRecord(t, p, b)
	}
	if err := w.Commit(checkpoint.Meta{Job: "clash"}); err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(3)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.parquet")
	_, err = ExportFile(context.Background(), c, FileOptions{Path: path, NewParquetWriter: parquet.NewWriter})
	if err == nil || !strings.Contains(err.Error(), "column v is int64 in") || !strings.Contains(err.Error(), "a-0.arrow but utf8 in") || !strings.Contains(err.Error(), "b-0.arrow") {
		t.Fatalf("clash: %v", err)
	}
	if fileExists(path) {
		t.Errorf("%s written", path)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
