package clickhouse

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

func TestTargetOf(t *testing.T) {
	for typ, want := range map[string]target{
		"Nullable(DateTime('Europe/Berlin'))": tDateTime,
		"DateTime64(3, 'UTC')":                tDateTime64,
		"LowCardinality(Nullable(String))":    tString,
		"FixedString(4)":                      tString,
		"Enum8('a' = 1, 'b' = 2)":             tString,
		"Decimal(9, 2)":                       tNumber,
		"UInt8":                               tNumber,
		"Nullable(Float64)":                   tNumber,
		"Date":                                tDate,
		"Bool":                                tBool,
		"Array(Int64)":                        tOther,
	} {
		if got := targetOf(typ); got != want {
			t.Errorf("%s: %d, want %d", typ, got, want)
		}
	}
}

// The live rows of a batch with a selection vector and nulls, in the forms
// their ClickHouse columns take.
func TestEncodeSelection(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "ws", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "ts64", Type: arrow.FixedWidthTypes.Timestamp_ms},
	}, nil)
	cols := []column{{name: "ws", typ: "Date"}, {name: "ts", typ: "Nullable(DateTime)"}, {name: "OK", typ: "String"}, {name: "ts64", typ: "DateTime64(3)"}}
	cfg := &config{addr: "h:1", database: "d", table: "t"}
	e, err := newEncoder(schema, cfg, cols)
	if err != nil {
		t.Fatal(err)
	}
	if got := columnList(cols, schema); got != "`ts`, `ws`, `OK`, `ts64`" {
		t.Errorf("column list %s", got)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	bld := array.NewRecordBuilder(mem, schema)
	for i, ms := range []int64{-1500, 1772352000999, 0} {
		if i == 2 {
			bld.Field(0).AppendNull()
		} else {
			bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ms))
		}
		bld.Field(1).(*array.Int64Builder).Append(ms)
		bld.Field(2).(*array.BooleanBuilder).Append(i == 1)
		bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(ms))
	}
	b := vector.New(bld.NewRecordBatch())
	bld.Release()
	b.Sel = []int32{1, 2} // row 0 (before 1970) is not live
	got, err := e.appendBatch(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ts":1772352000,"ws":"2026-03-01","OK":"true","ts64":"1772352000.999"}` + "\n" +
		`{"ts":null,"ws":"1970-01-01","OK":"false","ts64":"0.000"}` + "\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	b.Sel = nil
	if _, err := e.appendBatch(nil, b); err == nil || err.Error() != "column ts: 1969-12-31 23:59:58.500 (epoch ms -1500) is outside ClickHouse DateTime's range, 1970-01-01 00:00:00 to 2106-02-07 06:28:15 UTC (ClickHouse would wrap it)" {
		t.Errorf("row 0: %v", err)
	}
	b.Release()
	if mem.CurrentAlloc() != 0 {
		t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
	}
}
