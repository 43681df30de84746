package avro

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	hamba "github.com/hamba/avro/v2"
)

// TestResolutionAgreesWithHamba compares which writer field types Writer
// accepts for each column type with hamba/avro's compatibility checker
// (the reader schema being SchemaFor's, renamed like the writer's record,
// since hamba compares record names): they must agree except for the
// documented departures listed here.
func TestResolutionAgreesWithHamba(t *testing.T) {
	columns := []struct {
		name string
		typ  arrow.DataType
	}{
		{"long", arrow.PrimitiveTypes.Int64},
		{"int", arrow.PrimitiveTypes.Int32},
		{"smallint", arrow.PrimitiveTypes.Int16},
		{"double", arrow.PrimitiveTypes.Float64},
		{"float", arrow.PrimitiveTypes.Float32},
		{"string", arrow.BinaryTypes.String},
		{"boolean", arrow.FixedWidthTypes.Boolean},
		{"ts3", arrow.FixedWidthTypes.Timestamp_ms},
		{"ts6", arrow.FixedWidthTypes.Timestamp_us},
		{"date", arrow.FixedWidthTypes.Date32},
		{"dec", &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	}
	writers := map[string]string{
		"int":       `"int"`,
		"long":      `"long"`,
		"float":     `"float"`,
		"double":    `"double"`,
		"string":    `"string"`,
		"bytes":     `"bytes"`,
		"boolean":   `"boolean"`,
		"null":      `"null"`,
		"enum":      `{"type":"enum","name":"E","symbols":["A","B"]}`,
		"fixed":     `{"type":"fixed","name":"F","size":4}`,
		"array":     `{"type":"array","items":"long"}`,
		"map":       `{"type":"map","values":"long"}`,
		"record":    `{"type":"record","name":"Sub","fields":[{"name":"x","type":"long"}]}`,
		"ts-millis": `{"type":"long","logicalType":"timestamp-millis"}`,
		"ts-micros": `{"type":"long","logicalType":"timestamp-micros"}`,
		"date":      `{"type":"int","logicalType":"date"}`,
		"dec(10,2)": `{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}`,
		"dec(20,1)": `{"type":"bytes","logicalType":"decimal","precision":20,"scale":1}`,
		"dec(10,4)": `{"type":"bytes","logicalType":"decimal","precision":10,"scale":4}`,
		"fixdec":    `{"type":"fixed","name":"FD","size":8,"logicalType":"decimal","precision":10,"scale":2}`,
		"?long":     `["null","long"]`,
		"long?":     `["long","null"]`,
		"?string":   `["null","string"]`,
		"long|str":  `["long","string"]`,
	}
	// Where Writer departs from Avro's rules (see the package doc):
	// +: Writer accepts what hamba refuses; -: Writer refuses what hamba
	// accepts.
	departures := map[string]string{
		// Beyond Avro: narrowing, enum symbols, a fixed decimal into a
		// DECIMAL, decimals of another precision or smaller scale.
		"int/long": "+", "smallint/long": "+",
		"string/enum": "+",
		"dec/fixdec":  "+",
		// Logical types must fit the column: hamba compares only the
		// underlying types.
		"int/date": "-", "smallint/date": "-", "long/date": "-", "float/date": "-", "double/date": "-",
		"dec/bytes": "-", "dec/string": "-", "dec/?string": "-", "dec/dec(10,4)": "-",
		"ts3/int": "-", "ts6/int": "-", "ts3/date": "-", "ts6/date": "-",
		"date/int":         "-",
		"string/dec(10,2)": "-", "string/dec(20,1)": "-", "string/dec(10,4)": "-",
		"float/ts-millis": "-", "float/ts-micros": "-", "double/ts-millis": "-", "double/ts-micros": "-",
		"int/long?": "+", "int/?long": "+", "smallint/long?": "+", "smallint/?long": "+",
	}
	for _, col := range columns {
		for wname, wtype := range writers {
			key := col.name + "/" + wname
			table := arrow.NewSchema([]arrow.Field{{Name: "v", Type: col.typ, Nullable: true}}, nil)
			dec := NewDecoder(table, checked(t), Options{})
			ws := `{"type":"record","name":"W","fields":[{"name":"v","type":` + wtype + `}]}`
			_, err := dec.Writer(ws)
			ours := err == nil
			dec.Release()
			rs, _ := SchemaFor(table, "W")
			reader := hamba.MustParse(rs)
			writer, perr := hamba.ParseWithCache(ws, "", &hamba.SchemaCache{})
			if perr != nil {
				t.Fatalf("%s: %v", key, perr)
			}
			theirs := hamba.NewSchemaCompatibility().Compatible(reader, writer) == nil
			if ours == theirs {
				if d, ok := departures[key]; ok {
					t.Errorf("%s: listed as a departure (%s) but both say %v", key, d, ours)
				}
				continue
			}
			want := "-"
			if ours {
				want = "+"
			}
			if departures[key] != want {
				t.Errorf("%s: Writer says %v (%v), hamba says %v", key, ours, err, theirs)
			}
		}
	}
}
