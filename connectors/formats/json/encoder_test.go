package json

import (
	"bytes"
	stdjson "encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// batchOf builds a one-column batch with b's appends.
func batchOf[B array.Builder](t arrow.DataType, name string, fill func(B)) *vector.Batch {
	bld := array.NewBuilder(memory.DefaultAllocator, t)
	defer bld.Release()
	fill(bld.(B))
	arr := bld.NewArray()
	defer arr.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: t, Nullable: true}}, nil)
	return vector.New(array.NewRecordBatch(schema, []arrow.Array{arr}, int64(arr.Len())))
}

// marshalNoHTML is encoding/json's output with HTML escaping off.
func marshalNoHTML(t *testing.T, v any) string {
	var buf bytes.Buffer
	enc := stdjson.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func edgeFloats(r *rand.Rand, n int) []float64 {
	fs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 100, 1e20, 1e21, 1e-6, 1e-7,
		9.999999999999999e20, 999999999999999999999, 1.0000000000000001e-6, 9.99999999999e-7, 123456789, 1e100,
		math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308, 1 << 53, 1<<53 + 2,
		21.7, -21.7, 5e-324, 1.5e-7, 12345678901234567890, math.MaxFloat32, math.SmallestNonzeroFloat32}
	for range n {
		switch r.IntN(4) {
		case 0:
			fs = append(fs, math.Float64frombits(r.Uint64()))
		case 1:
			fs = append(fs, r.NormFloat64()*math.Pow(10, float64(r.IntN(60)-30)))
		case 2:
			fs = append(fs, float64(r.Int64N(1e6))/10)
		default:
			fs = append(fs, float64(float32(r.NormFloat64()*1e3)))
		}
	}
	return fs
}

func TestEncodeFloat64MatchesEncodingJSON(t *testing.T) {
	fs := edgeFloats(rand.New(rand.NewPCG(1, 2)), 200000)
	b := batchOf(arrow.PrimitiveTypes.Float64, "f", func(b *array.Float64Builder) {
		b.AppendValues(fs, nil)
		b.AppendValues([]float64{math.NaN(), math.Inf(1), math.Inf(-1)}, nil)
	})
	defer b.Release()
	lines := strings.Split(string(AppendBatch(nil, b)), "\n")
	for i, f := range fs {
		want := `{"f":null}`
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			want = `{"f":` + marshalNoHTML(t, f) + `}`
		}
		if lines[i] != want {
			t.Fatalf("%v: got %s, want %s", f, lines[i], want)
		}
	}
	for i := len(fs); i < len(fs)+3; i++ {
		if lines[i] != `{"f":null}` {
			t.Errorf("line %d: got %s, want null", i, lines[i])
		}
	}
}

func TestEncodeFloat32MatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var fs []float32
	for _, f := range edgeFloats(r, 100000) {
		if f32 := float32(f); !math.IsInf(float64(f32), 0) && !math.IsNaN(f) {
			fs = append(fs, f32)
		}
	}
	for range 100000 {
		// Random bits with a finite exponent.
		fs = append(fs, math.Float32frombits(r.Uint32()&^(0xff<<23)|uint32(r.IntN(255))<<23))
	}
	b := batchOf(arrow.PrimitiveTypes.Float32, "f", func(b *array.Float32Builder) { b.AppendValues(fs, nil) })
	defer b.Release()
	lines := strings.Split(string(AppendBatch(nil, b)), "\n")
	for i, f := range fs {
		if want := `{"f":` + marshalNoHTML(t, f) + `}`; lines[i] != want {
			t.Fatalf("%v: got %s, want %s", f, lines[i], want)
		}
	}
}

func TestEncodeStringsMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ss := []string{"", "plain", `"quoted"`, `back\slash`, "<script>&amp;</script>", "tab\tnew\nline\r",
		"\x00\x01\x1f\x7f", "\b\f", "é✓😀", "\u2028\u2029", "\xff\xfe", "bad\xc3(", "\xed\xa0\x80", "a\u00a0b"}
	for range 20000 {
		b := make([]byte, r.IntN(30))
		for k := range b {
			if r.IntN(3) == 0 {
				b[k] = byte(r.IntN(256))
			} else {
				b[k] = byte(0x20 + r.IntN(0x60))
			}
		}
		s := string(b)
		if r.IntN(4) == 0 {
			s += string(rune(r.IntN(0x110000)))
		}
		ss = append(ss, s)
	}
	b := batchOf(arrow.BinaryTypes.String, "s", func(b *array.StringBuilder) { b.AppendValues(ss, nil) })
	defer b.Release()
	lines := strings.Split(string(AppendBatch(nil, b)), "\n")
	for i, s := range ss {
		if want := `{"s":` + marshalNoHTML(t, s) + `}`; lines[i] != want {
			t.Fatalf("%q: got %s, want %s", s, lines[i], want)
		}
	}
}

func TestEncodeTimestamps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ms := []int64{0, -1, 1, 999, -999, -1000, -1001, 1772352000123, 253402300799999, -62135596800000, -62167219200000,
		253402300800000, math.MinInt64, math.MaxInt64}
	for range 100000 {
		ms = append(ms, r.Int64N(2*253402300800000)-253402300800000)
	}
	b := batchOf(arrow.FixedWidthTypes.Timestamp_ms, "ts", func(b *array.TimestampBuilder) {
		for _, v := range ms {
			b.Append(arrow.Timestamp(v))
		}
	})
	defer b.Release()
	lines := strings.Split(string(AppendBatch(nil, b)), "\n")
	for i, v := range ms {
		want := `{"ts":"` + time.UnixMilli(v).UTC().Format("2006-01-02 15:04:05.000") + `"}`
		if lines[i] != want {
			t.Fatalf("%d: got %s, want %s", v, lines[i], want)
		}
	}
	days := []int32{0, -1, 1, 20513, -719528, 2932896, math.MinInt32, math.MaxInt32}
	b2 := batchOf(arrow.FixedWidthTypes.Date32, "d", func(b *array.Date32Builder) {
		for _, v := range days {
			b.Append(arrow.Date32(v))
		}
	})
	defer b2.Release()
	lines = strings.Split(string(AppendBatch(nil, b2)), "\n")
	for i, v := range days {
		want := `{"d":"` + time.Unix(int64(v)*86400, 0).UTC().Format("2006-01-02") + `"}`
		if lines[i] != want {
			t.Errorf("%d: got %s, want %s", v, lines[i], want)
		}
	}
}

// allTypesBatch is a batch of every type the encoder writes natively, with
// nulls, sliced so that arrays have a non-zero offset.
func allTypesBatch(t *testing.T) *vector.Batch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "ts_s", Type: arrow.FixedWidthTypes.Timestamp_s, Nullable: true},
		{Name: "ts_ns", Type: arrow.FixedWidthTypes.Timestamp_ns, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "q\"<k>\n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for row := 0; row < 4; row++ {
		if row == 2 {
			for _, f := range rb.Fields() {
				f.AppendNull()
			}
			continue
		}
		k := row * 3
		rb.Field(0).(*array.Int8Builder).Append(int8(-k))
		rb.Field(1).(*array.Int16Builder).Append(int16(-k * 1000))
		rb.Field(2).(*array.Int32Builder).Append(int32(-k * 100000))
		rb.Field(3).(*array.Int64Builder).Append(-int64(k) * 1e15)
		rb.Field(4).(*array.Uint8Builder).Append(uint8(250 + k))
		rb.Field(5).(*array.Uint16Builder).Append(uint16(k))
		rb.Field(6).(*array.Uint32Builder).Append(uint32(k) << 30)
		rb.Field(7).(*array.Uint64Builder).Append(math.MaxUint64 - uint64(k))
		rb.Field(8).(*array.Float32Builder).Append(float32(k) + 0.1)
		rb.Field(9).(*array.Float64Builder).Append(float64(k) + 0.1)
		rb.Field(10).(*array.StringBuilder).Append("s<" + string(rune('a'+k)) + ">\"")
		rb.Field(11).(*array.LargeStringBuilder).Append("ls" + string(rune('a'+k)))
		rb.Field(12).(*array.BooleanBuilder).Append(k%2 == 0)
		rb.Field(13).(*array.TimestampBuilder).Append(arrow.Timestamp(1772352000123 + int64(k)))
		rb.Field(14).(*array.TimestampBuilder).Append(arrow.Timestamp(1772352000 + int64(k)))
		rb.Field(15).(*array.TimestampBuilder).Append(arrow.Timestamp(1772352000123456789 + int64(k)))
		rb.Field(16).(*array.Date32Builder).Append(arrow.Date32(20513 + k))
		rb.Field(17).(*array.BinaryBuilder).Append([]byte{byte(k), 0xff})
		rb.Field(18).(*array.Int64Builder).Append(int64(k))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	return vector.New(rec.NewSlice(1, 4)) // rows 1..3 of the four
}

func TestEncodeAllTypes(t *testing.T) {
	b := allTypesBatch(t)
	defer b.Release()
	want := `{"i8":-3,"i16":-3000,"i32":-300000,"i64":-3000000000000000,"u8":253,"u16":3,"u32":3221225472,"u64":18446744073709551612,"f32":3.1,"f64":3.1,"s":"s<d>\"","ls":"lsd","b":false,"ts":"2026-03-01 08:00:00.126","ts_s":"2026-03-01 08:00:03.000","ts_ns":"2026-03-01 08:00:00.123","d":"2026-03-04","bin":"A/8=","q\"<k>\n":3}
{"i8":null,"i16":null,"i32":null,"i64":null,"u8":null,"u16":null,"u32":null,"u64":null,"f32":null,"f64":null,"s":null,"ls":null,"b":null,"ts":null,"ts_s":null,"ts_ns":null,"d":null,"bin":null,"q\"<k>\n":null}
{"i8":-9,"i16":-9000,"i32":-900000,"i64":-9000000000000000,"u8":3,"u16":9,"u32":1073741824,"u64":18446744073709551606,"f32":9.1,"f64":9.1,"s":"s<j>\"","ls":"lsj","b":false,"ts":"2026-03-01 08:00:00.132","ts_s":"2026-03-01 08:00:09.000","ts_ns":"2026-03-01 08:00:00.123","d":"2026-03-10","bin":"Cf8=","q\"<k>\n":9}
`
	if got := string(AppendBatch(nil, b)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// A selection vector picks the live rows, in its order.
	b.Sel = []int32{2, 0}
	lines := strings.SplitAfter(want, "\n")
	if got := string(AppendBatch([]byte("prefix\n"), b)); got != "prefix\n"+lines[2]+lines[0] {
		t.Errorf("with selection: got\n%s", got)
	}
	if got := string(AppendRow(nil, b, 1)); got != lines[1] {
		t.Errorf("AppendRow: got %s", got)
	}
	b.Sel = []int32{}
	if got := AppendBatch(nil, b); len(got) != 0 {
		t.Errorf("empty selection: got %q", got)
	}
}

func TestEncodeNoColumns(t *testing.T) {
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 2)
	b := vector.New(rec)
	defer b.Release()
	if got := string(AppendBatch(nil, b)); got != "{}\n{}\n" {
		t.Errorf("got %q", got)
	}
}

// TestEncodeRoundTrip encodes decoded batches and decodes them again.
func TestEncodeRoundTrip(t *testing.T) {
	d := NewDecoder(refSchema, memory.DefaultAllocator, Options{})
	defer d.Release()
	g := lineGen{rand.New(rand.NewPCG(9, 9))}
	for d.Len() < 5000 {
		line := []byte(g.line())
		// Timestamps print as 'YYYY-MM-DD ...', so only years 0-9999
		// come back; keep the others out.
		if want, err := refDecode(refSchema, line); err == nil {
			if ts, _ := strconv.ParseInt(strings.Split(want, " | ")[1], 10, 64); ts < -62167219200000 || ts > 253402300799999 {
				continue
			}
		}
		_ = d.Append(line)
	}
	b := vector.New(d.Flush())
	defer b.Release()
	b.Sel = []int32{}
	for i := 0; i < b.NumRows(); i += 2 {
		b.Sel = append(b.Sel, int32(i))
	}
	out := AppendBatch(nil, b)
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	if len(lines) != b.Len() {
		t.Fatalf("%d lines for %d rows", len(lines), b.Len())
	}
	for _, l := range lines {
		if err := d.Append(l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	again := d.Flush()
	defer again.Release()
	// The selected rows, picked without vector.Take, which has no
	// decimal128 kernel.
	all := rows(b.Rec)
	var want []string
	for _, i := range b.Sel {
		want = append(want, all[i])
	}
	got := rows(again)
	for i := range want {
		// Every value comes back exactly (invalid UTF-8 was refused on the way in).
		if got[i] != want[i] {
			t.Fatalf("row %d: got %s, want %s", i, got[i], want[i])
		}
	}
}

func TestEncodeAllocsPerBatch(t *testing.T) {
	batch, total := sensorBatch(t, 1000)
	defer batch.Release()
	dst := make([]byte, 0, 2*total)
	allocs := testing.AllocsPerRun(100, func() { dst = AppendBatch(dst[:0], batch) })
	if allocs > 2 {
		t.Errorf("%v allocations per batch of 1000 rows", allocs)
	}
}
