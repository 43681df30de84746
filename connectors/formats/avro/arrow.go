package avro

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	hamba "github.com/hamba/avro/v2"
)

// ArrowSchema derives the columns of a flat Avro record, the inverse of
// SchemaFor for the tools that have only a registry's schema (`clink kafka
// consume|produce --value-format avro-confluent`): one column per field,
// in order, named as the field.
//
//	int                             int32
//	long                            int64
//	float, double                   float32, float64
//	string, enum                    string (an enum reads as its symbol)
//	boolean                         bool
//	long timestamp-millis           timestamp[ms]
//	long timestamp-micros           timestamp[ms]: floored to ms on read, as
//	                                Clink's JSON format has ms only
//	int date                        date32
//	bytes or fixed decimal(p, s)    decimal128(p, s)
//
// A union of null and one of these (either order) is a nullable column;
// every other field is NOT NULL. Records, arrays, maps, bytes, fixed
// without decimal, other unions and other logical types are refused with
// an error naming the field.
func ArrowSchema(avroSchema string) (*arrow.Schema, error) {
	s, err := hamba.ParseWithCache(avroSchema, "", &hamba.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro format: schema: %w", err)
	}
	rec, ok := deref(s).(*hamba.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("avro format: schema is a %s, not a record", s.Type())
	}
	fields := make([]arrow.Field, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		t, nullable := deref(f.Type()), false
		if u, ok := t.(*hamba.UnionSchema); ok {
			var other []hamba.Schema
			for _, b := range u.Types() {
				if b.Type() == hamba.Null {
					nullable = true
				} else {
					other = append(other, b)
				}
			}
			if !nullable || len(other) != 1 {
				return nil, fmt.Errorf("avro format: field %q: only a union of null and one type is supported, not %s", f.Name(), describeUnion(u))
			}
			t = deref(other[0])
		}
		dt, err := arrowType(t)
		if err != nil {
			return nil, fmt.Errorf("avro format: field %q: %w", f.Name(), err)
		}
		fields = append(fields, arrow.Field{Name: f.Name(), Type: dt, Nullable: nullable})
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowType(t hamba.Schema) (arrow.DataType, error) {
	var logical hamba.LogicalSchema
	switch s := t.(type) {
	case *hamba.PrimitiveSchema:
		logical = s.Logical()
	case *hamba.FixedSchema:
		logical = s.Logical()
	case *hamba.EnumSchema:
		return arrow.BinaryTypes.String, nil
	}
	if logical != nil {
		switch l := logical.Type(); {
		case l == hamba.Decimal && (t.Type() == hamba.Bytes || t.Type() == hamba.Fixed):
			d := logical.(*hamba.DecimalLogicalSchema)
			if d.Precision() < 1 || d.Precision() > 38 || d.Scale() < 0 || d.Scale() > d.Precision() {
				return nil, fmt.Errorf("decimal(%d, %d) is not supported (precision 1 to 38)", d.Precision(), d.Scale())
			}
			return &arrow.Decimal128Type{Precision: int32(d.Precision()), Scale: int32(d.Scale())}, nil
		case l == hamba.TimestampMillis && t.Type() == hamba.Long, l == hamba.TimestampMicros && t.Type() == hamba.Long:
			return arrow.FixedWidthTypes.Timestamp_ms, nil
		case l == hamba.Date && t.Type() == hamba.Int:
			return arrow.FixedWidthTypes.Date32, nil
		}
		// Other logical types (uuid on a string, time-millis on an int,
		// ...) read as their underlying type, as Avro readers may.
		if t.Type() == hamba.Fixed {
			return nil, fmt.Errorf("type %s is not supported", describe(t, logical.Type()))
		}
	}
	switch t.Type() {
	case hamba.Int:
		return arrow.PrimitiveTypes.Int32, nil
	case hamba.Long:
		return arrow.PrimitiveTypes.Int64, nil
	case hamba.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case hamba.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case hamba.String:
		return arrow.BinaryTypes.String, nil
	case hamba.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	}
	return nil, fmt.Errorf("type %s is not supported (records, arrays, maps, bytes, fixed and null are not)", t.Type())
}

func describeUnion(u *hamba.UnionSchema) string {
	s := "["
	for i, b := range u.Types() {
		if i > 0 {
			s += ", "
		}
		s += string(b.Type())
	}
	return s + "]"
}
