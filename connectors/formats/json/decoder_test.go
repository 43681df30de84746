package json

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func schemaOf(fields ...arrow.Field) *arrow.Schema {
	for i := range fields {
		fields[i].Nullable = true
	}
	return arrow.NewSchema(fields, nil)
}

func field(name string, t arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: t} }

var (
	tInt8   = arrow.PrimitiveTypes.Int8
	tInt16  = arrow.PrimitiveTypes.Int16
	tInt32  = arrow.PrimitiveTypes.Int32
	tInt64  = arrow.PrimitiveTypes.Int64
	tF32    = arrow.PrimitiveTypes.Float32
	tF64    = arrow.PrimitiveTypes.Float64
	tString = arrow.BinaryTypes.String
	tBool   = arrow.FixedWidthTypes.Boolean
	tTS     = arrow.FixedWidthTypes.Timestamp_ms

	tDec10x3 = &arrow.Decimal128Type{Precision: 10, Scale: 3}
)

// cell renders one value of a record for comparisons: "null", or the value
// with %v (strings quoted, floats with strconv 'g' -1 and their sign).
func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch a := a.(type) {
	case *array.Int8:
		return strconv.Itoa(int(a.Value(i)))
	case *array.Int16:
		return strconv.Itoa(int(a.Value(i)))
	case *array.Int32:
		return strconv.Itoa(int(a.Value(i)))
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32) + signOf(math.Signbit(float64(a.Value(i))))
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64) + signOf(math.Signbit(a.Value(i)))
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	}
	panic(fmt.Sprintf("cell: %T", a))
}

func signOf(neg bool) string {
	if neg {
		return "(-)"
	}
	return ""
}

// rows renders a record as one string per row: cells joined by " | ".
func rows(rec arrow.RecordBatch) []string {
	var out []string
	for r := 0; r < int(rec.NumRows()); r++ {
		var cells []string
		for c := 0; c < int(rec.NumCols()); c++ {
			cells = append(cells, cell(rec.Column(c), r))
		}
		out = append(out, strings.Join(cells, " | "))
	}
	return out
}

// decodeAll decodes lines that must all be accepted and returns the rows.
func decodeAll(t *testing.T, schema *arrow.Schema, lines ...string) []string {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(schema, mem, Options{})
	defer d.Release()
	for _, l := range lines {
		if err := d.Append([]byte(l)); err != nil {
			t.Fatalf("Append(%s): %v", l, err)
		}
	}
	rec := d.Flush()
	defer rec.Release()
	if err := validate(rec); err != nil {
		t.Fatal(err)
	}
	return rows(rec)
}

// validate checks a record's arrays with arrow's full validation.
func validate(rec arrow.RecordBatch) error {
	for c := 0; c < int(rec.NumCols()); c++ {
		col := rec.Column(c)
		if col.Len() != int(rec.NumRows()) {
			return fmt.Errorf("column %d: %d rows, record has %d", c, col.Len(), rec.NumRows())
		}
		if v, ok := col.(interface{ ValidateFull() error }); ok {
			if err := v.ValidateFull(); err != nil {
				return fmt.Errorf("column %d: %w", c, err)
			}
		}
		nulls := 0
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				nulls++
			}
		}
		if nulls != col.NullN() {
			return fmt.Errorf("column %d: %d nulls in the bitmap, NullN says %d", c, nulls, col.NullN())
		}
		if fw, ok := col.DataType().(arrow.FixedWidthDataType); ok {
			if need := (col.Len()*fw.BitWidth() + 7) / 8; col.Data().Buffers()[1].Len() < need {
				return fmt.Errorf("column %d: values buffer has %d bytes, need %d", c, col.Data().Buffers()[1].Len(), need)
			}
		}
	}
	return nil
}

// decodeOne decodes one line into a fresh decoder and returns its row or
// its error.
func decodeOne(schema *arrow.Schema, line string) (string, error) {
	d := NewDecoder(schema, memory.DefaultAllocator, Options{})
	defer d.Release()
	if err := d.Append([]byte(line)); err != nil {
		return "", err
	}
	rec := d.Flush()
	defer rec.Release()
	return rows(rec)[0], nil
}

func TestDecodeTypes(t *testing.T) {
	schema := schemaOf(field("i8", tInt8), field("i16", tInt16), field("i32", tInt32),
		field("i64", tInt64), field("f32", tF32), field("f64", tF64), field("s", tString),
		field("b", tBool), field("ts", tTS))
	got := decodeAll(t, schema,
		`{"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,"f32":1.5,"f64":21.7,"s":"x","b":true,"ts":1772352000000}`,
		`{"i8":127,"i16":-32768,"i32":2147483647,"i64":-9223372036854775808,"f32":-3,"f64":-0.0,"s":"","b":false,"ts":"2026-03-01 08:00:00.123"}`,
		`{}`,
		`{"i8":null,"i16":null,"i32":null,"i64":null,"f32":null,"f64":null,"s":null,"b":null,"ts":null}`,
		` { "i8" : 3.0 , "i64" : 1e3 , "f64" : 5 , "f32" : 1e-3 } `+"\r\n",
	)
	want := []string{
		`-128 | 32767 | -2147483648 | 9223372036854775807 | 1.5 | 21.7 | "x" | true | 1772352000000`,
		`127 | -32768 | 2147483647 | -9223372036854775808 | -3(-) | -0(-) | "" | false | 1772352000123`,
		`null | null | null | null | null | null | null | null | null`,
		`null | null | null | null | null | null | null | null | null`,
		`3 | null | null | 1000 | 0.001 | 5 | null | null | null`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeStrings(t *testing.T) {
	schema := schemaOf(field("s", tString))
	for _, tc := range []struct{ in, want string }{
		{`"plain"`, "plain"},
		{`"tab\there"`, "tab\there"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{`"\u00e9t\u00C9"`, "étÉ"},
		{`"\u20ac"`, "€"},
		{`"\ud83d\ude00!"`, "😀!"},
		{`"\ud83d"`, "\uFFFD"},              // lone high surrogate
		{`"\ude00x"`, "\uFFFDx"},            // lone low surrogate
		{`"\ud83d\u0041"`, "\uFFFDA"},       // high surrogate, then not a low one
		{`"\ud83dx"`, "\uFFFDx"},            // high surrogate, then no escape
		{`"\ud83d\ud83d\ude00"`, "\uFFFD😀"}, // high, then a valid pair
		{`"héllo wörld ✓"`, "héllo wörld ✓"},
		{"\"del\x7f\"", "del\x7f"},
		{`"<&>"`, "<&>"},
		{`"a very long string that goes past the eight byte fast path, twice over"`, "a very long string that goes past the eight byte fast path, twice over"},
	} {
		got, err := decodeOne(schema, `{"s":`+tc.in+`}`)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if want := strconv.Quote(tc.want); got != want {
			t.Errorf("%s: got %s, want %s", tc.in, got, want)
		}
	}
}

func TestDecodeNumbers(t *testing.T) {
	schema := schemaOf(field("i8", tInt8), field("i64", tInt64), field("f32", tF32), field("f64", tF64))
	for _, tc := range []struct {
		in   string // the object's fields
		want string // the row, or the error
	}{
		{`"i64":0`, `null | 0 | null | null`},
		{`"i64":-0`, `null | 0 | null | null`},
		{`"i64":-0.0e5`, `null | 0 | null | null`},
		{`"i64":3.0`, `null | 3 | null | null`},
		{`"i64":3.000000000000000000000000`, `null | 3 | null | null`},
		{`"i64":12.5e1`, `null | 125 | null | null`},
		{`"i64":1E2`, `null | 100 | null | null`},
		{`"i64":100e-2`, `null | 1 | null | null`},
		{`"i64":922337203685477580.7e1`, `null | 9223372036854775807 | null | null`},
		{`"i64":-9223372036854775808`, `null | -9223372036854775808 | null | null`},
		{`"i64":-9.223372036854775808e18`, `null | -9223372036854775808 | null | null`},
		{`"i64":1000000000000000000`, `null | 1000000000000000000 | null | null`},
		{`"i64":0.0000000000000000000000000000000000001e37`, `null | 1 | null | null`},
		{`"i64":9223372036854775808`, `field "i64": 9223372036854775808 out of range for int64`},
		{`"i64":-9223372036854775809`, `field "i64": -9223372036854775809 out of range for int64`},
		{`"i64":123456789012345678901234567890`, `field "i64": 123456789012345678901234567890 out of range for int64`},
		{`"i64":1e19`, `field "i64": 1e19 out of range for int64`},
		{`"i64":1e999999999999`, `field "i64": 1e999999999999 out of range for int64`},
		{`"i64":3.5`, `field "i64": expected an integer, found 3.5`},
		{`"i64":1e-999999999999`, `field "i64": expected an integer, found 1e-999999999999`},
		{`"i64":1.00000000000000000000001`, `field "i64": expected an integer, found 1.00000000000000000000001`},
		{`"i8":127`, `127 | null | null | null`},
		{`"i8":-128`, `-128 | null | null | null`},
		{`"i8":128`, `field "i8": 128 out of range for int8`},
		{`"i8":-129`, `field "i8": -129 out of range for int8`},
		{`"i8":1.28e2`, `field "i8": 1.28e2 out of range for int8`},
		{`"f64":21.7`, `null | null | null | 21.7`},
		{`"f64":-21.7`, `null | null | null | -21.7(-)`},
		{`"f64":1e22`, `null | null | null | 1e+22`},
		{`"f64":1e23`, `null | null | null | 1e+23`},
		{`"f64":0.1`, `null | null | null | 0.1`},
		{`"f64":9007199254740993`, `null | null | null | 9.007199254740992e+15`},
		{`"f64":2.2250738585072011e-308`, `null | null | null | 2.225073858507201e-308`},
		{`"f64":1e-400`, `null | null | null | 0`},
		{`"f64":123456789012345678901234567890`, `null | null | null | 1.2345678901234568e+29`},
		{`"f64":1.7976931348623157e308`, `null | null | null | 1.7976931348623157e+308`},
		{`"f64":1e309`, `field "f64": 1e309 out of range for float64`},
		{`"f32":3.4028235e38`, `null | null | 3.4028235e+38 | null`},
		{`"f32":1e39`, `field "f32": 1e39 out of range for float32`},
		{`"f32":16777217`, `null | null | 1.6777216e+07 | null`},
		{`"f32":0.1`, `null | null | 0.1 | null`},
		{`"f64":"12"`, `field "f64": expected a number, found "12"`},
		{`"f64":true`, `field "f64": expected a number, found true`},
		{`"i64":[1]`, `field "i64": expected an integer, found an array`},
		{`"i64":{"a":1}`, `field "i64": expected an integer, found an object`},
		{`"f64":01`, `invalid JSON at column 9: unexpected '1'`},
		{`"f64":1.`, `invalid JSON at column 10: unexpected '}'`},
		{`"f64":.5`, `invalid JSON at column 8: unexpected '.'`},
		{`"f64":-`, `invalid JSON at column 9: unexpected '}'`},
		{`"f64":1e`, `invalid JSON at column 10: unexpected '}'`},
		{`"f64":1e+`, `invalid JSON at column 11: unexpected '}'`},
		{`"f64":+1`, `invalid JSON at column 8: unexpected '+'`},
		{`"i64":0x10`, `invalid JSON at column 9: unexpected 'x'`},
		{`"i64":12a`, `invalid JSON at column 10: unexpected 'a'`},
		{`"f64":NaN`, `invalid JSON at column 8: unexpected 'N'`},
	} {
		line := `{` + tc.in + `}`
		got, err := decodeOne(schema, line)
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", line, got, tc.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	schema := schemaOf(field("sensor_id", tString), field("temperature", tF64), field("on", tBool), field("ts", tTS))
	for _, tc := range []struct {
		line   string
		want   string
		column int
	}{
		{``, `empty line`, 0},
		{" \t\r\n", `empty line`, 0},
		{`{"temperature":"abc"}`, `field "temperature": expected a number, found "abc"`, 16},
		{`{"sensor_id":"a","temperature":}`, `invalid JSON at column 32: unexpected '}'`, 32},
		{`{"sensor_id":"abc"`, `invalid JSON at column 19: unexpected end of line`, 19},
		{`{"sensor_id":"abc"} x`, `unexpected trailing data`, 21},
		{`{"sensor_id":"abc"}{}`, `unexpected trailing data`, 20},
		{`[1,2]`, `invalid JSON at column 1: expected an object, found '['`, 1},
		{`"x"`, `invalid JSON at column 1: expected an object, found '"'`, 1},
		{`{"sensor_id":12}`, `field "sensor_id": expected a string, found 12`, 14},
		{`{"sensor_id":true}`, `field "sensor_id": expected a string, found true`, 14},
		{`{"sensor_id":{"a":1}}`, `field "sensor_id": expected a string, found an object`, 14},
		{`{"sensor_id":{"a":}}`, `invalid JSON at column 19: unexpected '}'`, 19},
		{`{"on":"yes"}`, `field "on": expected true or false, found "yes"`, 7},
		{`{"on":1}`, `field "on": expected true or false, found 1`, 7},
		{`{"on":tru}`, `invalid JSON at column 10: unexpected '}'`, 10},
		{`{"on":nul}`, `invalid JSON at column 10: unexpected '}'`, 10},
		{`{"on":True}`, `invalid JSON at column 7: unexpected 'T'`, 7},
		{`{"ts":"2026-02-30 00:00:00"}`, `field "ts": expected a timestamp ('YYYY-MM-DD HH:MM:SS[.fff]', RFC 3339 or epoch ms), found "2026-02-30 00:00:00"`, 7},
		{`{"ts":1.5}`, `field "ts": expected an integer, found 1.5`, 7},
		{`{"ts":true}`, `field "ts": expected an integer, found true`, 7},
		{`{"sensor_id":"a\qb"}`, `invalid JSON at column 16: invalid escape \q`, 16},
		{`{"sensor_id":"a\u12"}`, `invalid JSON at column 16: invalid escape \u12"}`, 16},
		{"{\"sensor_id\":\"a\tb\"}", `invalid JSON at column 16: control character in string`, 16},
		{"{\"other\":\"a\x01b\"}", `invalid JSON at column 12: control character in string`, 12},
		{"{\"sensor\x00_id\":1}", `invalid JSON at column 9: control character in string`, 9},
		{`{"sensor_id" "a"}`, `invalid JSON at column 14: unexpected '"'`, 14},
		{`{"sensor_id":"a",}`, `invalid JSON at column 18: unexpected '}'`, 18},
		{`{"sensor_id":"a" "b":1}`, `invalid JSON at column 18: unexpected '"'`, 18},
		{`{sensor_id:"a"}`, `invalid JSON at column 2: unexpected 's'`, 2},
		{`{'a':1}`, `invalid JSON at column 2: unexpected '''`, 2},
		{`{"x":[1,2,}`, `invalid JSON at column 11: unexpected '}'`, 11},
		{`{"x":[1 2]}`, `invalid JSON at column 9: unexpected '2'`, 9},
		{`{"x":{"a" 1}}`, `invalid JSON at column 11: unexpected '1'`, 11},
		{`{"x":{1:2}}`, `invalid JSON at column 7: unexpected '1'`, 7},
		{`{"x":é}`, `invalid JSON at column 6: unexpected 'é'`, 6},
		{"{\"x\":\xff}", `invalid JSON at column 6: unexpected byte 0xff`, 6},
		{"\ufeff{}", `invalid JSON at column 1: expected an object, found a UTF-8 byte-order mark (U+FEFF)`, 1},
		{"{\"sensor_id\":\"bad\xffutf8\"}", `field "sensor_id": invalid UTF-8 in a string: byte 0xff at column 18`, 18},
		{"{\"sensor_id\":\"esc\\n\xc3(\"}", `field "sensor_id": invalid UTF-8 in a string: byte 0xc3 at column 20`, 20},
		{`{"temperature":"` + strings.Repeat("x", 60) + `"}`, `field "temperature": expected a number, found "` + strings.Repeat("x", 39) + `...`, 16},
		{`{"x":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`, ``, 0},
		{`{"x":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, `invalid JSON at column 10005: nesting too deep`, 10005},
	} {
		_, err := decodeOne(schema, tc.line)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%.40q: unexpected error %v", tc.line, err)
			}
			continue
		}
		var re *RecordError
		if !errors.As(err, &re) {
			t.Errorf("%.40q: got %v, want a *RecordError", tc.line, err)
			continue
		}
		if re.Error() != tc.want || re.Column != tc.column {
			t.Errorf("%.40q:\n got %s (column %d)\nwant %s (column %d)", tc.line, re.Error(), re.Column, tc.want, tc.column)
		}
	}
}

// TestDecodeRollback checks that a rejected line leaves nothing behind,
// whatever it had written before the error.
func TestDecodeRollback(t *testing.T) {
	schema := schemaOf(field("s", tString), field("i", tInt32), field("f", tF64), field("b", tBool), field("ts", tTS))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(schema, mem, Options{})
	defer d.Release()
	good := []string{
		`{"s":"one","i":1,"f":1.5,"b":true,"ts":1}`,
		`{"s":"two","i":2}`,
		`{"s":"three","i":3,"f":3.5,"b":false,"ts":3}`,
	}
	bad := []string{
		`{"s":"xxxxxxxx","i":99,"f":9.9,"b":true,"ts":"bad"}`,
		`{"s":"yyyyyyy","i":1e20}`,
		`{"s":"esc\naped","i":5,"f":"x"}`,
		`{"b":false,"s":"zz","i":7} trailing`,
		`{"s":"ww","s":"vv","i":8,"f":8,"b":true,"ts":8,"x":[}`,
		`{"i":null,"s":null,"f":null,"b":null,"ts":null,"q":1,}`,
	}
	var want []string
	for k, g := range good {
		for _, b := range bad {
			if err := d.Append([]byte(b)); err == nil {
				t.Fatalf("%s: accepted", b)
			}
			if d.Len() != k {
				t.Fatalf("after %s: Len %d, want %d", b, d.Len(), k)
			}
		}
		if err := d.Append([]byte(g)); err != nil {
			t.Fatal(err)
		}
		got, _ := decodeOne(schema, g)
		want = append(want, got)
	}
	rec := d.Flush()
	defer rec.Release()
	if err := validate(rec); err != nil {
		t.Fatal(err)
	}
	if got := rows(rec); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeFieldMatching(t *testing.T) {
	schema := schemaOf(field("Temp", tInt64), field("temp", tInt64), field("sensor_id", tString))
	got := decodeAll(t, schema,
		`{"temp":1,"Temp":2,"sensor_id":"a"}`,
		`{"TEMP":3,"SENSOR_ID":"b"}`,                 // case-insensitive: the first column that folds
		`{"Sensor_Id":"c","temp":4}`,                 // other order
		`{"sensor_id":"d","temp":5,"sensor_id":"e"}`, // duplicate: last wins
		`{"temp":6,"temp":null}`,
		`{"temp":null,"temp":7}`,
		`{"sensor_\u0069d":"f","te\u006dp":8}`, // escaped keys
		`{"ſensor_id":"g"}`,                    // Unicode simple folding: ſ folds to s
		`{"sensor_id2":"h","sensor":"i","":0}`, // near misses
	)
	want := []string{
		`2 | 1 | "a"`,
		`3 | null | "b"`,
		`null | 4 | "c"`,
		`null | 5 | "e"`,
		`null | null | null`,
		`null | 7 | null`,
		`null | 8 | "f"`,
		`null | null | "g"`,
		`null | null | null`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeSkipsUnknownFields(t *testing.T) {
	schema := schemaOf(field("a", tInt64), field("z", tString))
	got := decodeAll(t, schema,
		`{"n":{"x":[1,{"y":"}]"},[],{}],"w":null},"a":1,"m":[true,false,null,-1.5e3,"\"]"],"z":"ok"}`,
		`{"n":"a\"b\\","a":2,"e":{},"f":[],"z":"ok2","g":[[[[]]]],"h":{"":{"":{}}}}`,
		`{ "n" : [ 1 , { "x" : "y" } ] , "a" : 3 }`,
	)
	want := []string{`1 | "ok"`, `2 | "ok2"`, `3 | null`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecodeTimestamps(t *testing.T) {
	schema := schemaOf(field("ts", tTS))
	ms := func(layout, s string) string {
		tm, err := time.Parse(layout, s)
		if err != nil {
			t.Fatal(err)
		}
		return strconv.FormatInt(tm.UnixMilli(), 10)
	}
	for _, tc := range []struct{ in, want string }{
		{`1772352000000`, "1772352000000"},
		{`-1`, "-1"},
		{`1.772352e12`, "1772352000000"},
		{`"2026-03-01 08:00:00"`, ms(time.DateTime, "2026-03-01 08:00:00")},
		{`"2026-03-01 08:00:00.1"`, ms(time.DateTime, "2026-03-01 08:00:00.1")},
		{`"2026-03-01 08:00:00.12"`, ms(time.DateTime, "2026-03-01 08:00:00.12")},
		{`"2026-03-01 08:00:00.123"`, ms(time.DateTime, "2026-03-01 08:00:00.123")},
		{`"2026-03-01 08:00:00.123999999"`, ms(time.DateTime, "2026-03-01 08:00:00.123")},
		{`"2026-03-01T08:00:00Z"`, ms(time.RFC3339, "2026-03-01T08:00:00Z")},
		{`"2026-03-01T08:00:00"`, ms(time.DateTime, "2026-03-01 08:00:00")},
		{`"2026-03-01T08:00:00.123+01:00"`, ms(time.RFC3339, "2026-03-01T08:00:00.123+01:00")},
		{`"2026-03-01T08:00:00-05:30"`, ms(time.RFC3339, "2026-03-01T08:00:00-05:30")},
		{`"2026-03-01 08:00:00.5Z"`, ms(time.RFC3339, "2026-03-01T08:00:00.5Z")},
		{`"2024-02-29 23:59:59.999"`, ms(time.DateTime, "2024-02-29 23:59:59.999")},
		{`"1969-12-31 23:59:59.999"`, "-1"},
		{`"1900-01-01 00:00:00"`, ms(time.DateTime, "1900-01-01 00:00:00")},
		{`"0001-01-01 00:00:00"`, ms(time.DateTime, "0001-01-01 00:00:00")},
		{`"0000-03-01 00:00:00"`, ms(time.DateTime, "0000-03-01 00:00:00")},
		{`"9999-12-31 23:59:59.999"`, ms(time.DateTime, "9999-12-31 23:59:59.999")},
		{`"2026-03-01\u002008:00:00"`, ms(time.DateTime, "2026-03-01 08:00:00")},
		{`null`, "null"},
	} {
		got, err := decodeOne(schema, `{"ts":`+tc.in+`}`)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
		} else if got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, in := range []string{
		`"2023-02-29 00:00:00"`, `"2026-13-01 00:00:00"`, `"2026-00-01 00:00:00"`, `"2026-04-31 00:00:00"`,
		`"2026-03-01 24:00:00"`, `"2026-03-01 08:60:00"`, `"2026-03-01 08:00:60"`, `"2026-03-01"`,
		`"2026-03-01 08:00"`, `"2026-03-01 08:00:00."`, `"2026-03-01 08:00:00.1234567890"`,
		`"2026-03-01 08:00:00,123"`, `"2026-03-01t08:00:00"`, `"2026-03-01T08:00:00z"`,
		`"2026-03-01T08:00:00+0100"`, `"2026-03-01T08:00:00+01"`, `"2026-03-01T08:00:00+24:00"`,
		`"2026-03-01T08:00:00+01:60"`, `"2026-03-01T08:00:00Z "`, `" 2026-03-01 08:00:00"`,
		`"26-03-01 08:00:00"`, `"2026-3-1 8:00:00"`, `"+2026-03-01 08:00:00"`, `""`,
	} {
		if _, err := decodeOne(schema, `{"ts":`+in+`}`); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// TestDecodeBatches decodes across many flushes and growth, with nulls
// appearing mid-batch, and checks every record and the allocator.
func TestDecodeBatches(t *testing.T) {
	schema := schemaOf(field("s", tString), field("i", tInt16), field("b", tBool), field("f", tF32))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(schema, mem, Options{})
	defer d.Release()
	row := 0
	for _, size := range []int{0, 1, 7, 300, 1024, 5000, 3} {
		var lines, want []string
		for k := 0; k < size; k++ {
			row++
			var l, w string
			switch {
			case row%97 == 0:
				l, w = `{}`, `null | null | null | null`
			case row%13 == 0:
				l, w = fmt.Sprintf(`{"s":null,"i":%d,"b":null,"f":%d}`, row%1000, row), fmt.Sprintf(`null | %d | null | %d`, row%1000, row)
			default:
				l = fmt.Sprintf(`{"s":"r%d","i":%d,"b":%t,"f":%d.5}`, row, row%1000, row%2 == 0, row)
				w = fmt.Sprintf(`"r%d" | %d | %t | %s`, row, row%1000, row%2 == 0, strconv.FormatFloat(float64(float32(float64(row)+0.5)), 'g', -1, 32))
			}
			lines, want = append(lines, l), append(want, w)
		}
		for _, l := range lines {
			if err := d.Append([]byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		if d.Len() != size {
			t.Fatalf("Len %d, want %d", d.Len(), size)
		}
		rec := d.Flush()
		if err := validate(rec); err != nil {
			t.Fatal(err)
		}
		got := rows(rec)
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("batch of %d, row %d: got %s, want %s", size, k, got[k], want[k])
			}
		}
		if len(got) != len(want) {
			t.Fatalf("batch of %d: %d rows", size, len(got))
		}
		rec.Release()
	}
}

func TestDecodeNoAllocs(t *testing.T) {
	schema := schemaOf(field("sensor_id", tString), field("ts", tTS), field("temperature", tF64),
		field("n", tInt32), field("ok", tBool), field("f", tF32))
	lines := [][]byte{
		[]byte(`{"sensor_id":"sensor-03","ts":1772352000000,"temperature":21.7}`),
		[]byte(`{"SENSOR_ID":"s\u00e9nsor\n","ts":"2026-03-01T08:00:00.123+01:00","temperature":1.2345678901234567890123e-5}`),
		[]byte(`{"extra":{"a":[1,2,{"b":"c"}]},"n":12,"ok":true,"f":0.1,"temperature":123456789012345678901234567890123}`),
		[]byte(`{"temperature":null,"sensor_id":null}`),
		[]byte(`{"temperature":"bad"}`), // errors allocate; this one is not measured
	}
	d := NewDecoder(schema, memory.DefaultAllocator, Options{})
	defer d.Release()
	for k, l := range lines[:4] {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := d.Append(l); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("line %d: %v allocations per Append", k, allocs)
		}
		d.Flush().Release()
	}
}

func TestCheckSchema(t *testing.T) {
	if err := CheckSchema(schemaOf(field("d", arrow.FixedWidthTypes.Date32))); err == nil ||
		err.Error() != `json format: column "d": type date32 is not supported` {
		t.Errorf("got %v", err)
	}
	if err := CheckSchema(schemaOf(field("t", arrow.FixedWidthTypes.Timestamp_us))); err == nil {
		t.Error("timestamp(us) accepted")
	}
	defer func() {
		if recover() == nil {
			t.Error("NewDecoder accepted an unsupported schema")
		}
	}()
	NewDecoder(schemaOf(field("d", arrow.FixedWidthTypes.Date32)), memory.DefaultAllocator, Options{})
}

// TestDecodeNeeded: with projection pushdown, skipped columns come out all
// NULL; their fields are checked for their kind (a string for an integer
// column is an error) but not converted (a fraction passes); a key naming
// a skipped column exactly does not fall back to a needed column of
// another case; batches of any size reuse one null array.
func TestDecodeNeeded(t *testing.T) {
	schema := schemaOf(field("A", tInt64), field("a", tInt64), field("s", tString), field("b", tBool))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(schema, mem, Options{Needed: []bool{false, true, false, true}})
	defer d.Release()
	for _, n := range []int{3, 1, 700} {
		for i := range n {
			line := fmt.Sprintf(`{"A": 1.5e300, "a": %d, "s": "\u00e9t\u00e9", "b": true}`, i)
			if err := d.Append([]byte(line)); err != nil {
				t.Fatalf("Append(%s): %v", line, err)
			}
		}
		rec := d.Flush()
		if err := validate(rec); err != nil {
			t.Fatal(err)
		}
		got := rows(rec)
		rec.Release()
		if len(got) != n || got[n-1] != fmt.Sprintf("null | %d | null | true", n-1) {
			t.Fatalf("%d rows, last %q", len(got), got[len(got)-1])
		}
	}
	for line, want := range map[string]string{
		`{"A": [1, }`:        "invalid JSON",
		`{"A": "soon"}`:      `field "A": expected an integer, found "soon"`,
		`{"s": [1]}`:         `field "s": expected a string, found an array`,
		`{"s": null, "A": -`: "invalid JSON",
	} {
		if err := d.Append([]byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Append(%s): %v, want an error with %q", line, err, want)
		}
	}
	if err := d.Append([]byte(`{"A": 5}`)); err != nil {
		t.Fatal(err)
	}
	rec := d.Flush()
	defer rec.Release()
	if got := rows(rec); got[0] != "null | null | null | null" {
		t.Fatalf("the skipped key A filled another column: %q", got[0])
	}
}
