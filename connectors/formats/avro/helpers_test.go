package avro

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allTypes is a table with a column of every supported type, NOT NULL and
// nullable.
func allTypes() *arrow.Schema {
	types := []struct {
		name string
		typ  arrow.DataType
	}{
		{"i8", arrow.PrimitiveTypes.Int8},
		{"i16", arrow.PrimitiveTypes.Int16},
		{"i32", arrow.PrimitiveTypes.Int32},
		{"i64", arrow.PrimitiveTypes.Int64},
		{"f32", arrow.PrimitiveTypes.Float32},
		{"f64", arrow.PrimitiveTypes.Float64},
		{"s", arrow.BinaryTypes.String},
		{"b", arrow.FixedWidthTypes.Boolean},
		{"ts", arrow.FixedWidthTypes.Timestamp_ms},
		{"tsus", arrow.FixedWidthTypes.Timestamp_us},
		{"dt", arrow.FixedWidthTypes.Date32},
		{"dec", &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{"dec38", &arrow.Decimal128Type{Precision: 38, Scale: 10}},
	}
	var fields []arrow.Field
	for _, t := range types {
		fields = append(fields, arrow.Field{Name: t.name, Type: t.typ})
		fields = append(fields, arrow.Field{Name: t.name + "_n", Type: t.typ, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

var alphabet = []string{"a", "b", "z", "é", "日本", "\x00", "🙂", "sensor-", "0123456789"}

// randomBatch builds n rows of random values for schema; nullable columns
// get nulls with probability 1/4.
func randomBatch(rng *rand.Rand, mem memory.Allocator, schema *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for r := 0; r < n; r++ {
		for c, f := range schema.Fields() {
			fb := b.Field(c)
			if f.Nullable && rng.IntN(4) == 0 {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int8Builder:
				fb.Append(int8(rng.Uint32()))
			case *array.Int16Builder:
				fb.Append(int16(rng.Uint32()))
			case *array.Int32Builder:
				fb.Append(int32(randInt(rng)))
			case *array.Int64Builder:
				fb.Append(randInt(rng))
			case *array.Float32Builder:
				fb.Append(float32(randFloat(rng)))
			case *array.Float64Builder:
				fb.Append(randFloat(rng))
			case *array.StringBuilder:
				var sb strings.Builder
				for k := rng.IntN(6); k > 0; k-- {
					sb.WriteString(alphabet[rng.IntN(len(alphabet))])
				}
				fb.Append(sb.String())
			case *array.BooleanBuilder:
				fb.Append(rng.IntN(2) == 0)
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(randInt(rng)))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(int32(randInt(rng))))
			case *array.Decimal128Builder:
				p := f.Type.(*arrow.Decimal128Type).Precision
				fb.Append(randDecimal(rng, p))
			default:
				panic(f.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

// randInt favours small values and the extremes.
func randInt(rng *rand.Rand) int64 {
	switch rng.IntN(6) {
	case 0:
		return int64(rng.IntN(128)) - 64
	case 1:
		return math.MinInt64 + int64(rng.IntN(3))
	case 2:
		return math.MaxInt64 - int64(rng.IntN(3))
	case 3:
		return int64(rng.Uint32())
	}
	return int64(rng.Uint64())
}

func randFloat(rng *rand.Rand) float64 {
	switch rng.IntN(5) {
	case 0:
		return float64(rng.IntN(100)) / 4
	case 1:
		return math.Inf(1 - 2*rng.IntN(2))
	case 2:
		return -0.0
	}
	return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
}

// randDecimal is a random unscaled value of at most p digits.
func randDecimal(rng *rand.Rand, p int32) decimal128.Num {
	digits := rng.IntN(int(p)) + 1
	v := decimal128.FromI64(0)
	ten := decimal128.FromI64(10)
	for k := 0; k < digits; k++ {
		v = v.Mul(ten).Add(decimal128.FromI64(int64(rng.IntN(10))))
	}
	if rng.IntN(2) == 0 {
		v = v.Negate()
	}
	return v
}

func checked(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}
