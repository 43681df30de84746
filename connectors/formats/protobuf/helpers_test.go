package protobuf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// allProto has a field for every column type and field kind the format
// maps, plus fields no column reads.
const allProto = `syntax = "proto3";
package test;

import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

enum Color {
  RED = 0;
  GREEN = 1;
  BLUE = 2;
  INFRARED = 1000;
  NEGATIVE = -5;
  FAR = 50000;
}

message Inner {
  int32 a = 1;
  string b = 2;
}

message All {
  int64 i64 = 1;
  optional int32 i32 = 2;
  optional sint32 i16 = 3;
  optional sfixed32 i8 = 4;
  optional double f64 = 5;
  optional float f32 = 6;
  optional string s = 7;
  optional bool b = 8;
  google.protobuf.Timestamp ts = 9;
  optional string dec = 10;
  optional int32 day = 11;
  optional Color color = 12;
  google.protobuf.DoubleValue wd = 13;
  google.protobuf.StringValue ws = 14;
  google.protobuf.Int64Value wi = 15;
  google.protobuf.BoolValue wb = 16;
  sint64 z64 = 17;
  sfixed64 sf64 = 18;
  int64 tsms = 19;
  string plain = 20;
  float f32to64 = 21;
  repeated int32 unused_list = 22;
  Inner unused_msg = 23;
  map<string, int64> unused_map = 24;
  bytes unused_bytes = 25;
  google.protobuf.FloatValue wf = 26;
  google.protobuf.Int32Value wi32 = 27;
}
`

var decType = &arrow.Decimal128Type{Precision: 20, Scale: 3}

// allSchema reads All; the columns of fields without presence are NOT
// NULL (a NULL there is written as the default).
var allSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
	{Name: "dec", Type: decType, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "color", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "wd", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ws", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "wi", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "wb", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "z64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sf64", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tsms", Type: arrow.FixedWidthTypes.Timestamp_ms},
	{Name: "plain", Type: arrow.BinaryTypes.String},
	{Name: "F32TO64", Type: arrow.PrimitiveTypes.Float32}, // field f32to64, matched case-insensitively
	{Name: "wf", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "wi32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

func mustCompile(t testing.TB, text, msg string) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := CompileSource("test.proto", text, msg)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

var colors = []string{"RED", "GREEN", "BLUE", "INFRARED", "NEGATIVE", "FAR", "77", "-3", "2147483647"}

var words = []string{"", "a", "sensor-0001", "héllo wörld", "日本語", strings.Repeat("x", 200), "with\x00nul"}

// randomBatch builds n rows of schema with about one null in nullNth of
// the nullable cells.
func randomBatch(mem memory.Allocator, schema *arrow.Schema, r *rand.Rand, n, nullNth int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for c, f := range schema.Fields() {
		fb := b.Field(c)
		for range n {
			if f.Nullable && nullNth > 0 && r.IntN(nullNth) == 0 {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(randInt(r, math.MinInt64, math.MaxInt64))
			case *array.Int32Builder:
				fb.Append(int32(randInt(r, math.MinInt32, math.MaxInt32)))
			case *array.Int16Builder:
				fb.Append(int16(randInt(r, math.MinInt16, math.MaxInt16)))
			case *array.Int8Builder:
				fb.Append(int8(randInt(r, math.MinInt8, math.MaxInt8)))
			case *array.Float64Builder:
				fb.Append(randFloat(r))
			case *array.Float32Builder:
				fb.Append(float32(randFloat(r)))
			case *array.StringBuilder:
				if strings.Contains(f.Name, "color") {
					fb.Append(colors[r.IntN(len(colors))])
				} else {
					fb.Append(words[r.IntN(len(words))])
				}
			case *array.BooleanBuilder:
				fb.Append(r.IntN(2) == 0)
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(randInt(r, -62135596800000, 253402300799999)))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(randInt(r, -1_000_000, 1_000_000)))
			case *array.Decimal128Builder:
				t := f.Type.(*arrow.Decimal128Type)
				lim := decimal128.GetScaleMultiplier(int(t.Precision))
				v := decimal128.New(r.Int64N(1<<40), r.Uint64())
				if r.IntN(3) == 0 {
					v = decimal128.FromI64(randInt(r, -100000, 100000))
				}
				_, v = v.Div(lim)
				if r.IntN(2) == 0 {
					v = v.Negate()
				}
				fb.Append(v)
			default:
				panic(fmt.Sprintf("randomBatch: %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// randInt favours small values and the ends of the range.
func randInt(r *rand.Rand, lo, hi int64) int64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return lo
	case 2:
		return hi
	case 3:
		return max(lo, min(hi, r.Int64N(200)-100))
	}
	span := uint64(hi) - uint64(lo)
	if span == math.MaxUint64 {
		return int64(r.Uint64())
	}
	return lo + int64(r.Uint64N(span+1))
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	case 3:
		return float64(r.IntN(1000)) / 8
	}
	return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
}

// cellString renders row i of arr for comparisons ("NULL" for null).
func cellString(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Float64:
		return fmt.Sprintf("%v/%x", a.Value(i), math.Float64bits(a.Value(i)))
	case *array.Float32:
		return fmt.Sprintf("%v/%x", a.Value(i), math.Float32bits(a.Value(i)))
	case *array.String:
		return fmt.Sprintf("%q", a.Value(i))
	case *array.Timestamp:
		return a.Value(i).ToTime(arrow.Millisecond).Format("2006-01-02 15:04:05.999999999")
	case *array.Date32:
		return a.Value(i).FormattedString()
	}
	return arr.ValueStr(i)
}

// requireEqualRecords compares two records cell by cell.
func requireEqualRecords(t *testing.T, want, got arrow.RecordBatch) {
	t.Helper()
	if want.NumRows() != got.NumRows() || want.NumCols() != got.NumCols() {
		t.Fatalf("shape: want %dx%d, got %dx%d", want.NumRows(), want.NumCols(), got.NumRows(), got.NumCols())
	}
	bad := 0
	for c := 0; c < int(want.NumCols()); c++ {
		if !arrow.TypeEqual(want.Column(c).DataType(), got.Column(c).DataType()) {
			t.Fatalf("column %d: type %s, want %s", c, got.Column(c).DataType(), want.Column(c).DataType())
		}
		for i := 0; i < int(want.NumRows()); i++ {
			if w, g := cellString(want.Column(c), i), cellString(got.Column(c), i); w != g {
				t.Errorf("row %d column %s: got %s, want %s", i, want.ColumnName(c), g, w)
				if bad++; bad > 20 {
					t.FailNow()
				}
			}
		}
	}
}

// rowToDynamic builds the message holding row i of rec, through
// protoreflect only (the reference for the decoder).
func rowToDynamic(t *testing.T, md protoreflect.MessageDescriptor, rec arrow.RecordBatch, i int) *dynamicpb.Message {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	for c, f := range rec.Schema().Fields() {
		arr := rec.Column(c)
		if arr.IsNull(i) {
			continue
		}
		fd, err := fieldByName(md, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		var v protoreflect.Value
		switch a := arr.(type) {
		case *array.Int64:
			v = intValue(fd, a.Value(i))
		case *array.Int32:
			v = intValue(fd, int64(a.Value(i)))
		case *array.Int16:
			v = intValue(fd, int64(a.Value(i)))
		case *array.Int8:
			v = intValue(fd, int64(a.Value(i)))
		case *array.Date32:
			v = intValue(fd, int64(a.Value(i)))
		case *array.Float64:
			if fd.Kind() == protoreflect.FloatKind {
				v = protoreflect.ValueOfFloat32(float32(a.Value(i)))
			} else {
				v = protoreflect.ValueOfFloat64(a.Value(i))
			}
		case *array.Float32:
			v = protoreflect.ValueOfFloat32(a.Value(i))
		case *array.Boolean:
			v = protoreflect.ValueOfBool(a.Value(i))
		case *array.String:
			if fd.Kind() == protoreflect.EnumKind {
				ev := fd.Enum().Values().ByName(protoreflect.Name(a.Value(i)))
				if ev == nil {
					var n int32
					fmt.Sscan(a.Value(i), &n)
					v = protoreflect.ValueOfEnum(protoreflect.EnumNumber(n))
				} else {
					v = protoreflect.ValueOfEnum(ev.Number())
				}
			} else {
				v = protoreflect.ValueOfString(a.Value(i))
			}
		case *array.Decimal128:
			v = protoreflect.ValueOfString(a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
		case *array.Timestamp:
			ms := int64(a.Value(i))
			if fd.Kind() != protoreflect.MessageKind {
				v = intValue(fd, ms)
				break
			}
			ts := dynamicpb.NewMessage(fd.Message())
			sec, rem := ms/1000, ms%1000
			if rem < 0 {
				sec, rem = sec-1, rem+1000
			}
			ts.Set(fd.Message().Fields().ByNumber(1), protoreflect.ValueOfInt64(sec))
			ts.Set(fd.Message().Fields().ByNumber(2), protoreflect.ValueOfInt32(int32(rem*1e6)))
			v = protoreflect.ValueOfMessage(ts)
		default:
			t.Fatalf("rowToDynamic: %T", arr)
		}
		if fd.Kind() == protoreflect.MessageKind && fd.Message().FullName() != timestampName {
			w := dynamicpb.NewMessage(fd.Message())
			inner := fd.Message().Fields().ByNumber(1)
			switch inner.Kind() {
			case protoreflect.Int64Kind, protoreflect.Int32Kind:
				v = intValue(inner, v.Int())
			}
			w.Set(inner, v)
			v = protoreflect.ValueOfMessage(w)
		}
		m.Set(fd, v)
	}
	return m
}

func intValue(fd protoreflect.FieldDescriptor, v int64) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(v))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(v))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(v))
	case protoreflect.MessageKind:
		return protoreflect.ValueOfInt64(v)
	}
	return protoreflect.ValueOfInt64(v)
}

// dynamicCell renders field name of m as cellString renders the column
// the decoder should make of it (the reference for the encoder).
func dynamicCell(t *testing.T, m *dynamicpb.Message, f arrow.Field, readDefaults bool) string {
	t.Helper()
	fd, err := fieldByName(m.Descriptor(), f.Name)
	if err != nil {
		t.Fatal(err)
	}
	if fd.HasPresence() && !m.Has(fd) && f.Nullable && !readDefaults {
		return "NULL"
	}
	v := m.Get(fd)
	if fd.Kind() == protoreflect.MessageKind {
		sub := v.Message()
		if fd.Message().FullName() == timestampName {
			ms := sub.Get(fd.Message().Fields().ByNumber(1)).Int()*1000 + sub.Get(fd.Message().Fields().ByNumber(2)).Int()/1e6
			return arrow.Timestamp(ms).ToTime(arrow.Millisecond).Format("2006-01-02 15:04:05.999999999")
		}
		fd = fd.Message().Fields().ByNumber(1)
		v = sub.Get(fd)
	}
	switch f.Type.ID() {
	case arrow.STRING:
		if fd.Kind() == protoreflect.EnumKind {
			if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
				return fmt.Sprintf("%q", ev.Name())
			}
			return fmt.Sprintf("%q", fmt.Sprint(int32(v.Enum())))
		}
		return fmt.Sprintf("%q", v.String())
	case arrow.DECIMAL128:
		t := f.Type.(*arrow.Decimal128Type)
		n, err := decimal128.FromString(v.String(), t.Precision, t.Scale)
		if err != nil {
			return "bad decimal " + v.String()
		}
		return n.ToString(t.Scale)
	case arrow.FLOAT64:
		x := v.Float()
		return fmt.Sprintf("%v/%x", x, math.Float64bits(x))
	case arrow.FLOAT32:
		x := float32(v.Float())
		return fmt.Sprintf("%v/%x", x, math.Float32bits(x))
	case arrow.BOOL:
		return fmt.Sprint(v.Bool())
	case arrow.TIMESTAMP:
		return arrow.Timestamp(v.Int()).ToTime(arrow.Millisecond).Format("2006-01-02 15:04:05.999999999")
	case arrow.DATE32:
		return arrow.Date32(v.Int()).FormattedString()
	}
	return fmt.Sprint(v.Interface())
}
