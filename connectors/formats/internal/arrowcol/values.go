package arrowcol

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Values is a typed view of one array of a record, as an encoder reads it
// row by row: set up once per record by Bind, so that the row loop only
// indexes a slice of the column's kind.
type Values struct {
	Nulls []byte // validity bitmap; nil when the array has no nulls
	Off   int    // the array's offset into Nulls

	I8   []int8
	I16  []int16
	I32  []int32 // Int32, Date
	I64  []int64 // Int64, TimestampMs, TimestampUs
	F32  []float32
	F64  []float64
	Str  *array.String
	Bool *array.Boolean
	Dec  []decimal128.Num
}

// Bind points v at arr. It is false if arr is of no Kind.
func (v *Values) Bind(arr arrow.Array) bool {
	v.Nulls, v.Off = nil, 0
	if arr.NullN() > 0 {
		v.Nulls = arr.NullBitmapBytes()
		v.Off = arr.Data().Offset()
	}
	switch a := arr.(type) {
	case *array.Int8:
		v.I8 = a.Values()
	case *array.Int16:
		v.I16 = a.Values()
	case *array.Int32:
		v.I32 = a.Values()
	case *array.Date32:
		v.I32 = arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.Date32Values()))
	case *array.Int64:
		v.I64 = a.Values()
	case *array.Timestamp:
		v.I64 = arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.TimestampValues()))
	case *array.Float32:
		v.F32 = a.Values()
	case *array.Float64:
		v.F64 = a.Values()
	case *array.String:
		v.Str = a
	case *array.Boolean:
		v.Bool = a
	case *array.Decimal128:
		v.Dec = a.Values()
	default:
		return false
	}
	return true
}

// IsNull reports whether row i is null.
func (v *Values) IsNull(i int) bool {
	j := v.Off + i
	return v.Nulls != nil && v.Nulls[j>>3]&(1<<(j&7)) == 0
}
