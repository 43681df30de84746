package substrait

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
)

var nullable = pb.Type_NULLABILITY_NULLABLE

// TypeOf converts an engine (Arrow) type to a Substrait type. Every column
// is nullable.
func TypeOf(t arrow.DataType) (*pb.Type, error) {
	switch t.ID() {
	case arrow.INT8:
		return &pb.Type{Kind: &pb.Type_I8_{I8: &pb.Type_I8{Nullability: nullable}}}, nil
	case arrow.INT16:
		return &pb.Type{Kind: &pb.Type_I16_{I16: &pb.Type_I16{Nullability: nullable}}}, nil
	case arrow.INT32:
		return &pb.Type{Kind: &pb.Type_I32_{I32: &pb.Type_I32{Nullability: nullable}}}, nil
	case arrow.INT64:
		return &pb.Type{Kind: &pb.Type_I64_{I64: &pb.Type_I64{Nullability: nullable}}}, nil
	case arrow.FLOAT32:
		return &pb.Type{Kind: &pb.Type_Fp32{Fp32: &pb.Type_FP32{Nullability: nullable}}}, nil
	case arrow.FLOAT64:
		return &pb.Type{Kind: &pb.Type_Fp64{Fp64: &pb.Type_FP64{Nullability: nullable}}}, nil
	case arrow.STRING:
		return &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{Nullability: nullable}}}, nil
	case arrow.BOOL:
		return &pb.Type{Kind: &pb.Type_Bool{Bool: &pb.Type_Boolean{Nullability: nullable}}}, nil
	case arrow.TIMESTAMP:
		return &pb.Type{Kind: &pb.Type_PrecisionTimestamp_{PrecisionTimestamp: &pb.Type_PrecisionTimestamp{Precision: 3, Nullability: nullable}}}, nil
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		return &pb.Type{Kind: &pb.Type_Decimal_{Decimal: &pb.Type_Decimal{Precision: d.Precision, Scale: d.Scale, Nullability: nullable}}}, nil
	}
	return nil, fmt.Errorf("type %s has no Substrait mapping", t)
}

// ArrowOf converts a Substrait type back to the engine's Arrow type.
func ArrowOf(t *pb.Type) (arrow.DataType, error) {
	switch t.GetKind().(type) {
	case *pb.Type_I8_:
		return arrow.PrimitiveTypes.Int8, nil
	case *pb.Type_I16_:
		return arrow.PrimitiveTypes.Int16, nil
	case *pb.Type_I32_:
		return arrow.PrimitiveTypes.Int32, nil
	case *pb.Type_I64_:
		return arrow.PrimitiveTypes.Int64, nil
	case *pb.Type_Fp32:
		return arrow.PrimitiveTypes.Float32, nil
	case *pb.Type_Fp64:
		return arrow.PrimitiveTypes.Float64, nil
	case *pb.Type_String_, *pb.Type_Varchar, *pb.Type_FixedChar_:
		return arrow.BinaryTypes.String, nil
	case *pb.Type_Bool:
		return arrow.FixedWidthTypes.Boolean, nil
	case *pb.Type_Decimal_:
		d := t.GetDecimal()
		return &arrow.Decimal128Type{Precision: d.GetPrecision(), Scale: d.GetScale()}, nil
	case *pb.Type_PrecisionTimestamp_:
		if p := t.GetPrecisionTimestamp().GetPrecision(); p != 3 {
			return nil, fmt.Errorf("TIMESTAMP(%d) is not supported: Clink timestamps have millisecond precision, TIMESTAMP(3)", p)
		}
		return arrow.FixedWidthTypes.Timestamp_ms, nil
	}
	return nil, fmt.Errorf("Substrait type %T is not supported", t.GetKind())
}

// ShortName is the type's abbreviation in compound function names
// (add:i64_i64).
func ShortName(t arrow.DataType) string {
	switch t.ID() {
	case arrow.INT8:
		return "i8"
	case arrow.INT16:
		return "i16"
	case arrow.INT32:
		return "i32"
	case arrow.INT64:
		return "i64"
	case arrow.FLOAT32:
		return "fp32"
	case arrow.FLOAT64:
		return "fp64"
	case arrow.STRING:
		return "str"
	case arrow.BOOL:
		return "bool"
	case arrow.TIMESTAMP:
		return "pts"
	case arrow.DECIMAL128:
		return "dec"
	}
	return "any"
}

// Schema converts an Arrow schema to a Substrait NamedStruct.
func Schema(s *arrow.Schema) (*pb.NamedStruct, error) {
	ns := &pb.NamedStruct{Struct: &pb.Type_Struct{Nullability: pb.Type_NULLABILITY_REQUIRED}}
	for _, f := range s.Fields() {
		t, err := TypeOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		ns.Names = append(ns.Names, f.Name)
		ns.Struct.Types = append(ns.Struct.Types, t)
	}
	return ns, nil
}

// ArrowSchema converts a flat NamedStruct to an Arrow schema.
func ArrowSchema(ns *pb.NamedStruct) (*arrow.Schema, error) {
	types := ns.GetStruct().GetTypes()
	if len(types) != len(ns.GetNames()) {
		return nil, fmt.Errorf("schema has %d names for %d types (nested types are not supported)", len(ns.GetNames()), len(types))
	}
	fields := make([]arrow.Field, len(types))
	for i, t := range types {
		at, err := ArrowOf(t)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", ns.Names[i], err)
		}
		fields[i] = arrow.Field{Name: ns.Names[i], Type: at, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}
