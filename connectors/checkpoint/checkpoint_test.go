package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	chk "github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

var (
	aggSlots = []chk.Slot{
		{Name: "window_agg", Values: []arrow.Field{
			{Name: "cnt", Type: arrow.PrimitiveTypes.Uint64},
			{Name: "seen", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
			{Name: "label", Type: arrow.BinaryTypes.LargeString},
			{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		}},
	}
	sourceSlots = []chk.Slot{
		{Name: "source_offsets", Raw: true, Values: []arrow.Field{
			{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
			{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		}},
	}
)

// writeCheckpoint writes checkpoint 1: window_agg with two subtasks, a
// source with one.
func writeCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	store, err := chk.NewStore(dir, chk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	part := func(op string, sub int, slots []chk.Slot, fill func(b *chk.RowBuilder)) {
		p, err := w.Part(op, sub, slots)
		if err != nil {
			t.Fatal(err)
		}
		b := chk.NewRowBuilder(memory.DefaultAllocator, p.Schema())
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
	for sub := 0; sub < 2; sub++ {
		part("window_agg", sub, aggSlots, func(b *chk.RowBuilder) {
			b.Windowed("window_agg", int32(sub), `["k`+string(rune('a'+sub))+`"]`, 0, 1000)
			b.Value("cnt").(*array.Uint64Builder).Append(1<<63 + uint64(sub))
			b.Value("seen").(*array.TimestampBuilder).Append(-1500) // -1.5 ms
			b.Value("label").(*array.LargeStringBuilder).Append("x")
		})
	}
	part("source", 0, sourceSlots, func(b *chk.RowBuilder) {
		for i := 0; i < 3; i++ {
			b.Raw("source_offsets")
			b.Value("partition").(*array.Int32Builder).Append(int32(i))
			b.Value("offset").(*array.Int64Builder).Append(int64(100 + i))
		}
	})
	if err := w.Commit(chk.Meta{Job: "test"}); err != nil {
		t.Fatal(err)
	}
	return store.Path(1)
}

func validate(t *testing.T, opts map[string]string) connectors.Options {
	t.Helper()
	o, err := spec.Validate(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestDDL(t *testing.T) {
	path := writeCheckpoint(t, t.TempDir())
	ddl, notes, err := DDL("state", map[string]string{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CREATE TABLE state (\n  `slot` STRING,\n  `key_group` INT,\n  `key` STRING,\n  `window_start` BIGINT,\n  `window_end` BIGINT,\n",
		"  `partition` INT,\n  `offset` BIGINT,\n  `cnt` DECIMAL(20, 0),\n  `seen` TIMESTAMP(3),\n  `label` STRING,\n  `operator` STRING,\n  `subtask` INT\n)",
		"WITH ('connector' = 'checkpoint', 'path' = '" + path + "')",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %q:\n%s", want, ddl)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "column tags (list<item: utf8, nullable>) of window_agg is left out") {
		t.Errorf("notes %q", notes)
	}
	_, _, err = DDL("state", map[string]string{"path": path, "operator": "nope"})
	if err == nil || !strings.Contains(err.Error(), `no operator "nope" (operators: source, window_agg)`) {
		t.Errorf("unknown operator: %v", err)
	}
}

// run runs a source over a table of the given columns and returns its
// rows as "v v v" lines.
func run(t *testing.T, opts map[string]string, fields []arrow.Field, par, sub int) ([]string, error) {
	t.Helper()
	tbl := &connectors.Table{Name: "state", Schema: arrow.NewSchema(fields, nil), Options: validate(t, opts), EventTimeCol: -1,
		Runtime: connectors.Runtime{Mem: memory.DefaultAllocator, Parallelism: par, Subtask: sub}}
	src, err := Connector{}.NewSource(tbl)
	if err != nil {
		return nil, err
	}
	var rows []string
	err = src.Run(context.Background(), func(m engine.Message) error {
		if m.Kind != engine.KindData {
			return nil
		}
		b := m.Batch
		defer b.Release()
		if !b.Schema().Equal(tbl.Schema) {
			t.Fatalf("batch schema %s, want %s", b.Schema(), tbl.Schema)
		}
		b.Rows(func(i int) {
			var vals []string
			for c := 0; c < int(b.Rec.NumCols()); c++ {
				vals = append(vals, b.Column(c).ValueStr(i))
			}
			rows = append(rows, strings.Join(vals, " "))
		})
		return nil
	})
	return rows, err
}

func TestSource(t *testing.T) {
	path := writeCheckpoint(t, t.TempDir())
	fields := []arrow.Field{
		{Name: "operator", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "SUBTASK", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "slot", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "cnt", Type: &arrow.Decimal128Type{Precision: 20, Scale: 0}, Nullable: true},
		{Name: "seen", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "missing", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	opts := map[string]string{"connector": "checkpoint", "path": filepath.Dir(path)}
	rows, err := run(t, opts, fields, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"source 0 source_offsets (null) (null) (null) (null) 100 (null)",
		"source 0 source_offsets (null) (null) (null) (null) 101 (null)",
		"source 0 source_offsets (null) (null) (null) (null) 102 (null)",
		`window_agg 0 window_agg ["ka"] 9223372036854775808 1969-12-31T23:59:59.998Z x (null) (null)`,
		`window_agg 1 window_agg ["kb"] 9223372036854775809 1969-12-31T23:59:59.998Z x (null) (null)`,
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// One operator and slot; subtasks split the parts.
	opts["operator"], opts["slot"] = "window_agg", "window_agg"
	for sub, want := range []string{`["ka"]`, `["kb"]`} {
		rows, err := run(t, opts, fields, 2, sub)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || !strings.Contains(rows[0], want) {
			t.Errorf("subtask %d of 2: %q", sub, rows)
		}
	}
	delete(opts, "operator")
	opts["slot"] = "source_offsets"
	if rows, err := run(t, opts, fields[:3], 1, 0); err != nil || len(rows) != 3 {
		t.Errorf("slot source_offsets: %q %v", rows, err)
	}

	// A column declared with another type is an error naming the type to use.
	bad := []arrow.Field{{Name: "offset", Type: arrow.BinaryTypes.String, Nullable: true}}
	_, err = run(t, map[string]string{"connector": "checkpoint", "path": path}, bad, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "column offset is int64, the table declares utf8; declare it BIGINT") {
		t.Errorf("wrong type: %v", err)
	}
}

func TestSourceErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeCheckpoint(t, dir)
	fields := []arrow.Field{{Name: "slot", Type: arrow.BinaryTypes.String, Nullable: true}}
	_, err := run(t, map[string]string{"connector": "checkpoint", "path": dir, "id": "2"}, fields, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "checkpoint 2 does not exist") {
		t.Errorf("missing checkpoint: %v", err)
	}
	part := filepath.Join(path, "window_agg-1.arrow")
	data, _ := os.ReadFile(part)
	data[len(data)/2] ^= 0xff
	os.WriteFile(part, data, 0o644)
	_, err = run(t, map[string]string{"connector": "checkpoint", "path": path}, fields, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "checkpoint source 'state': checkpoint: "+part+": SHA-256 mismatch") {
		t.Errorf("corrupt part: %v", err)
	}
}
