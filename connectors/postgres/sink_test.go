package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// openSink opens the sink of Clink table name (schema) on database url
// with extra options.
func openSink(t testing.TB, url, name string, schema *arrow.Schema, opts ...string) (engine.Sink, error) {
	t.Helper()
	return openSinkAt(t, url, name, schema, 0, 1, opts...)
}

// openSinkAt opens subtask of parallelism par.
func openSinkAt(t testing.TB, url, name string, schema *arrow.Schema, subtask, par int, opts ...string) (engine.Sink, error) {
	t.Helper()
	m := map[string]string{"connector": "postgres", "url": url}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := spec.Validate(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connector{}.NewSink(&connectors.Table{Name: name, Schema: schema, Options: vo, EventTimeCol: -1,
		Runtime: connectors.Runtime{Subtask: subtask, Parallelism: par}})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

func mustSink(t *testing.T, url, name string, schema *arrow.Schema, opts ...string) engine.Sink {
	t.Helper()
	s, err := openSink(t, url, name, schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// batch builds a batch of schema from rows of Go values (nil = NULL):
// int64, int32, int16, int8, float64, float32, string, bool, an
// decimal128.Num, a time.Time (timestamps).
func batch(mem memory.Allocator, schema *arrow.Schema, rows [][]any, kinds []vector.RowKind) *vector.Batch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		for c, v := range r {
			f := b.Field(c)
			if v == nil {
				f.AppendNull()
				continue
			}
			switch f := f.(type) {
			case *array.Int64Builder:
				f.Append(v.(int64))
			case *array.Int32Builder:
				f.Append(v.(int32))
			case *array.Int16Builder:
				f.Append(v.(int16))
			case *array.Int8Builder:
				f.Append(v.(int8))
			case *array.Float64Builder:
				f.Append(v.(float64))
			case *array.Float32Builder:
				f.Append(v.(float32))
			case *array.StringBuilder:
				f.Append(v.(string))
			case *array.BooleanBuilder:
				f.Append(v.(bool))
			case *array.Decimal128Builder:
				f.Append(v.(decimal128.Num))
			case *array.TimestampBuilder:
				f.Append(arrow.Timestamp(v.(time.Time).UnixMilli()))
			default:
				panic(fmt.Sprintf("builder %T", f))
			}
		}
	}
	out := vector.New(b.NewRecordBatch())
	out.Kinds = kinds
	return out
}

// query reads every row of sql as text, one line per row (fields joined
// by '|', NULL as ∅), sorted.
func query(t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := rows.RawValues()
		f := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				f[i] = "∅"
			} else {
				f[i] = string(v)
			}
		}
		out = append(out, strings.Join(f, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	sort.Strings(out)
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	want = append([]string(nil), want...)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		g, w := strings.Join(got, "\n"), strings.Join(want, "\n")
		if len(got) > 40 || len(want) > 40 {
			for i := 0; i < min(len(got), len(want)); i++ {
				if got[i] != want[i] {
					t.Fatalf("%s: %d rows, want %d; first difference at %d:\n got %s\nwant %s", what, len(got), len(want), i, got[i], want[i])
				}
			}
			t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
		}
		t.Fatalf("%s:\n%s\nwant\n%s", what, g, w)
	}
}

// Every Clink type into each PostgreSQL type it maps to, read back as
// PostgreSQL prints it.
func TestTypes(t *testing.T) {
	srv, db, url := SharedDatabase(t)
	srv.Exec(t, db, `CREATE TABLE types (
		id bigint PRIMARY KEY, i32 integer, i32n numeric, i16 smallint, i8 integer,
		d double precision, f real, f8 double precision,
		s text, vc varchar(20), c char(4), j jsonb, js json, u uuid, b boolean,
		dec numeric(12,3), decn numeric, ts timestamp(3), tstz timestamptz, extra text DEFAULT 'dflt')`)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "I32N", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f8", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vc", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "c", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "j", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "js", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "u", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "decn", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "tstz", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	}, nil)
	when := time.Date(2026, 3, 1, 8, 15, 30, 125_000_000, time.UTC)
	old := time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC)
	rows := [][]any{
		{int64(1), int32(-2147483648), int32(2147483647), int16(-32768), int8(-128), 20.1, float32(20.1), float32(-0.1),
			"späti \"6\"\n\ttab", "abc", "ab", `{"a": [1, 2.5, "x"]}`, `{"b":1}`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", true,
			decimal128.FromI64(-1234567890), decimal128.FromI64(1), when, when},
		{int64(-9223372036854775808), int32(0), nil, int16(32767), int8(127), -1e300, float32(3.4e38), float32(1e-7),
			"", "", "abcd", `null`, `[]`, "A0EEBC999C0B4EF8BB6D6BB9BD380A11", false,
			decimal128.FromI64(99999999), nil, old, old},
		{int64(3), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s := mustSink(t, url, "types", schema)
	if err := s.Write(batch(mem, schema, rows, nil)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	conn := srv.Connect(t, db)
	if _, err := conn.Exec(context.Background(), "SET TIME ZONE 'Asia/Kolkata'; SET extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}
	got := query(t, conn, `SELECT id, i32, i32n, i16, i8, d, f, f8, s, vc, c, j, js, u, b, dec, decn, ts, tstz, extra FROM types`)
	sameLines(t, "types", got, []string{
		"1|-2147483648|2147483647|-32768|-128|20.1|20.1|-0.1|späti \"6\"\n\ttab|abc|ab  |{\"a\": [1, 2.5, \"x\"]}|{\"b\":1}|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|t|-12345678.900|0.0000000001|2026-03-01 08:15:30.125|2026-03-01 13:45:30.125+05:30|dflt",
		"-9223372036854775808|0|∅|32767|127|-1e+300|3.4e+38|1e-07|||abcd|null|[]|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|f|999999.990|∅|1969-07-20 20:17:40|1969-07-21 01:47:40+05:30|dflt",
		"3|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|∅|dflt",
	})
	if st := s.(*Sink).Stats(); st["rows_written"] != 3 || st["writes"] != 1 {
		t.Errorf("stats %v", st)
	}
	s.Close()
	if mem.CurrentAlloc() != 0 {
		t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
	}
}

func tableOf(name string, schema *arrow.Schema, vo connectors.Options) *connectors.Table {
	return &connectors.Table{Name: name, Schema: schema, Options: vo, EventTimeCol: -1}
}
