package protobuf

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// decodeAll decodes msgs and renders the record's rows, "|"-separated
// cells; it fails the test on an error.
func decodeAll(t *testing.T, schema *arrow.Schema, md protoreflect.MessageDescriptor, opts Options, msgs ...[]byte) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dec, err := NewDecoder(schema, md, mem, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Release()
	for i, m := range msgs {
		if err := dec.Append(m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	rec := dec.Flush()
	defer rec.Release()
	return renderRows(rec)
}

func renderRows(rec arrow.RecordBatch) []string {
	var rows []string
	for i := 0; i < int(rec.NumRows()); i++ {
		var cells []string
		for c := 0; c < int(rec.NumCols()); c++ {
			cells = append(cells, cellString(rec.Column(c), i))
		}
		rows = append(rows, strings.Join(cells, "|"))
	}
	return rows
}

func checkRows(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// marshal builds a message of md with the given field values (by name)
// and serializes it with proto.Marshal.
func marshal(t *testing.T, md protoreflect.MessageDescriptor, set func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor)) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	set(m, func(name string) protoreflect.FieldDescriptor {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("no field %s", name)
		}
		return fd
	})
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const evoV1 = `syntax = "proto3";
message Reading {
  string id = 1;
  optional int64 count = 2;
  double temp = 3;
}`

// v2 removed count (2) and added unit (4) and flags (5).
const evoV2 = `syntax = "proto3";
message Reading {
  reserved 2;
  string id = 1;
  double temp = 3;
  optional string unit = 4;
  int32 flags = 5;
}`

func TestEvolution(t *testing.T) {
	v1 := mustCompile(t, evoV1, "Reading")
	v2 := mustCompile(t, evoV2, "Reading")
	s1 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	s2 := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64},
		{Name: "unit", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flags", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	new2 := marshal(t, v2, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("id"), protoreflect.ValueOfString("a"))
		m.Set(f("temp"), protoreflect.ValueOfFloat64(1.5))
		m.Set(f("unit"), protoreflect.ValueOfString("C"))
		m.Set(f("flags"), protoreflect.ValueOfInt32(3))
	})
	old1 := marshal(t, v1, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("id"), protoreflect.ValueOfString("b"))
		m.Set(f("count"), protoreflect.ValueOfInt64(7))
		m.Set(f("temp"), protoreflect.ValueOfFloat64(-2))
	})
	// The v1 reader skips unit and flags; count is absent: NULL.
	checkRows(t, decodeAll(t, s1, v1, Options{}, new2, old1),
		`"a"|NULL|1.5/3ff8000000000000`,
		`"b"|7|-2/c000000000000000`)
	// The v2 reader skips count; unit (optional) is NULL, flags (no
	// presence) its default 0 although the column is nullable.
	checkRows(t, decodeAll(t, s2, v2, Options{}, new2, old1),
		`"a"|1.5/3ff8000000000000|"C"|3`,
		`"b"|-2/c000000000000000|NULL|0`)
	// With read-default-values, the absent optional reads as "".
	checkRows(t, decodeAll(t, s2, v2, Options{ReadDefaultValues: true}, old1),
		`"b"|-2/c000000000000000|""|0`)
}

const proto2Src = `syntax = "proto2";
enum Level { LOW = 1; HIGH = 2; }
message P2 {
  optional int32 a = 1 [default = 10];
  optional int64 b = 2 [default = 100];
  optional string s = 3 [default = "dflt"];
  optional Level level = 4;
  optional string dec = 5 [default = "1.25"];
  required bool ok = 6;
  optional double d = 7 [default = 2.5];
}`

// TestPresenceAndDefaults follows Flink's protobuf.read-default-values on a
// proto2 message: absent fields are NULL, or with the option (or for NOT
// NULL columns) their declared defaults.
func TestPresenceAndDefaults(t *testing.T) {
	md := mustCompile(t, proto2Src, "P2")
	nullable := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "level", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	notNull := arrow.NewSchema(func() []arrow.Field {
		fs := append([]arrow.Field(nil), nullable.Fields()...)
		for i := range fs {
			fs[i].Nullable = false
		}
		return fs
	}(), nil)
	onlyA := marshal(t, md, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("a"), protoreflect.ValueOfInt32(88))
	})
	checkRows(t, decodeAll(t, nullable, md, Options{}, onlyA),
		`88|NULL|NULL|NULL|NULL|NULL|NULL`)
	defaults := `88|100|"dflt"|"LOW"|1.25|false|2.5/4004000000000000`
	checkRows(t, decodeAll(t, nullable, md, Options{ReadDefaultValues: true}, onlyA), defaults)
	checkRows(t, decodeAll(t, notNull, md, Options{}, onlyA), defaults)
	// An explicitly written default is a value, not NULL.
	explicit := marshal(t, md, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("b"), protoreflect.ValueOfInt64(100))
		m.Set(f("ok"), protoreflect.ValueOfBool(false))
	})
	checkRows(t, decodeAll(t, nullable, md, Options{}, explicit),
		`NULL|100|NULL|NULL|NULL|false|NULL`)
}

const oneofSrc = `syntax = "proto3";
message O {
  oneof v {
    int64 x = 1;
    string y = 2;
    int32 z = 3;
  }
  int32 k = 4;
}`

// TestOneof: a member clears the one seen before it, also when no column
// reads the later one; agrees with proto.Unmarshal.
func TestOneof(t *testing.T) {
	md := mustCompile(t, oneofSrc, "O")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	x := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5)
	y := protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "yy")
	z := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 9)
	k := protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), 1)
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	msgs := [][]byte{cat(x), cat(y), cat(x, y), cat(y, x), cat(x, z), cat(x, k, y, x), cat(z, x, k), cat(k), cat(y, z, y)}
	got := decodeAll(t, schema, md, Options{}, msgs...)
	for i, msg := range msgs {
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(msg, m); err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, f := range schema.Fields() {
			cells = append(cells, dynamicCell(t, m, f, false))
		}
		if want := strings.Join(cells, "|"); got[i] != want {
			t.Errorf("message %d: got %s, proto.Unmarshal %s", i, got[i], want)
		}
	}
}

const kindsSrc = `syntax = "proto3";
enum E { ZERO = 0; ONE = 1; }
message K {
  uint32 u32 = 1;
  uint64 u64 = 2;
  fixed32 f32 = 3;
  fixed64 f64 = 4;
  int64 i64 = 5;
  float fl = 6;
  E e = 7;
  string s = 8;
  sint32 s32 = 9;
  int32 i32 = 10;
}`

// TestKinds covers the mappings the round trip does not: unsigned fields,
// narrowing with a range check, float into DOUBLE, unknown enum numbers.
func TestKinds(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "u32", Type: arrow.PrimitiveTypes.Int64},
		{Name: "u64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Int32},
		{Name: "f64", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int8},
		{Name: "fl", Type: arrow.PrimitiveTypes.Float64},
		{Name: "e", Type: arrow.BinaryTypes.String},
		{Name: "s", Type: &arrow.Decimal128Type{Precision: 6, Scale: 2}, Nullable: true},
		{Name: "s32", Type: arrow.FixedWidthTypes.Date32},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int16},
	}, nil)
	m := marshal(t, md, func(m *dynamicpb.Message, f func(string) protoreflect.FieldDescriptor) {
		m.Set(f("u32"), protoreflect.ValueOfUint32(math.MaxUint32))
		m.Set(f("u64"), protoreflect.ValueOfUint64(math.MaxInt64))
		m.Set(f("f32"), protoreflect.ValueOfUint32(math.MaxInt32))
		m.Set(f("f64"), protoreflect.ValueOfUint64(1700000000123))
		m.Set(f("i64"), protoreflect.ValueOfInt64(-128))
		m.Set(f("fl"), protoreflect.ValueOfFloat32(0.1))
		m.Set(f("e"), protoreflect.ValueOfEnum(42))
		m.Set(f("s"), protoreflect.ValueOfString("-12.345"))
		m.Set(f("s32"), protoreflect.ValueOfInt32(-1))
		m.Set(f("i32"), protoreflect.ValueOfInt32(-32768))
	})
	checkRows(t, decodeAll(t, schema, md, Options{}, m, nil),
		`4294967295|9223372036854775807|2147483647|2023-11-14 22:13:20.123|-128|0.10000000149011612/3fb99999a0000000|"42"|-12.35|1969-12-31|-32768`,
		// The empty message: every field its zero value; s's "" is no
		// decimal, so NULL.
		`0|0|0|1970-01-01 00:00:00|0|0/0|"ZERO"|NULL|1970-01-01|0`)
}

// TestBadRecords: each malformed record is rejected with a *RecordError
// naming the field (or the byte offset of a wire error), nothing is
// appended, and the decoder goes on with the next record.
func TestBadRecords(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	all := mustCompile(t, allProto, "All")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "u64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "s", Type: &arrow.Decimal128Type{Precision: 4, Scale: 1}, Nullable: true},
		{Name: "e", Type: arrow.BinaryTypes.String},
		{Name: "u32", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	tsSchema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "plain", Type: arrow.BinaryTypes.String},
		{Name: "wi", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	tag := protowire.AppendTag
	good := tag(nil, 5, protowire.VarintType)
	good = protowire.AppendVarint(good, 3)
	ts := func(sec, nanos uint64) []byte {
		var in []byte
		in = protowire.AppendVarint(tag(in, 1, protowire.VarintType), sec)
		in = protowire.AppendVarint(tag(in, 2, protowire.VarintType), nanos)
		return protowire.AppendBytes(tag(nil, 9, protowire.BytesType), in)
	}
	cases := []struct {
		name   string
		md     protoreflect.MessageDescriptor
		schema *arrow.Schema
		msg    []byte
		field  string
		reason string
	}{
		{"truncated varint", md, schema, []byte{5 << 3, 0x80}, "", "truncated"},
		{"truncated tag", md, schema, append(append([]byte(nil), good...), 0x80), "", "truncated"},
		{"truncated bytes", md, schema, []byte{8<<3 | 2, 5, '1'}, "", "truncated"},
		{"truncated fixed64", md, schema, []byte{4<<3 | 1, 1, 2, 3}, "", "truncated"},
		{"bad varint", md, schema, append([]byte{5 << 3}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "", "bad varint"},
		{"field number 0", md, schema, []byte{0<<3 | 0, 1}, "", "invalid field number 0"},
		{"wrong wire type", md, schema, []byte{5<<3 | 5, 1, 2, 3, 4}, "i64", "wire type fixed32, want varint"},
		{"wrong wire type string", md, schema, []byte{8<<3 | 0, 1}, "s", "wire type varint, want length-delimited"},
		{"out of range", md, schema, protowire.AppendVarint([]byte{5 << 3}, 300), "i64", "300 out of range for int8"},
		{"negative out of range", md, schema, protowire.AppendVarint([]byte{5 << 3}, uint64(1<<64-129)), "i64", "-129 out of range"},
		{"uint64 out of range", md, schema, protowire.AppendVarint([]byte{2 << 3}, math.MaxUint64), "u64", "18446744073709551615 out of range for int64"},
		{"uint32 out of range", md, schema, protowire.AppendVarint([]byte{1 << 3}, math.MaxUint32), "u32", "4294967295 out of range for int32"},
		{"not a decimal", md, schema, protowire.AppendString([]byte{8<<3 | 2}, "1.2.3"), "s", `expected a decimal number, found "1.2.3"`},
		{"decimal too wide", md, schema, protowire.AppendString([]byte{8<<3 | 2}, "1000"), "s", "does not fit DECIMAL(4, 1)"},
		{"unknown field truncated", md, schema, []byte{20<<3 | 2, 9, 1}, "", "truncated"},
		{"end group", md, schema, []byte{15<<3 | 4}, "", "end group"},
		{"invalid UTF-8", all, tsSchema, protowire.AppendString(tag(nil, 20, protowire.BytesType), "a\xffb"), "plain", "invalid UTF-8"},
		{"nanos out of range", all, tsSchema, ts(1, 1e9), "ts", "nanos 1000000000 out of range"},
		{"seconds out of range", all, tsSchema, ts(1<<62, 0), "ts", "out of range for TIMESTAMP(3)"},
		{"wrapper value wire type", all, tsSchema, []byte{15<<3 | 2, 2, 1<<3 | 2, 0}, "wi", "wrapper value: wire type length-delimited, want varint"},
		{"wrapper truncated", all, tsSchema, []byte{15<<3 | 2, 3, 1 << 3, 0x80}, "", "truncated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			dec, err := NewDecoder(tc.schema, tc.md, mem, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dec.Release()
			if err := dec.Append(nil); err != nil {
				t.Fatal(err)
			}
			err = dec.Append(tc.msg)
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *RecordError", err)
			}
			if re.Field != tc.field || !strings.Contains(re.Reason, tc.reason) {
				t.Fatalf("got field %q reason %q (%v), want field %q reason containing %q", re.Field, re.Reason, err, tc.field, tc.reason)
			}
			if dec.Len() != 1 {
				t.Fatalf("Len %d after the error, want 1", dec.Len())
			}
			if err := dec.Append(nil); err != nil {
				t.Fatal(err)
			}
			rec := dec.Flush()
			defer rec.Release()
			rows := renderRows(rec)
			if len(rows) != 2 || rows[0] != rows[1] {
				t.Fatalf("rows around the rejected record differ: %q", rows)
			}
		})
	}
}

// TestProjection: columns not needed come out all NULL, and their fields
// are skipped without being checked.
func TestProjection(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	var m []byte
	m = protowire.AppendVarint(protowire.AppendTag(m, 5, protowire.VarintType), 1000)  // out of range for i64
	m = protowire.AppendString(protowire.AppendTag(m, 8, protowire.BytesType), "\xff") // invalid UTF-8
	m = protowire.AppendVarint(protowire.AppendTag(m, 1, protowire.VarintType), 12)
	checkRows(t, decodeAll(t, schema, md, Options{Needed: []bool{false, false, true}}, m, m),
		"NULL|NULL|12", "NULL|NULL|12")
	// Needed shorter than the schema: the rest are needed.
	m2 := protowire.AppendString(protowire.AppendTag(nil, 8, protowire.BytesType), "ok")
	checkRows(t, decodeAll(t, schema, md, Options{Needed: []bool{false}}, m2), `NULL|"ok"|0`)
}

// TestStringsAcrossGrowth: long strings and many rows grow the buffers.
func TestStringsAcrossGrowth(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	schema := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	var msgs [][]byte
	var want []string
	for i := range 3000 {
		s := strings.Repeat(string(rune('a'+i%26)), i%300)
		msgs = append(msgs, protowire.AppendString(protowire.AppendTag(nil, 8, protowire.BytesType), s))
		want = append(want, `"`+s+`"`)
	}
	checkRows(t, decodeAll(t, schema, md, Options{}, msgs...), want...)
}

func TestCheckSchema(t *testing.T) {
	const src = `syntax = "proto3";
import "google/protobuf/wrappers.proto";
message Inner { int32 a = 1; }
message M {
  repeated int32 list = 1;
  map<string, int32> m = 2;
  Inner inner = 3;
  bytes raw = 4;
  string s = 5;
  int64 Value = 6;
  int64 VALUE = 7;
  double d = 8;
  int32 i = 9;
  google.protobuf.BytesValue wb = 10;
}`
	md := mustCompile(t, src, "M")
	for _, tc := range []struct {
		col  arrow.Field
		want string
	}{
		{arrow.Field{Name: "missing", Type: arrow.PrimitiveTypes.Int64}, `column "missing": message M has no field of that name`},
		{arrow.Field{Name: "list", Type: arrow.PrimitiveTypes.Int32}, `field "list": repeated fields are not supported`},
		{arrow.Field{Name: "m", Type: arrow.PrimitiveTypes.Int32}, `field "m": map fields are not supported`},
		{arrow.Field{Name: "inner", Type: arrow.PrimitiveTypes.Int32}, `field "inner": nested message Inner is not supported`},
		{arrow.Field{Name: "raw", Type: arrow.BinaryTypes.String}, `field "raw": bytes fields are not supported`},
		{arrow.Field{Name: "s", Type: arrow.PrimitiveTypes.Int64}, `field "s": its type string cannot be read as int64`},
		{arrow.Field{Name: "d", Type: arrow.PrimitiveTypes.Float32}, `its type double cannot be read as float32`},
		{arrow.Field{Name: "i", Type: arrow.FixedWidthTypes.Timestamp_ms}, `its type int32 cannot be read as timestamp`},
		{arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Int64}, `matches fields "Value" and "VALUE"`},
		{arrow.Field{Name: "wb", Type: arrow.BinaryTypes.String}, `nested message google.protobuf.BytesValue is not supported`},
		{arrow.Field{Name: "s", Type: arrow.BinaryTypes.Binary}, `type binary is not supported`},
	} {
		err := CheckSchema(arrow.NewSchema([]arrow.Field{tc.col}, nil), md)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("column %s %s: got %v, want %q", tc.col.Name, tc.col.Type, err, tc.want)
		}
	}
	ok := arrow.NewSchema([]arrow.Field{
		{Name: "S", Type: arrow.BinaryTypes.String},
		{Name: "Value", Type: arrow.PrimitiveTypes.Int64},
		{Name: "i", Type: arrow.FixedWidthTypes.Date32},
	}, nil)
	if err := CheckSchema(ok, md); err != nil {
		t.Fatal(err)
	}
	dup := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "S", Type: arrow.BinaryTypes.String},
	}, nil)
	if err := CheckSchema(dup, md); err == nil || !strings.Contains(err.Error(), "both name field") {
		t.Fatalf("got %v", err)
	}
}

// TestSkipUnknown: fields the reader does not read, of every wire type
// (groups included) and around a field numbered beyond the dense table,
// are skipped as proto.Unmarshal skips them.
func TestSkipUnknown(t *testing.T) {
	const src = `syntax = "proto2";
message R {
  optional int64 a = 1;
  optional string far = 100000;
  optional group G = 7 { optional int32 x = 1; }
  optional fixed32 f = 8;
}`
	md := mustCompile(t, src, "R")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "far", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	tag := protowire.AppendTag
	var m []byte
	m = protowire.AppendVarint(tag(m, 2, protowire.VarintType), 1<<40)
	m = protowire.AppendFixed32(tag(m, 3, protowire.Fixed32Type), 7)
	m = protowire.AppendFixed64(tag(m, 4, protowire.Fixed64Type), 7)
	m = protowire.AppendString(tag(m, 5, protowire.BytesType), "skip me")
	m = tag(m, 7, protowire.StartGroupType)
	m = protowire.AppendVarint(tag(m, 1, protowire.VarintType), 3)
	m = tag(m, 9, protowire.StartGroupType) // a nested unknown group
	m = protowire.AppendString(tag(m, 1, protowire.BytesType), "x")
	m = tag(m, 9, protowire.EndGroupType)
	m = tag(m, 7, protowire.EndGroupType)
	m = protowire.AppendVarint(tag(m, 1, protowire.VarintType), 42)
	m = protowire.AppendString(tag(m, 100000, protowire.BytesType), "far away")
	m = protowire.AppendVarint(tag(m, 99999, protowire.VarintType), 1)
	m = protowire.AppendFixed32(tag(m, 8, protowire.Fixed32Type), 5)
	ref := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(m, ref); err != nil {
		t.Fatal(err)
	}
	want := dynamicCell(t, ref, schema.Field(0), false) + "|" + dynamicCell(t, ref, schema.Field(1), false)
	checkRows(t, decodeAll(t, schema, md, Options{}, m), want)
	checkRows(t, []string{want}, `42|"far away"`)
}

// TestCraftedAgainstUnmarshal decodes hand-made messages that exercise
// merging and the insides of Timestamp and wrapper messages, and compares
// every column with proto.Unmarshal's reading of the same bytes.
func TestCraftedAgainstUnmarshal(t *testing.T) {
	md := mustCompile(t, allProto, "All")
	tag := protowire.AppendTag
	sub := func(num protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), inner)
	}
	varintField := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(tag(nil, num, protowire.VarintType), v)
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	unknown := protowire.AppendString(tag(nil, 9, protowire.BytesType), "junk")
	msgs := [][]byte{
		nil,
		// Timestamp: seconds only, nanos only, merged, with an unknown field.
		sub(9, varintField(1, 1772352000)),
		sub(9, varintField(2, 999_999_999)),
		cat(sub(9, varintField(1, 5)), sub(9, varintField(2, 7_000_000))),
		cat(sub(9, cat(unknown, varintField(1, uint64(1<<64-10)))), sub(9, nil)),
		// Wrappers: empty, with an unknown field, merged, the second without a value.
		cat(sub(13, nil), sub(14, nil), sub(15, nil), sub(16, nil)),
		cat(sub(15, cat(unknown, varintField(1, 77))), sub(15, unknown)),
		cat(sub(14, protowire.AppendString(tag(nil, 1, protowire.BytesType), "first")), sub(14, protowire.AppendString(tag(nil, 1, protowire.BytesType), "second"))),
		cat(sub(16, varintField(1, 1)), sub(16, nil), sub(27, varintField(1, uint64(1<<64-1)))),
		// Repeated scalars: the last wins.
		cat(varintField(1, 1), varintField(1, 2), varintField(2, 3), varintField(2, uint64(1<<64-4))),
		cat(protowire.AppendString(tag(nil, 7, protowire.BytesType), "a long first value"), protowire.AppendString(tag(nil, 7, protowire.BytesType), "b")),
		// An enum number with no name, a negative one with a name.
		cat(varintField(12, 12345), varintField(12, uint64(1<<64-5))),
		varintField(12, 999),
	}
	got := decodeAll(t, allSchema, md, Options{}, msgs...)
	for i, msg := range msgs {
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(msg, m); err != nil {
			t.Fatal(err)
		}
		var cells []string
		for _, f := range allSchema.Fields() {
			cells = append(cells, dynamicCell(t, m, f, false))
		}
		if want := strings.Join(cells, "|"); got[i] != want {
			t.Errorf("message %d:\n got %s\nwant %s", i, got[i], want)
		}
	}
}

// TestStampWraparound: the per-row stamps wrap after 2^32 rows without
// a row seeing the values of another.
func TestStampWraparound(t *testing.T) {
	md := mustCompile(t, oneofSrc, "O")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dec, _ := NewDecoder(schema, md, mem, Options{})
	defer dec.Release()
	dec.gen = math.MaxUint32 - 1
	x := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5)
	y := protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "yy")
	for _, m := range [][]byte{x, y, nil, x, nil} {
		if err := dec.Append(m); err != nil {
			t.Fatal(err)
		}
	}
	rec := dec.Flush()
	defer rec.Release()
	checkRows(t, renderRows(rec), `5|NULL`, `NULL|"yy"`, `NULL|NULL`, `5|NULL`, `NULL|NULL`)
}
