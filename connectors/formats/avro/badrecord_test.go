package avro

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

var badTable = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int32},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}},
	{Name: "e", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

const badWriter = `{"type":"record","name":"B","fields":[
 {"name":"a","type":"long"},
 {"name":"n","type":["null","long"]},
 {"name":"s","type":["null","string"]},
 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},
 {"name":"skipped","type":{"type":"array","items":"string"}},
 {"name":"ok","type":"boolean"}
]}`

// rec writes a badWriter record; nil n and s are null.
func badRec(a int64, n *int64, s *string, d []byte, e int64, ok byte) []byte {
	b := appendLong(nil, a)
	if n == nil {
		b = appendLong(b, 0)
	} else {
		b = appendLong(appendLong(b, 1), *n)
	}
	if s == nil {
		b = appendLong(b, 0)
	} else {
		b = appendLong(appendLong(b, 1), int64(len(*s)))
		b = append(b, *s...)
	}
	b = appendLong(b, int64(len(d)))
	b = append(b, d...)
	b = appendLong(b, e)
	b = appendLong(b, 1) // skipped: one block of one string
	b = appendLong(b, 1)
	b = append(b, 'z')
	b = appendLong(b, 0)
	return append(b, ok)
}

func ptr[T any](v T) *T { return &v }

// TestBadRecords: each bad record is a *RecordError naming the field, and
// leaves the decoder as it was: the good records around it decode right.
func TestBadRecords(t *testing.T) {
	mem := checked(t)
	dec := NewDecoder(badTable, mem, Options{})
	defer dec.Release()
	w, err := dec.Writer(badWriter)
	if err != nil {
		t.Fatal(err)
	}
	good := func(k int64) []byte {
		return badRec(k, ptr(k*10), ptr("good"), []byte{byte(k)}, k%2, 1)
	}
	long := func(k int) string { return strings.Repeat("x", k) }
	cases := []struct {
		name, field, reason string
		rec                 []byte
	}{
		{"varint", "a", "invalid varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"int range", "a", "out of range", badRec(1<<40, nil, ptr("s"), []byte{1}, 0, 1)},
		{"union branch", "n", "union branch 2 out of range", append(appendLong(appendLong(nil, 1), 2), 0)},
		{"null NOT NULL", "s", "null for a NOT NULL column", badRec(1, ptr(int64(3)), nil, []byte{1}, 0, 1)},
		{"utf8", "s", "invalid UTF-8", badRec(1, nil, ptr("ok\xffno"), []byte{1}, 0, 1)},
		// After n was written null, which starts n's validity bitmap.
		{"utf8 after null", "s", "invalid UTF-8", badRec(1, nil, ptr(long(40)+"\xc3"), []byte{1}, 0, 1)},
		{"decimal precision", "d", "out of range", badRec(1, nil, ptr("s"), []byte{0x01, 0x86, 0xa0}, 0, 1)}, // 1000.00
		{"enum index", "e", "enum index 2 out of range", badRec(1, nil, ptr("s"), []byte{1}, 2, 1)},
		{"bool", "ok", "invalid boolean", badRec(1, nil, ptr("s"), []byte{1}, 0, 2)},
		{"string length", "s", "negative length", append(appendLong(appendLong(appendLong(appendLong(nil, 1), 0), 1), -3), 'x')},
		{"skipped field", "skipped", "record truncated", append(good(1)[:len(good(1))-4], 10)},
		{"trailing", "", "1 trailing bytes", append(good(1), 0)},
	}
	full := good(9)
	for k := 0; k < len(full); k++ {
		cases = append(cases, struct {
			name, field, reason string
			rec                 []byte
		}{"truncated", "*", "record truncated", full[:k]})
	}
	var want [][]any
	for k, c := range cases {
		g := good(int64(k))
		if err := dec.AppendWriter(w, g); err != nil {
			t.Fatalf("good record %d: %v", k, err)
		}
		want = append(want, []any{int64(k)})
		err := dec.AppendWriter(w, c.rec)
		var re *RecordError
		if !errors.As(err, &re) {
			t.Errorf("%s: got %v, want a *RecordError", c.name, err)
			continue
		}
		if c.field == "*" && re.Field == "" || c.field != "*" && re.Field != c.field || !strings.Contains(re.Reason, c.reason) {
			t.Errorf("%s: got %v (field %q), want field %q and %q", c.name, err, re.Field, c.field, c.reason)
		}
		if dec.Len() != k+1 {
			t.Fatalf("%s: Len %d after the bad record, want %d", c.name, dec.Len(), k+1)
		}
	}
	got := dec.Flush()
	defer got.Release()
	if int(got.NumRows()) != len(want) {
		t.Fatalf("%d rows, want %d", got.NumRows(), len(want))
	}
	a := got.Column(0).(*array.Int32)
	n := got.Column(1).(*array.Int64)
	s := got.Column(2).(*array.String)
	d := got.Column(3).(*array.Decimal128)
	e := got.Column(4).(*array.String)
	ok := got.Column(5).(*array.Boolean)
	for k := range want {
		sym := []string{"X", "Y"}[k%2]
		if a.Value(k) != int32(k) || n.IsNull(k) || n.Value(k) != int64(k)*10 || s.Value(k) != "good" ||
			d.Value(k) != decimal128.FromI64(int64(int8(k))) || e.IsNull(k) || e.Value(k) != sym || !ok.Value(k) {
			t.Errorf("row %d: got a=%d n=%v s=%q d=%v e=%v ok=%v", k, a.Value(k), n.GetOneForMarshal(k), s.Value(k), d.Value(k), e.GetOneForMarshal(k), ok.Value(k))
		}
	}
	if got.Column(1).NullN() != 0 || got.Column(4).NullN() != 0 {
		t.Errorf("nulls of rejected records were counted: %d, %d", got.Column(1).NullN(), got.Column(4).NullN())
	}
}

// TestNullsAcrossBatches checks validity bitmaps started mid-batch, by a
// rejected record, and reset by Flush.
func TestNullsAcrossBatches(t *testing.T) {
	mem := checked(t)
	dec := NewDecoder(badTable, mem, Options{})
	defer dec.Release()
	w, _ := dec.Writer(badWriter)
	for batch := 0; batch < 3; batch++ {
		for k := 0; k < 600; k++ {
			var n *int64
			if k%7 == 3 {
				n = nil
			} else {
				n = ptr(int64(k))
			}
			if k == 5 {
				// Rejected, after n was made null.
				_ = dec.AppendWriter(w, badRec(1, nil, nil, []byte{1}, 0, 1))
			}
			if err := dec.AppendWriter(w, badRec(int64(k), n, ptr("v"), []byte{1}, 0, 1)); err != nil {
				t.Fatal(err)
			}
		}
		got := dec.Flush()
		col := got.Column(1).(*array.Int64)
		nulls := 0
		for k := 0; k < 600; k++ {
			if isNull := k%7 == 3; col.IsNull(k) != isNull || !isNull && col.Value(k) != int64(k) {
				t.Fatalf("batch %d row %d: %v", batch, k, col.GetOneForMarshal(k))
			}
			if k%7 == 3 {
				nulls++
			}
		}
		if col.NullN() != nulls {
			t.Errorf("NullN %d, want %d", col.NullN(), nulls)
		}
		got.Release()
	}
}
