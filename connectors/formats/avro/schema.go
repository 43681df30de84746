package avro

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
)

// DefaultName is the full name of the record SchemaFor derives when given
// no name: Flink's AvroSchemaConverter's.
const DefaultName = "org.apache.flink.avro.generated.record"

// CheckSchema reports whether the format can read and write every column
// of schema: int8/16/32/64, float32/64, string, bool, date32,
// timestamp(ms or us) and decimal128(p, s) with 1 <= p <= 38 and
// 0 <= s <= p, each with a name that is a valid Avro name
// ([A-Za-z_][A-Za-z0-9_]*), all distinct.
func CheckSchema(schema *arrow.Schema) error {
	seen := make(map[string]bool, schema.NumFields())
	for _, f := range schema.Fields() {
		if arrowcol.KindOf(f.Type) == arrowcol.Invalid {
			return fmt.Errorf("avro format: column %q: type %s is not supported", f.Name, f.Type)
		}
		if !validName(f.Name) {
			return fmt.Errorf("avro format: column %q: not a valid Avro field name ([A-Za-z_][A-Za-z0-9_]*)", f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("avro format: column %q appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// SchemaFor returns the Avro schema (JSON) that Flink's 'avro' format
// derives from a table's columns (AvroSchemaConverter.convertToSchema with
// its default legacy timestamp mapping), the schema Append reads and the
// Encoder writes. name is the record's full name ("ns.name"); empty means
// DefaultName.
//
// Each column becomes a field of its name, in order: BIGINT long, INT,
// SMALLINT and TINYINT int, DOUBLE double, FLOAT float, VARCHAR string,
// BOOLEAN boolean, TIMESTAMP(3) long timestamp-millis, TIMESTAMP(6) long
// timestamp-micros, DATE int date, DECIMAL(p,s) bytes decimal(p,s). A
// nullable column's type is the union ["null", T] with default null; a NOT
// NULL column's field has no default.
func SchemaFor(schema *arrow.Schema, name string) (string, error) {
	if err := CheckSchema(schema); err != nil {
		return "", err
	}
	if name == "" {
		name = DefaultName
	}
	ns := ""
	if k := strings.LastIndexByte(name, '.'); k >= 0 {
		ns, name = name[:k], name[k+1:]
	}
	if !validName(name) {
		return "", fmt.Errorf("avro format: %q is not a valid record name", name)
	}
	for _, part := range strings.Split(ns, ".") {
		if ns != "" && !validName(part) {
			return "", fmt.Errorf("avro format: %q is not a valid namespace", ns)
		}
	}
	var b strings.Builder
	b.WriteString(`{"type":"record","name":`)
	b.WriteString(quote(name))
	if ns != "" {
		b.WriteString(`,"namespace":`)
		b.WriteString(quote(ns))
	}
	b.WriteString(`,"fields":[`)
	for c, f := range schema.Fields() {
		if c > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":`)
		b.WriteString(quote(f.Name))
		b.WriteString(`,"type":`)
		t := typeJSON(f.Type)
		if f.Nullable {
			b.WriteString(`["null",` + t + `],"default":null`)
		} else {
			b.WriteString(t)
		}
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return b.String(), nil
}

// typeJSON is the Avro type of a column of type dt (CheckSchema passed).
func typeJSON(dt arrow.DataType) string {
	switch arrowcol.KindOf(dt) {
	case arrowcol.Int8, arrowcol.Int16, arrowcol.Int32:
		return `"int"`
	case arrowcol.Int64:
		return `"long"`
	case arrowcol.Float32:
		return `"float"`
	case arrowcol.Float64:
		return `"double"`
	case arrowcol.String:
		return `"string"`
	case arrowcol.Bool:
		return `"boolean"`
	case arrowcol.TimestampMs:
		return `{"type":"long","logicalType":"timestamp-millis"}`
	case arrowcol.TimestampUs:
		return `{"type":"long","logicalType":"timestamp-micros"}`
	case arrowcol.Date:
		return `{"type":"int","logicalType":"date"}`
	case arrowcol.Decimal:
		t := dt.(*arrow.Decimal128Type)
		return fmt.Sprintf(`{"type":"bytes","logicalType":"decimal","precision":%d,"scale":%d}`, t.Precision, t.Scale)
	}
	panic("unreachable")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
