package objectstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "window_start", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "avg_temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// batch builds rows [from, to): row i is ("s<i%5>", i, i/10 or null
// every 7th). With sparse, the batch holds twice the rows and a selection
// vector picks the wanted ones (the sink must compact it). Its column
// names differ from the table's, as a query's do.
func batch(mem memory.Allocator, from, to int, sparse bool) *vector.Batch {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, sch)
	defer b.Release()
	var sel []int32
	for i := from; i < to; i++ {
		if sparse {
			b.Field(0).(*array.StringBuilder).Append("junk")
			b.Field(1).(*array.Int64Builder).Append(-1)
			b.Field(2).(*array.Float64Builder).Append(-1)
			sel = append(sel, int32(2*(i-from)+1))
		}
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("s%d", i%5))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%7 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 10)
		}
	}
	return &vector.Batch{Rec: b.NewRecordBatch(), Sel: sel}
}

// want lists rows [from, to) as readRows renders them.
func want(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		v := "null"
		if i%7 != 0 {
			v = fmt.Sprint(float64(i) / 10)
		}
		out = append(out, fmt.Sprintf("s%d|%d|%s", i%5, i, v))
	}
	sort.Strings(out)
	return out
}

// readRows reads a Parquet file with arrow-go's reader and renders its
// rows, checking the schema is the table's.
func readRows(t *testing.T, data []byte) []string {
	t.Helper()
	rdr, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not a Parquet file (%d bytes): %v", len(data), err)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i, f := range tbl.Schema().Fields() {
		w := testSchema.Field(i)
		if f.Name != w.Name || !arrow.TypeEqual(f.Type, w.Type) || f.Nullable != w.Nullable {
			t.Fatalf("schema %s, want %s", tbl.Schema(), testSchema)
		}
	}
	tr := array.NewTableReader(tbl, 0)
	defer tr.Release()
	var out []string
	for tr.Next() {
		rec := tr.RecordBatch()
		s := rec.Column(0).(*array.String)
		w := rec.Column(1).(*array.Int64)
		v := rec.Column(2).(*array.Float64)
		for i := 0; i < int(rec.NumRows()); i++ {
			val := "null"
			if v.IsValid(i) {
				val = fmt.Sprint(v.Value(i))
			}
			out = append(out, fmt.Sprintf("%s|%d|%s", s.Value(i), w.Value(i), val))
		}
	}
	return out
}

// target is where a test sink writes and how to look at it.
type target struct {
	path   string            // the sink's 'path'
	opts   map[string]string // store options
	list   func(t *testing.T, prefix string) []string
	get    func(t *testing.T, key string) []byte
	pub    string // listing prefix of the published files
	stage  string // listing prefix of the staged files
	bucket string // listing prefix of everything the test wrote
}

func localTarget(t *testing.T) *target {
	dir := t.TempDir()
	return &target{
		path: filepath.Join(dir, "out", "windows"),
		list: func(t *testing.T, prefix string) []string {
			keys, err := localDir{}.List(context.Background(), prefix)
			if err != nil {
				t.Fatal(err)
			}
			return keys
		},
		get: func(t *testing.T, key string) []byte {
			b, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		pub:    filepath.Join(dir, "out", "windows") + "/",
		stage:  filepath.Join(dir, "out", "_clink_staging", "windows") + "/",
		bucket: dir + "/",
	}
}

// serverTarget writes to bucket "lake", prefix out/windows on s.
func serverTarget(t *testing.T, s *ostest.Server) *target {
	ctx := context.Background()
	if err := s.Client.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	return &target{
		path: s.URL("lake", "out/windows"),
		opts: s.Options,
		list: func(t *testing.T, prefix string) []string {
			keys, err := s.Client.List(ctx, "lake", prefix)
			if err != nil {
				t.Fatal(err)
			}
			return keys
		},
		get: func(t *testing.T, key string) []byte {
			b, err := s.Client.Get(ctx, "lake", key)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		pub: "out/windows/", stage: "out/_clink_staging/windows/", bucket: "",
	}
}

func (tg *target) table(subtask, par int, extra ...string) *connectors.Table {
	o := connectors.Options{"connector": "filesystem", "format": "parquet", "path": tg.path}
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
	return tx
}

var partName = regexp.MustCompile(`^part-[0-9a-f]{8}-\d+-\d+(-\d+)?\.parquet$`)

// published reads every published object and returns the rows, sorted;
// every object must be a complete Parquet file with a final name.
func (tg *target) published(t *testing.T) []string {
	t.Helper()
	var rows []string
	for _, k := range tg.list(t, tg.pub) {
		name := strings.TrimPrefix(k, tg.pub)
		if !partName.MatchString(name) {
			t.Errorf("published object %s is not a part file", k)
			continue
		}
		rows = append(rows, readRows(t, tg.get(t, k))...)
	}
	sort.Strings(rows)
	return rows
}

func (tg *target) staged(t *testing.T) []string { return tg.list(t, tg.stage) }

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

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	sort.Strings(out)
	return out
}
