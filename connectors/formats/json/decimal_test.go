package json

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
	"github.com/clink-dev/clink/vector"
)

func TestDecodeDecimal(t *testing.T) {
	schema := schemaOf(field("amt", tDec10x3))
	for _, tc := range []struct {
		in   string // the value
		want string // the cell, or the error
	}{
		{`12.345`, `12.345`},
		{`-7`, `-7.000`},
		{`0`, `0.000`},
		{`-0`, `0.000`},
		{`-0.0`, `0.000`},
		{`0.10`, `0.100`},
		{`1e2`, `100.000`},
		{`1E2`, `100.000`},
		{`1e+2`, `100.000`},
		{`-1.5e-2`, `-0.015`},
		{`25e-4`, `0.003`},
		{`12345e-3`, `12.345`},
		{`0.0000012345e6`, `1.235`},
		{`0e99999999999999`, `0.000`},
		{`1e-99999999999`, `0.000`},
		{`-1e-99999999999`, `0.000`},
		{`9999999.999`, `9999999.999`},
		{`-9999999.999`, `-9999999.999`},

		// Rounding HALF_UP: ties away from zero, on the first dropped digit.
		{`0.0005`, `0.001`},
		{`-0.0005`, `-0.001`},
		{`0.0004`, `0.000`},
		{`-0.0004`, `0.000`},
		{`0.0004999`, `0.000`},
		{`0.0015`, `0.002`},
		{`0.0025`, `0.003`}, // not to even
		{`-0.0025`, `-0.003`},
		{`1.23449999`, `1.234`},
		{`5e-4`, `0.001`},
		{`4.5e-4`, `0.000`},
		{`0.00049999999999999999999999`, `0.000`},
		{`0.00050000000000000000000000`, `0.001`},
		{`0.00050000000000000000000001`, `0.001`},
		{`1234567.12345678901234567890123`, `1234567.123`},
		{`-1234567.12350000000000000000000`, `-1234567.124`},
		{`12345678901234567890123e-16`, `1234567.890`},
		{`0.000000000000000000000000000001e27`, `0.001`},
		{`1.000000000000000000000000000000000000000000000`, `1.000`},

		// Strings holding a JSON number, as Flink accepts.
		{`"12.345"`, `12.345`},
		{`"-0.0005"`, `-0.001`},
		{`"1e2"`, `100.000`},
		{`"\u0031.5"`, `1.500`},
		{`"9999999.9994999"`, `9999999.999`},

		// Out of range after scaling and rounding.
		{`123456789.5`, `field "amt": 123456789.5 does not fit DECIMAL(10, 3)`},
		{`10000000`, `field "amt": 10000000 does not fit DECIMAL(10, 3)`},
		{`-10000000`, `field "amt": -10000000 does not fit DECIMAL(10, 3)`},
		{`1e7`, `field "amt": 1e7 does not fit DECIMAL(10, 3)`},
		{`9999999.9995`, `field "amt": 9999999.9995 does not fit DECIMAL(10, 3)`},
		{`-9999999.9995`, `field "amt": -9999999.9995 does not fit DECIMAL(10, 3)`},
		{`1e99999999999`, `field "amt": 1e99999999999 does not fit DECIMAL(10, 3)`},
		{`99999999999999999999999999999999999999999`, `field "amt": ` + strings.Repeat("9", 40) + `... does not fit DECIMAL(10, 3)`},
		{`"123456789.5"`, `field "amt": "123456789.5" does not fit DECIMAL(10, 3)`},

		// Nulls.
		{`null`, `null`},

		// Not a number.
		{`true`, `field "amt": expected a number, found true`},
		{`false`, `field "amt": expected a number, found false`},
		{`{"a":1}`, `field "amt": expected a number, found an object`},
		{`[1]`, `field "amt": expected a number, found an array`},
		{`"abc"`, `field "amt": expected a number, found "abc"`},
		{`""`, `field "amt": expected a number, found ""`},
		{`" 1"`, `field "amt": expected a number, found " 1"`},
		{`"1 "`, `field "amt": expected a number, found "1 "`},
		{`"+1"`, `field "amt": expected a number, found "+1"`},
		{`".5"`, `field "amt": expected a number, found ".5"`},
		{`"1."`, `field "amt": expected a number, found "1."`},
		{`"01"`, `field "amt": expected a number, found "01"`},
		{`"1e"`, `field "amt": expected a number, found "1e"`},
		{`"-"`, `field "amt": expected a number, found "-"`},
		{`"NaN"`, `field "amt": expected a number, found "NaN"`},

		// Invalid JSON: the same errors as for other number columns.
		{`1.`, `invalid JSON at column 10: unexpected '}'`},
		{`.5`, `invalid JSON at column 8: unexpected '.'`},
		{`-`, `invalid JSON at column 9: unexpected '}'`},
		{`1e`, `invalid JSON at column 10: unexpected '}'`},
		{`01`, `invalid JSON at column 9: unexpected '1'`},
		{`+1`, `invalid JSON at column 8: unexpected '+'`},
		{`"1\q"`, `invalid JSON at column 10: invalid escape \q`},
		{`"1`, `invalid JSON at column 11: unexpected end of line`},
	} {
		line := `{"amt":` + tc.in + `}`
		got, err := decodeOne(schema, line)
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: got %s, want %s", line, got, tc.want)
		}
	}
}

func TestDecodeDecimalErrorColumn(t *testing.T) {
	_, err := decodeOne(schemaOf(field("s", tString), field("amt", tDec10x3)), `{"s":"x", "amt": 123456789.5}`)
	var re *RecordError
	if !errors.As(err, &re) || re.Column != 18 || re.Field != "amt" {
		t.Errorf("got %#v", err)
	}
}

// TestDecodeDecimalPrecisions covers the extremes of precision and scale.
func TestDecodeDecimalPrecisions(t *testing.T) {
	nines := strings.Repeat("9", 38)
	for _, tc := range []struct {
		prec, scale int32
		in, want    string
	}{
		{38, 0, nines, nines},
		{38, 0, "-" + nines, "-" + nines},
		{38, 0, nines + ".4999", nines},
		{38, 0, nines + ".5", "does not fit"},
		{38, 0, "1" + strings.Repeat("0", 38), "does not fit"},
		{38, 0, "1e37", "1" + strings.Repeat("0", 37)},
		{38, 0, "1e38", "does not fit"},
		{38, 0, "0.5", "1"},
		{38, 0, "-0.5", "-1"},
		{38, 0, "0.49999999999999999999999999999999999999999", "0"},
		{38, 38, "0." + nines, "0." + nines},
		{38, 38, "-0." + nines + "4", "-0." + nines},
		{38, 38, "0." + nines + "5", "does not fit"},
		{38, 38, "1", "does not fit"},
		{38, 38, "1e-38", "0." + strings.Repeat("0", 37) + "1"},
		{38, 38, "5e-39", "0." + strings.Repeat("0", 37) + "1"},
		{38, 38, "4.99e-39", "0." + strings.Repeat("0", 38)},
		{38, 10, "-1234567890123456789012345678.0123456789", "-1234567890123456789012345678.0123456789"},
		{38, 10, "1234567890123456789012345678.01234567895", "1234567890123456789012345678.0123456790"},
		{38, 10, "12345678901234567890123456789", "does not fit"},
		{1, 0, "9", "9"},
		{1, 0, "9.5", "does not fit"},
		{1, 0, "-9.49", "-9"},
		{1, 1, "0.95", "does not fit"},
		{1, 1, "-0.94", "-0.9"},
		{20, 2, "18446744073709551615.99", "does not fit"},
		{22, 2, "18446744073709551615.99", "18446744073709551615.99"},
		{22, 2, "18446744073709551616.005", "18446744073709551616.01"},
	} {
		schema := schemaOf(field("d", &arrow.Decimal128Type{Precision: tc.prec, Scale: tc.scale}))
		got, err := decodeOne(schema, `{"d":`+tc.in+`}`)
		if err != nil {
			got = err.Error()
			if strings.HasSuffix(got, fmt.Sprintf("does not fit DECIMAL(%d, %d)", tc.prec, tc.scale)) {
				got = "does not fit"
			}
		}
		if got != tc.want {
			t.Errorf("DECIMAL(%d, %d) %s: got %s, want %s", tc.prec, tc.scale, tc.in, got, tc.want)
		}
	}
}

// TestDecimalMatchesReference compares the conversion with refDecimal on
// random numbers of every length, exponent and rounding position.
func TestDecimalMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	n := 200000
	if testing.Short() {
		n = 40000
	}
	digits := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
			if r.IntN(4) == 0 {
				b[i] = "059"[r.IntN(3)] // ties, zeros and carries
			}
		}
		return string(b)
	}
	for range n {
		prec := int32(1 + r.IntN(38))
		scale := int32(r.IntN(int(prec) + 1))
		typ := &arrow.Decimal128Type{Precision: prec, Scale: scale}
		var s string
		if r.IntN(2) == 0 {
			s = "-"
		}
		intPart := digits(r.IntN(45))
		if intPart == "" || r.IntN(3) == 0 {
			intPart = "0"
		} else {
			intPart = strings.TrimLeft(intPart, "0")
			if intPart == "" {
				intPart = "1"
			}
		}
		s += intPart
		if r.IntN(3) > 0 {
			s += "." + digits(1+r.IntN(45))
		}
		if r.IntN(3) == 0 {
			s += "e" + []string{"", "+", "-"}[r.IntN(3)] + fmt.Sprint(r.IntN(50))
		}
		want, refErr := refDecimal(typ, []byte(s))
		num, end, ok := arrowcol.ScanDecimal([]byte(s), 0)
		if !ok || end != len(s) {
			t.Fatalf("%s: not scanned (%v, %d)", s, ok, end)
		}
		v, ok := num.ToDecimal([]byte(s), prec, scale)
		if ok != (refErr == nil) {
			t.Fatalf("DECIMAL(%d, %d) %s: fits %v, reference %v", prec, scale, s, ok, refErr)
		}
		if ok && v.ToString(scale) != want {
			t.Fatalf("DECIMAL(%d, %d) %s: got %s, want %s", prec, scale, s, v.ToString(scale), want)
		}
	}
}

func TestDecodeDecimalNoAllocs(t *testing.T) {
	schema := schemaOf(field("id", tInt64), field("amt", tDec10x3), field("big", &arrow.Decimal128Type{Precision: 38, Scale: 10}))
	lines := [][]byte{
		[]byte(`{"id":1,"amt":12.345,"big":-1234567890123456789012345678.0123456789}`),
		[]byte(`{"id":2,"amt":"12.3456","big":"1e20"}`),
		[]byte(`{"id":3,"amt":"\u0031.5","big":1.00000000000000000000000000000000000000000001e3}`),
		[]byte(`{"id":4,"amt":null}`),
	}
	d := NewDecoder(schema, memory.DefaultAllocator, Options{})
	defer d.Release()
	for k, l := range lines {
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

// TestDecimalRoundTrip decodes decimals, encodes them (all scale digits,
// as Flink writes them) and decodes the output again.
func TestDecimalRoundTrip(t *testing.T) {
	schema := schemaOf(field("amt", tDec10x3), field("n", tInt32))
	lines := []string{
		`{"amt":12.345,"n":1}`,
		`{"amt":-7,"n":2}`,
		`{"amt":"0.0005"}`,
		`{"amt":-0.0005,"n":4}`,
		`{"amt":null,"n":5}`,
		`{"amt":1e2}`,
		`{"amt":"-9999999.9994"}`,
		`{}`,
	}
	want := `{"amt":12.345,"n":1}
{"amt":-7.000,"n":2}
{"amt":0.001,"n":null}
{"amt":-0.001,"n":4}
{"amt":null,"n":5}
{"amt":100.000,"n":null}
{"amt":-9999999.999,"n":null}
{"amt":null,"n":null}
`
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d := NewDecoder(schema, mem, Options{})
	defer d.Release()
	for _, l := range lines {
		if err := d.Append([]byte(l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	rec := d.Flush()
	if err := validate(rec); err != nil {
		t.Fatal(err)
	}
	first := rows(rec)
	b := vector.New(rec)
	out := string(AppendBatch(nil, b))
	b.Release()
	if out != want {
		t.Fatalf("encoded\n%s\nwant\n%s", out, want)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if err := d.Append([]byte(l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	again := d.Flush()
	defer again.Release()
	if got := rows(again); strings.Join(got, "\n") != strings.Join(first, "\n") {
		t.Errorf("decoded again\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(first, "\n"))
	}
}

func TestCheckSchemaDecimal(t *testing.T) {
	for _, tc := range []struct {
		typ arrow.DataType
		ok  bool
	}{
		{tDec10x3, true},
		{&arrow.Decimal128Type{Precision: 38, Scale: 38}, true},
		{&arrow.Decimal128Type{Precision: 1, Scale: 0}, true},
		{&arrow.Decimal128Type{Precision: 5, Scale: 6}, false},
		{&arrow.Decimal128Type{Precision: 5, Scale: -1}, false},
		{&arrow.Decimal128Type{Precision: 0, Scale: 0}, false},
		{&arrow.Decimal128Type{Precision: 39, Scale: 0}, false},
		{&arrow.Decimal256Type{Precision: 10, Scale: 3}, false},
	} {
		err := CheckSchema(schemaOf(field("d", tc.typ)))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.typ, err)
		}
	}
}
