package arrowcol

import "github.com/apache/arrow-go/v18/arrow"

// Kind is a column's type as the formats handle it. Each format supports
// a subset (see its CheckSchema).
type Kind uint8

const (
	Invalid Kind = iota
	Int8
	Int16
	Int32
	Int64
	Float32
	Float64
	String
	Bool
	Date        // date32
	TimestampMs // timestamp(ms)
	TimestampUs // timestamp(us)
	Decimal     // decimal128(p, s) with 1 <= p <= 38 and 0 <= s <= p
)

// KindOf maps an Arrow type to its kind, Invalid if no format handles it.
func KindOf(dt arrow.DataType) Kind {
	switch dt.ID() {
	case arrow.INT8:
		return Int8
	case arrow.INT16:
		return Int16
	case arrow.INT32:
		return Int32
	case arrow.INT64:
		return Int64
	case arrow.FLOAT32:
		return Float32
	case arrow.FLOAT64:
		return Float64
	case arrow.STRING:
		return String
	case arrow.BOOL:
		return Bool
	case arrow.DATE32:
		return Date
	case arrow.TIMESTAMP:
		switch dt.(*arrow.TimestampType).Unit {
		case arrow.Millisecond:
			return TimestampMs
		case arrow.Microsecond:
			return TimestampUs
		}
	case arrow.DECIMAL128:
		if t := dt.(*arrow.Decimal128Type); 1 <= t.Precision && t.Precision <= 38 && 0 <= t.Scale && t.Scale <= t.Precision {
			return Decimal
		}
	}
	return Invalid
}
