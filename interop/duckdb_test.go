package interop

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2" // database/sql driver "duckdb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
)

// Slots of the checkpoint: the example of docs/state-format.md (a windowed
// aggregate with a Kafka source before it), with typed values, plus a slot
// holding every other value type the format allows.
var (
	aggSlots = []checkpoint.Slot{
		{Name: "window_agg", Values: []arrow.Field{
			{Name: "sum_temp_c", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}},
			{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
			{Name: "last_reading", Type: arrow.FixedWidthTypes.Timestamp_ms},
		}},
		{Name: "all_types", Values: []arrow.Field{
			{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
			{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
			{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
			{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
			{Name: "ls", Type: arrow.BinaryTypes.LargeString},
			{Name: "bin", Type: arrow.BinaryTypes.Binary},
			{Name: "fixed", Type: &arrow.FixedSizeBinaryType{ByteWidth: 2}},
			{Name: "d", Type: arrow.FixedWidthTypes.Date32},
			{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
			{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}},
			{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
			{Name: "pt", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true})},
			{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
		}},
	}
	sourceSlots = []checkpoint.Slot{
		{Name: "source_offsets", Raw: true, Values: []arrow.Field{
			{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
			{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
		}},
		{Name: "watermark", Raw: true, Values: []arrow.Field{
			{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
			{Name: "watermark", Type: arrow.PrimitiveTypes.Int64},
		}},
	}
)

const minute = 60000

// writeCheckpoint writes checkpoint 41: window_agg in two subtasks (the
// keys of the doc's example) and source-0.
func writeCheckpoint(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(41)
	if err != nil {
		t.Fatal(err)
	}
	part := func(op string, sub int, slots []checkpoint.Slot, fill func(b *checkpoint.RowBuilder)) {
		p, err := w.Part(op, sub, slots)
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
	const t0 = 1772352000000 // 2026-03-01 08:00:00 UTC
	agg := func(b *checkpoint.RowBuilder, kg int32, key string, start int64, sum int64, cnt int64, last int64) {
		b.Windowed("window_agg", kg, key, start, start+minute)
		if cnt > 0 {
			b.Value("sum_temp_c").(*array.Decimal128Builder).Append(decimal128.FromI64(sum))
			b.Value("last_reading").(*array.TimestampBuilder).Append(arrow.Timestamp(last))
		}
		b.Value("cnt").(*array.Int64Builder).Append(cnt)
	}
	part("window_agg", 0, aggSlots, func(b *checkpoint.RowBuilder) {
		agg(b, 17, `["sensor-01"]`, t0, 21540, 10, t0+59123)
		agg(b, 17, `["sensor-01"]`, t0+minute, 2210, 1, t0+minute+5)
		b.Keyed("all_types", 3, `["eu",3]`)
		b.Value("b").(*array.BooleanBuilder).Append(true)
		b.Value("i8").(*array.Int8Builder).Append(-8)
		b.Value("u64").(*array.Uint64Builder).Append(1<<64 - 1)
		b.Value("f32").(*array.Float32Builder).Append(1.5)
		b.Value("ls").(*array.LargeStringBuilder).Append("large")
		b.Value("bin").(*array.BinaryBuilder).Append([]byte{0, 1, 2})
		b.Value("fixed").(*array.FixedSizeBinaryBuilder).Append([]byte("ab"))
		b.Value("d").(*array.Date32Builder).Append(arrow.Date32(20513)) // 2026-03-01
		b.Value("ts_us").(*array.TimestampBuilder).Append(arrow.Timestamp(t0*1000 + 1))
		big, _ := decimal128.FromString("12345678901234567890.0123456789", 38, 10)
		b.Value("big").(*array.Decimal128Builder).Append(big)
		lb := b.Value("tags").(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
		sb := b.Value("pt").(*array.StructBuilder)
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int32Builder).Append(7)
		sb.FieldBuilder(1).(*array.StringBuilder).Append("y")
		mb := b.Value("attrs").(*array.MapBuilder)
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.Int64Builder).Append(42)
	})
	part("window_agg", 1, aggSlots, func(b *checkpoint.RowBuilder) {
		agg(b, 94, `["sensor-02"]`, t0, 0, 0, 0)
		agg(b, 100, `["sensor-03"]`, t0, -705, 3, t0+1000)
	})
	part("source", 0, sourceSlots, func(b *checkpoint.RowBuilder) {
		for p, off := range []int64{1284, 977} {
			b.Raw("source_offsets")
			b.Value("partition").(*array.Int32Builder).Append(int32(p))
			b.Value("offset").(*array.Int64Builder).Append(off)
		}
		b.Raw("watermark")
		b.Value("partition").(*array.Int32Builder).Append(0)
		b.Value("watermark").(*array.Int64Builder).Append(t0 + 57000)
	})
	if err := w.Commit(checkpoint.Meta{Job: "sensors"}); err != nil {
		t.Fatal(err)
	}
	c, err := store.Open(41)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// query runs q and renders every row as its columns joined by " | ".
func query(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
			if v == nil {
				s[i] = "NULL"
			}
		}
		out = append(out, strings.Join(s, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func check(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDuckDBReadsExportedState(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir())
	out := t.TempDir()
	files, err := stateio.Export(context.Background(), c, stateio.ExportOptions{Format: stateio.Parquet, Dir: out, WriteParquet: parquet.Write})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("exported %v", files)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the working directory and settings hold
	pq := func(name string) string { return "read_parquet('" + filepath.Join(out, name) + "')" }

	check(t, "column types", query(t, db, "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM "+pq("window_agg-0.parquet")+")"),
		"slot | VARCHAR", "key_group | INTEGER", "key | VARCHAR", "window_start | BIGINT", "window_end | BIGINT",
		"sum_temp_c | DECIMAL(18,2)", "cnt | BIGINT", "last_reading | TIMESTAMP WITH TIME ZONE",
		"b | BOOLEAN", "i8 | TINYINT", "u64 | UBIGINT", "f32 | FLOAT", "ls | VARCHAR", "bin | BLOB", "fixed | BLOB", "d | DATE",
		"ts_us | TIMESTAMP", "big | DECIMAL(38,10)", "tags | VARCHAR[]", "pt | STRUCT(x INTEGER, y VARCHAR)", "attrs | MAP(VARCHAR, BIGINT)")

	// Keys and typed values across both subtasks' files.
	check(t, "window_agg rows", query(t, db, `SELECT key, key_group, window_start, window_end, sum_temp_c::VARCHAR, cnt,
		strftime(last_reading AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S.%g')
		FROM `+pq("window_agg-*.parquet")+` WHERE slot = 'window_agg' ORDER BY key, window_start`),
		`["sensor-01"] | 17 | 1772352000000 | 1772352060000 | 215.40 | 10 | 2026-03-01 08:00:59.123`,
		`["sensor-01"] | 17 | 1772352060000 | 1772352120000 | 22.10 | 1 | 2026-03-01 08:01:00.005`,
		`["sensor-02"] | 94 | 1772352000000 | 1772352060000 | NULL | 0 | NULL`,
		`["sensor-03"] | 100 | 1772352000000 | 1772352060000 | -7.05 | 3 | 2026-03-01 08:00:01.000`)
	check(t, "key parses as JSON", query(t, db, `SELECT json_extract_string(key, '$[0]') FROM `+pq("window_agg-1.parquet")+` ORDER BY 1`),
		"sensor-02", "sensor-03")
	check(t, "every value type", query(t, db, `SELECT b, i8, u64::VARCHAR, f32, ls, hex(bin), fixed::VARCHAR, d::VARCHAR, ts_us::VARCHAR,
		big::VARCHAR, tags::VARCHAR, pt.x, pt.y, attrs['k'] FROM `+pq("window_agg-0.parquet")+` WHERE slot = 'all_types'`),
		`true | -8 | 18446744073709551615 | 1.5 | large | 000102 | ab | 2026-03-01 | 2026-03-01 08:00:00.000001 | 12345678901234567890.0123456789 | [a, b] | 7 | y | 42`)
	check(t, "clink metadata", query(t, db, `SELECT decode(value) FROM parquet_kv_metadata('`+filepath.Join(out, "source-0.parquet")+`') WHERE decode(key) = 'clink.slots'`),
		`[{"name":"source_offsets","raw":true,"values":["partition","offset"]},{"name":"watermark","raw":true,"values":["partition","watermark"]}]`)

	// The example queries of docs/state-format.md, verbatim, run in the
	// export directory.
	doc := docQueries(t)
	if len(doc) != 2 {
		t.Fatalf("docs/state-format.md has %d example queries, want 2", len(doc))
	}
	t.Chdir(out)
	check(t, "doc query 1", query(t, db, doc[0]),
		`["sensor-01"] | 1772352000000 | 1772352060000 | 21.54`,
		`["sensor-01"] | 1772352060000 | 1772352120000 | 22.1`,
		`["sensor-02"] | 1772352000000 | 1772352060000 | NULL`,
		`["sensor-03"] | 1772352000000 | 1772352060000 | -2.35`)
	check(t, "doc query 2", query(t, db, doc[1]), "0 | 1284", "1 | 977")
}

// TestDuckDBReadsOneFileExport: the single-file export (state-export
// --out FILE.parquet) holds the same rows per part as the per-part files,
// with operator and subtask columns, and NULL where a part lacks a column.
func TestDuckDBReadsOneFileExport(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir())
	out := t.TempDir()
	if _, err := stateio.Export(context.Background(), c, stateio.ExportOptions{Format: stateio.Parquet, Dir: out, WriteParquet: parquet.Write}); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(t.TempDir(), "state.parquet")
	if _, err := stateio.ExportFile(context.Background(), c, stateio.FileOptions{Path: one, NewParquetWriter: parquet.NewWriter}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	perPart := func(name string) []string {
		return query(t, db, "SELECT count(*) FROM read_parquet('"+filepath.Join(out, name)+"')")
	}
	check(t, "rows per part", query(t, db, "SELECT operator, subtask, count(*) FROM read_parquet('"+one+"') GROUP BY ALL ORDER BY ALL"),
		"source | 0 | "+perPart("source-0.parquet")[0],
		"window_agg | 0 | "+perPart("window_agg-0.parquet")[0],
		"window_agg | 1 | "+perPart("window_agg-1.parquet")[0])
	check(t, "a part's missing columns are NULL", query(t, db, "SELECT count(*) FROM read_parquet('"+one+"') WHERE operator = 'source' AND cnt IS NOT NULL"), "0")
	check(t, "the same window rows", query(t, db, "SELECT key, window_start, cnt FROM read_parquet('"+one+"') WHERE slot = 'window_agg' EXCEPT SELECT key, window_start, cnt FROM read_parquet('"+filepath.Join(out, "window_agg-*.parquet")+"')"))
}

// docQueries returns the SQL statements of the "Reading state without
// Clink" section of docs/state-format.md.
func docQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../docs/state-format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "## Reading state without Clink")
	if !ok {
		t.Fatal("docs/state-format.md has no section 'Reading state without Clink'")
	}
	m := regexp.MustCompile("(?s)```sql\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("no sql block in 'Reading state without Clink'")
	}
	var out []string
	for _, q := range strings.Split(m[1], ";") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, q)
		}
	}
	return out
}
