package protobuf

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/clink-dev/clink/vector"
)

func TestCompile(t *testing.T) {
	md, err := Compile("testdata/sensor.proto", "Reading")
	if err != nil {
		t.Fatal(err)
	}
	if md.FullName() != "sensors.v1.Reading" {
		t.Fatalf("got %s", md.FullName())
	}
	// The enum comes from an import beside the file.
	if fd := md.Fields().ByName("unit"); fd.Enum().FullName() != "sensors.v1.Unit" {
		t.Fatalf("unit: %v", fd.Enum().FullName())
	}
	for _, name := range []string{"sensors.v1.Reading", ".sensors.v1.Reading", "Reading.Calibration"} {
		if _, err := Compile("testdata/sensor.proto", name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = Compile("testdata/sensor.proto", "Nope")
	if err == nil || !strings.Contains(err.Error(), `has no message "Nope"; it defines sensors.v1.Reading, sensors.v1.Reading.Calibration`) {
		t.Fatalf("got %v", err)
	}
	_, err = Compile("testdata/broken.proto", "Broken")
	if err == nil || !strings.Contains(err.Error(), "testdata/broken.proto:5:3:") {
		t.Fatalf("got %v, want the position broken.proto:5:3", err)
	}
	_, err = Compile("testdata/missing.proto", "X")
	if err == nil || !strings.Contains(err.Error(), "missing.proto") {
		t.Fatalf("got %v", err)
	}
}

func TestCompileSource(t *testing.T) {
	_, err := CompileSource("reg.proto", "syntax = \"proto3\";\nmessage A { int64 a = 1; }\nmessage B { Unknown u = 1; }\n", "A")
	if err == nil || !strings.Contains(err.Error(), "reg.proto:3:13:") {
		t.Fatalf("got %v, want the position reg.proto:3:13", err)
	}
	_, err = CompileSource("reg.proto", `syntax = "proto3"; import "other.proto"; message A {}`, "A")
	if err == nil || !strings.Contains(err.Error(), "other.proto") {
		t.Fatalf("got %v", err)
	}
	_, err = CompileSource("reg.proto", `syntax = "proto3";`, "A")
	if err == nil || !strings.Contains(err.Error(), "defines no message") {
		t.Fatalf("got %v", err)
	}
}

// TestMessageFor derives a message from every column type, compiles it and
// round-trips a random batch through it.
func TestMessageFor(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "i", Type: arrow.PrimitiveTypes.Int32},
		{Name: "sm", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "ti", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "at2", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	src, err := MessageFor(schema, "clink.out.Row")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package clink.out;", `import "google/protobuf/timestamp.proto";`, "string id = 1;", "optional int64 n = 2;", "google.protobuf.Timestamp at = 9;", "optional string amount = 12;"} {
		if !strings.Contains(src, want) {
			t.Errorf("MessageFor lacks %q:\n%s", want, src)
		}
	}
	md, err := CompileSource("row.proto", src, "clink.out.Row")
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(mem, schema, rand.New(rand.NewPCG(5, 5)), 500, 3)
	defer rec.Release()
	enc, err := NewEncoder(schema, md)
	if err != nil {
		t.Fatal(err)
	}
	buf, ends, err := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder(schema, md, mem, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Release()
	start := 0
	rows := make([]int, len(ends))
	for k, end := range ends {
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(buf[start:end], m); err != nil {
			t.Fatal(err)
		}
		if err := dec.Append(buf[start:end]); err != nil {
			t.Fatal(err)
		}
		start, rows[k] = end, k
	}
	got := dec.Flush()
	defer got.Release()
	compareRows(t, rec, rows, got)

	bad := arrow.NewSchema([]arrow.Field{{Name: "a-b", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := MessageFor(bad, "R"); err == nil || !strings.Contains(err.Error(), `column "a-b" is not a valid protobuf field name`) {
		t.Fatalf("got %v", err)
	}
	if _, err := MessageFor(schema, "1x"); err == nil {
		t.Fatal("accepted message name 1x")
	}
}

func TestEncoderRefuses(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	for _, tc := range []struct {
		col  arrow.Field
		want string
	}{
		{arrow.Field{Name: "u32", Type: arrow.PrimitiveTypes.Int64}, "negative values have no encoding"},
		{arrow.Field{Name: "i32", Type: arrow.PrimitiveTypes.Int64}, "values may not fit 32 bits"},
		{arrow.Field{Name: "fl", Type: arrow.PrimitiveTypes.Float64}, "values would lose precision"},
	} {
		_, err := NewEncoder(arrow.NewSchema([]arrow.Field{tc.col}, nil), md)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.col.Name, err, tc.want)
		}
	}
}

// TestEncoderEnum: an enum column takes value names and numbers; other
// text is an error that leaves the row out.
func TestEncoderEnum(t *testing.T) {
	md := mustCompile(t, kindsSrc, "K")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "e", Type: arrow.BinaryTypes.String},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"ONE", "42", "nope", "ZERO"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 4}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	enc, _ := NewEncoder(schema, md)
	dst := enc.AppendRow([]byte("x"), rec, 2)
	var re *RecordError
	if err := enc.Err(); string(dst) != "x" || !errors.As(err, &re) || re.Field != "e" {
		t.Fatalf("AppendRow of a bad enum name: %q, %v", dst, err)
	}
	if enc.Err() != nil {
		t.Fatal("Err did not clear")
	}
	buf, ends, err := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	if err == nil || !strings.Contains(err.Error(), `row 2: field "e": "nope" names no value of the enum`) || len(ends) != 2 {
		t.Fatalf("AppendBatch: %v, %d rows", err, len(ends))
	}
	enumSchema := arrow.NewSchema(schema.Fields()[:1], nil)
	checkRows(t, decodeAll(t, enumSchema, md, Options{}, buf[:ends[0]], buf[ends[0]:ends[1]]), `"ONE"`, `"42"`)
}

func TestMessageAt(t *testing.T) {
	const src = `syntax = "proto3";
message A { message A1 {} message A2 { message Deep {} } }
message B {}`
	first, err := CompileSource("idx.proto", src, "")
	if err != nil || first.FullName() != "A" {
		t.Fatalf("got %v, %v", first, err)
	}
	file := first.ParentFile()
	for _, tc := range []struct {
		indexes []int
		want    string
	}{
		{nil, "A"}, {[]int{0}, "A"}, {[]int{1}, "B"}, {[]int{0, 1}, "A.A2"}, {[]int{0, 1, 0}, "A.A2.Deep"},
	} {
		md, err := MessageAt(file, tc.indexes)
		if err != nil || string(md.FullName()) != tc.want {
			t.Errorf("%v: got %v, %v; want %s", tc.indexes, md, err, tc.want)
		}
	}
	for _, bad := range [][]int{{2}, {0, 2}, {1, 0}, {-1}} {
		if _, err := MessageAt(file, bad); err == nil || !strings.Contains(err.Error(), "message indexes") {
			t.Errorf("%v: got %v", bad, err)
		}
	}
}
