package stateio

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
)

// sameRecords fails unless got holds the part's columns and rows, in
// order (schema metadata aside).
func sameRecords(t *testing.T, what string, got []arrow.RecordBatch, p *checkpoint.Part) {
	t.Helper()
	if len(got) == 0 {
		t.Fatalf("%s: no records", what)
	}
	if !sameFields(got[0].Schema(), p.Schema) {
		t.Fatalf("%s: schema\n%s\nwant\n%s", what, got[0].Schema(), p.Schema)
	}
	for c := 0; c < p.Schema.NumFields(); c++ {
		g, w := column(t, got, c), column(t, p.Records, c)
		if !array.Equal(g, w) {
			t.Errorf("%s: column %s:\ngot  %v\nwant %v", what, p.Schema.Field(c).Name, g, w)
		}
		g.Release()
		w.Release()
	}
}

func column(t *testing.T, recs []arrow.RecordBatch, c int) arrow.Array {
	t.Helper()
	var parts []arrow.Array
	for _, r := range recs {
		parts = append(parts, r.Column(c))
	}
	a, err := array.Concatenate(parts, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestExportParquetAndArrow(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	for _, f := range []Format{Parquet, Arrow} {
		out := t.TempDir()
		files, err := Export(context.Background(), c, ExportOptions{Format: f, Dir: out, WriteParquet: parquet.Write})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range files {
			names = append(names, filepath.Base(e.Path))
		}
		want := []string{"source-0." + string(f), "window_agg-0." + string(f), "window_agg-1." + string(f)}
		if !slices.Equal(names, want) || files[1].Rows != 3 {
			t.Fatalf("%s: wrote %v", f, files)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 3 {
			t.Errorf("%s: %d files in the output directory, want 3 (no temporary files)", f, len(ents))
		}
		for _, info := range c.Parts() {
			p, err := c.ReadPart(info.Operator, info.Subtask)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(out, strings.TrimSuffix(info.File, ".arrow")+"."+string(f))
			var got []arrow.RecordBatch
			var md arrow.Metadata
			if f == Parquet {
				got, md = readParquet(t, path)
			} else {
				got, md = readArrow(t, path)
			}
			sameRecords(t, path, got, p)
			if v, _ := md.GetValue(checkpoint.MetaOperator); v != info.Operator {
				t.Errorf("%s: metadata %s = %q", path, checkpoint.MetaOperator, v)
			}
			release(got)
			p.Release()
		}
	}
}

func readParquet(t *testing.T, path string) ([]arrow.RecordBatch, arrow.Metadata) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var recs []arrow.RecordBatch
	tr := array.NewTableReader(tbl, 1<<20)
	defer tr.Release()
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		recs = append(recs, r)
	}
	kv := pf.MetaData().KeyValueMetadata()
	return recs, arrow.NewMetadata(kv.Keys(), kv.Values())
}

func readArrow(t *testing.T, path string) ([]arrow.RecordBatch, arrow.Metadata) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	return recs, r.Schema().Metadata()
}

func TestExportSlot(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	out := t.TempDir()
	files, err := Export(context.Background(), c, ExportOptions{Format: Arrow, Dir: out, Selection: Selection{Slot: "window_agg"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Rows != 2 || files[1].Rows != 1 {
		t.Fatalf("wrote %v", files)
	}
	recs, _ := readArrow(t, files[0].Path)
	defer release(recs)
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			if s := r.Column(0).(*array.String).Value(i); s != "window_agg" {
				t.Errorf("row of slot %s exported", s)
			}
		}
	}
}

// Rows of the selected slot that are not adjacent are gathered.
func TestFilterSlotRuns(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	p, err := c.ReadPart("source", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema)
	defer b.Release()
	for i := 0; i < 6; i++ {
		if i%2 == 0 {
			b.Raw("watermark")
			b.Value("watermark").(*array.Int64Builder).Append(int64(i))
		} else {
			b.Raw("source_offsets")
			b.Value("partition").(*array.Int32Builder).Append(int32(i))
		}
	}
	rec, _ := b.NewRecord()
	defer rec.Release()
	got, err := filterSlot(memory.DefaultAllocator, rec, "watermark")
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.NumRows() != 3 || got.Column(7).(*array.Int64).Value(2) != 4 {
		t.Fatalf("got %v", got)
	}
}

// sameFields compares two schemas without their metadata.
func sameFields(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}
