package avro

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	hamba "github.com/hamba/avro/v2"
)

var readings = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "count", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// v1 has a field the table lacks (nested records in an array), an int
// count, a float ratio, a string kind, a map, and no temp or site.
const readingV1 = `{"type":"record","name":"Reading","namespace":"com.acme","fields":[
 {"name":"id","type":"long"},
 {"name":"tags","type":{"type":"array","items":{"type":"record","name":"Tag","fields":[
   {"name":"k","type":"string"},{"name":"v","type":["null","long"]},
   {"name":"sub","type":["null","Tag"],"default":null}]}}},
 {"name":"name","type":"string"},
 {"name":"count","type":"int"},
 {"name":"ratio","type":"float"},
 {"name":"kind","type":"string"},
 {"name":"meta","type":{"type":"map","values":"double"}}
]}`

// v2 reorders fields, drops tags and meta, promotes count to long and
// ratio to double, makes kind an enum, names the table's temp by an alias,
// and adds site with a default; name is a union with null second.
const readingV2 = `{"type":"record","name":"Reading","namespace":"com.acme","fields":[
 {"name":"count","type":"long"},
 {"name":"id","type":"long"},
 {"name":"kind","type":{"type":"enum","name":"Kind","symbols":["HOT","COLD"]}},
 {"name":"ratio","type":"double"},
 {"name":"name","type":["string","null"]},
 {"name":"temperature","aliases":["temp"],"type":["null","double"],"default":null},
 {"name":"site","type":["null","string"],"default":null},
 {"name":"fixed","type":{"type":"fixed","name":"F4","size":4}}
]}`

func hambaBytes(t *testing.T, schema string, v map[string]any) []byte {
	t.Helper()
	b, err := hamba.Marshal(hamba.MustParse(schema), v)
	if err != nil {
		t.Fatalf("hamba.Marshal: %v", err)
	}
	return b
}

// TestEvolution decodes records of two writer schema versions, interleaved,
// into one table.
func TestEvolution(t *testing.T) {
	mem := checked(t)
	dec := NewDecoder(readings, mem, Options{})
	defer dec.Release()
	w1, err := dec.Writer(readingV1)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := dec.Writer(readingV2)
	if err != nil {
		t.Fatal(err)
	}
	v1 := func(id int64, name string, count int, ratio float32, kind string) []byte {
		return hambaBytes(t, readingV1, map[string]any{
			"id": id, "name": name, "count": count, "ratio": ratio, "kind": kind,
			"tags": []any{
				map[string]any{"k": "a", "v": int64(1), "sub": map[string]any{"com.acme.Tag": map[string]any{"k": "b", "v": nil, "sub": nil}}},
				map[string]any{"k": "c", "v": nil, "sub": nil},
			},
			"meta": map[string]any{"x": 1.5, "y": -2.0},
		})
	}
	v2 := func(id, count int64, ratio float64, kind string, temp, site any) []byte {
		return hambaBytes(t, readingV2, map[string]any{
			"id": id, "name": "n" + kind, "count": count, "ratio": ratio, "kind": kind,
			"temperature": temp, "site": site, "fixed": [4]byte{1, 2, 3, 4},
		})
	}
	steps := []struct {
		w   *Writer
		rec []byte
	}{
		{w1, v1(1, "one", 10, 0.5, "HOT")},
		{w2, v2(2, 1<<40, 0.1, "COLD", 21.5, "lab")},
		{w1, v1(3, "three", -7, 2.25, "other")},
		{w2, v2(4, -1, 3, "HOT", nil, nil)},
		{dec.reader, nil}, // reader-schema record, filled in below
	}
	enc, _ := NewEncoder(readings)
	own := buildRecord(t, readings, [][]any{{int64(5), "five", nil, 1.0, "own", 9.5, "x"}})
	steps[4].rec = enc.AppendRow(nil, own, 0)
	own.Release()
	for k, s := range steps {
		if err := dec.AppendWriter(s.w, s.rec); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
	}
	got := dec.Flush()
	defer got.Release()
	want := buildRecord(t, readings, [][]any{
		{int64(1), "one", int64(10), 0.5, "HOT", nil, nil},
		{int64(2), "nCOLD", int64(1 << 40), 0.1, "COLD", 21.5, "lab"},
		{int64(3), "three", int64(-7), 2.25, "other", nil, nil},
		{int64(4), "nHOT", int64(-1), 3.0, "HOT", nil, nil},
		{int64(5), "five", nil, 1.0, "own", 9.5, "x"},
	})
	defer want.Release()
	if !array.RecordEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
}

// buildRecord makes a record of rows of Go values (nil for null).
func buildRecord(t *testing.T, schema *arrow.Schema, rows [][]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(checked(t), schema)
	defer b.Release()
	for _, row := range rows {
		for c, v := range row {
			fb := b.Field(c)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(v.(int32))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			default:
				t.Fatalf("buildRecord: %T", fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// TestWriterRefused: writer schemas whose fields cannot be read into the
// table fail at Writer with an error naming the field.
func TestWriterRefused(t *testing.T) {
	mem := checked(t)
	dec := NewDecoder(readings, mem, Options{})
	defer dec.Release()
	field := func(name, typ string) string {
		return `{"name":"` + name + `","type":` + typ + `}`
	}
	rec := func(fields ...string) string {
		return `{"type":"record","name":"R","fields":[` + strings.Join(fields, ",") + `]}`
	}
	id, name := field("id", `"long"`), field("name", `"string"`)
	for _, c := range []struct {
		schema, want string
	}{
		{rec(field("id", `{"type":"record","name":"X","fields":[]}`), name), `"id"`},
		{rec(id, name, field("count", `"string"`)), `"count"`},
		{rec(id, name, field("count", `{"type":"array","items":"long"}`)), `"count"`},
		{rec(id, name, field("ratio", `{"type":"map","values":"double"}`)), `"ratio"`},
		{rec(id, name, field("kind", `"long"`)), `"kind"`},
		{rec(id, name, field("count", `["null","long","string"]`)), `"count"`},
		{rec(id, name, field("count", `"double"`)), `"count"`},
		{rec(id), `"name"`}, // NOT NULL column without a default
		{rec(id, field("name", `"null"`)), `"name"`},
		{rec(field("id", `"string"`), name), `"id"`},
		{`"long"`, "not a record"},
		{`{"type":"record"`, "writer schema"},
	} {
		_, err := dec.Writer(c.schema)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Writer(%s) = %v, want an error containing %s", c.schema, err, c.want)
		}
	}
	// A table column that is not read is still checked.
	proj := NewDecoder(readings, mem, Options{Needed: []bool{true, true, false}})
	defer proj.Release()
	if _, err := proj.Writer(rec(id, name, field("count", `"string"`))); err == nil || !strings.Contains(err.Error(), `"count"`) {
		t.Errorf("projected Writer: %v", err)
	}
}

// TestWriterConversions reads each accepted writer type into each column
// type it converts to.
func TestWriterConversions(t *testing.T) {
	mem := checked(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "tsus", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 6, Scale: 3}},
	}, nil)
	dec := NewDecoder(schema, mem, Options{})
	defer dec.Release()
	ws := `{"type":"record","name":"W","fields":[
	 {"name":"i8","type":"long"},
	 {"name":"f32","type":"int"},
	 {"name":"f64","type":"long"},
	 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
	 {"name":"tsus","type":{"type":"long","logicalType":"timestamp-millis"}},
	 {"name":"s","type":"bytes"},
	 {"name":"dec","type":{"type":"fixed","name":"D","size":3,"logicalType":"decimal","precision":4,"scale":1}}
	]}`
	w, err := dec.Writer(ws)
	if err != nil {
		t.Fatal(err)
	}
	b := appendLong(nil, -5)        // i8
	b = appendLong(b, 7)            // f32
	b = appendLong(b, 1<<53+1)      // f64 (rounds)
	b = appendLong(b, -1500)        // ts: -1.5 ms floors to -2
	b = appendLong(b, 3)            // tsus: 3 ms
	b = appendLong(b, 2)            // s: 2 bytes
	b = append(b, 'h', 'i')         //
	b = append(b, 0xff, 0xff, 0xf6) // dec: -10 at scale 1 = -1.0
	if err := dec.AppendWriter(w, b); err != nil {
		t.Fatal(err)
	}
	got := dec.Flush()
	defer got.Release()
	want := `[-5] [7] [9.007199254740992e+15] [-2] [3000] ["hi"]`
	if v := got.Column(6).(*array.Decimal128).Value(0); v != decimal128.FromI64(-1000) {
		t.Errorf("dec = %v, want -1.000", v.ToString(3))
	}
	var parts []string
	for c := range schema.Fields()[:6] {
		parts = append(parts, got.Column(c).String())
	}
	if s := strings.Join(parts, " "); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
}
