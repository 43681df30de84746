package avro

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	hamba "github.com/hamba/avro/v2"
)

func TestSchemaFor(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tiny", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "ts6", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 12, Scale: 3}, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	got, err := SchemaFor(schema, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[` +
		`{"name":"id","type":"long"},` +
		`{"name":"tiny","type":["null","int"],"default":null},` +
		`{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},` +
		`{"name":"ts6","type":["null",{"type":"long","logicalType":"timestamp-micros"}],"default":null},` +
		`{"name":"day","type":{"type":"int","logicalType":"date"}},` +
		`{"name":"amount","type":["null",{"type":"bytes","logicalType":"decimal","precision":12,"scale":3}],"default":null},` +
		`{"name":"name","type":["null","string"],"default":null}]}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	s, err := hamba.Parse(got)
	if err != nil {
		t.Fatalf("hamba rejects it: %v", err)
	}
	if r := s.(*hamba.RecordSchema); r.FullName() != DefaultName || !r.Fields()[1].HasDefault() || r.Fields()[0].HasDefault() {
		t.Errorf("parsed as %s", s)
	}
	if got, _ := SchemaFor(schema, "Sensor"); !strings.HasPrefix(got, `{"type":"record","name":"Sensor","fields":[`) {
		t.Errorf("named: %s", got)
	}
	if _, err := SchemaFor(schema, "a.b-c.D"); err == nil {
		t.Error("a namespace with '-' was accepted")
	}
}

func TestCheckSchema(t *testing.T) {
	for _, c := range []struct {
		fields []arrow.Field
		want   string
	}{
		{[]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint32}}, `column "u": type uint32`},
		{[]arrow.Field{{Name: "t", Type: arrow.FixedWidthTypes.Timestamp_ns}}, `column "t"`},
		{[]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)}}, `column "l"`},
		{[]arrow.Field{{Name: "d", Type: &arrow.Decimal128Type{Precision: 0, Scale: 0}}}, `column "d"`},
		{[]arrow.Field{{Name: "bad name", Type: arrow.PrimitiveTypes.Int64}}, `column "bad name": not a valid Avro field name`},
		{[]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Int64}}, `column "x" appears twice`},
	} {
		err := CheckSchema(arrow.NewSchema(c.fields, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.fields, err, c.want)
		}
	}
	if err := CheckSchema(allTypes()); err != nil {
		t.Error(err)
	}
	if _, err := NewEncoder(arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint8}}, nil)); err == nil {
		t.Error("NewEncoder accepted uint8")
	}
}
