package avro_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors/formats/avro"
)

// ArrowSchema inverts SchemaFor, but for timestamp(us), which reads back
// as timestamp(ms).
func TestArrowSchemaRoundTrip(t *testing.T) {
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	var fields []arrow.Field
	for i, dt := range []arrow.DataType{
		arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32,
		arrow.PrimitiveTypes.Float64, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean,
		arrow.FixedWidthTypes.Timestamp_ms, arrow.FixedWidthTypes.Date32, dec,
	} {
		for _, nullable := range []bool{false, true} {
			fields = append(fields, arrow.Field{Name: "c" + string(rune('a'+i)) + map[bool]string{false: "_nn", true: "_n"}[nullable], Type: dt, Nullable: nullable})
		}
	}
	schema := arrow.NewSchema(fields, nil)
	text, err := avro.SchemaFor(schema, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := avro.ArrowSchema(text)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(schema) {
		t.Fatalf("ArrowSchema(SchemaFor(s)):\n%s\nwant:\n%s", got, schema)
	}
	again, err := avro.SchemaFor(got, "")
	if err != nil || again != text {
		t.Fatalf("SchemaFor(ArrowSchema(text)) = %s, %v; want %s", again, err, text)
	}

	micros := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us}}, nil)
	text, _ = avro.SchemaFor(micros, "")
	got, err = avro.ArrowSchema(text)
	if err != nil || !arrow.TypeEqual(got.Field(0).Type, arrow.FixedWidthTypes.Timestamp_ms) {
		t.Fatalf("timestamp-micros: %v, %v; want timestamp[ms]", got, err)
	}
}

func TestArrowSchemaTypes(t *testing.T) {
	got, err := avro.ArrowSchema(`{"type":"record","name":"r","fields":[
		{"name":"color","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
		{"name":"late_null","type":["long","null"]},
		{"name":"amount","type":{"type":"fixed","name":"F","size":8,"logicalType":"decimal","precision":12,"scale":3}},
		{"name":"id","type":{"type":"string","logicalType":"uuid"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := arrow.NewSchema([]arrow.Field{
		{Name: "color", Type: arrow.BinaryTypes.String},
		{Name: "late_null", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}},
		{Name: "id", Type: arrow.BinaryTypes.String},
	}, nil)
	if !got.Equal(want) {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestArrowSchemaRefused(t *testing.T) {
	for _, c := range []struct{ field, typ, want string }{
		{"nested", `{"type":"record","name":"In","fields":[{"name":"a","type":"int"}]}`, `field "nested": type record is not supported`},
		{"list", `{"type":"array","items":"int"}`, `field "list": type array`},
		{"m", `{"type":"map","values":"int"}`, `field "m": type map`},
		{"raw", `"bytes"`, `field "raw": type bytes`},
		{"f", `{"type":"fixed","name":"F","size":4}`, `field "f": type fixed`},
		{"u", `["null","int","string"]`, `field "u": only a union of null and one type is supported, not [null, int, string]`},
		{"u2", `["int","string"]`, `field "u2": only a union`},
		{"ln", `["null",{"type":"array","items":"int"}]`, `field "ln": type array`},
	} {
		_, err := avro.ArrowSchema(`{"type":"record","name":"r","fields":[{"name":"ok","type":"int"},{"name":"` + c.field + `","type":` + c.typ + `}]}`)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.field, err, c.want)
		}
	}
	if _, err := avro.ArrowSchema(`"int"`); err == nil || !strings.Contains(err.Error(), "not a record") {
		t.Errorf("int: %v", err)
	}
}
