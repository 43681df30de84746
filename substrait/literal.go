package substrait

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/kernels"
)

// LiteralExpr compiles a Substrait literal to a kernel constant.
func LiteralExpr(l *pb.Expression_Literal) (kernels.Expr, error) {
	switch v := l.GetLiteralType().(type) {
	case *pb.Expression_Literal_I8:
		return kernels.Literal(int64(v.I8), arrow.PrimitiveTypes.Int8)
	case *pb.Expression_Literal_I16:
		return kernels.Literal(int64(v.I16), arrow.PrimitiveTypes.Int16)
	case *pb.Expression_Literal_I32:
		return kernels.Literal(int64(v.I32), arrow.PrimitiveTypes.Int32)
	case *pb.Expression_Literal_I64:
		return kernels.Literal(v.I64, arrow.PrimitiveTypes.Int64)
	case *pb.Expression_Literal_Fp32:
		return kernels.Literal(float64(v.Fp32), arrow.PrimitiveTypes.Float32)
	case *pb.Expression_Literal_Fp64:
		return kernels.Literal(v.Fp64, arrow.PrimitiveTypes.Float64)
	case *pb.Expression_Literal_String_:
		return kernels.Literal(v.String_, arrow.BinaryTypes.String)
	case *pb.Expression_Literal_Boolean:
		return kernels.Literal(v.Boolean, arrow.FixedWidthTypes.Boolean)
	case *pb.Expression_Literal_Decimal_:
		d := v.Decimal
		if len(d.GetValue()) != 16 {
			return nil, fmt.Errorf("decimal literal has %d bytes, want 16", len(d.GetValue()))
		}
		num := decimal128.New(int64(binary.LittleEndian.Uint64(d.GetValue()[8:])), binary.LittleEndian.Uint64(d.GetValue()[:8]))
		return kernels.Literal(num, &arrow.Decimal128Type{Precision: d.GetPrecision(), Scale: d.GetScale()})
	case *pb.Expression_Literal_Null:
		t, err := ArrowOf(v.Null)
		if err != nil {
			return nil, err
		}
		return kernels.Literal(nil, t)
	}
	return nil, fmt.Errorf("literal %T is not supported", l.GetLiteralType())
}
