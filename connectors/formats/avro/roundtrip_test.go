package avro

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/vector"
)

// TestRoundTrip encodes random batches of every type and decodes them
// back, at several batch sizes.
func TestRoundTrip(t *testing.T) {
	mem := checked(t)
	schema := allTypes()
	enc, err := NewEncoder(schema)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 300, 1024, rng.IntN(2000)} {
		rec := randomBatch(rng, mem, schema, n)
		dec := NewDecoder(schema, mem, Options{})
		var buf []byte
		var ends []int
		buf, ends = enc.AppendBatch(buf[:0], vector.New(rec), ends[:0])
		start := 0
		for r, end := range ends {
			if err := dec.Append(buf[start:end]); err != nil {
				t.Fatalf("n=%d row %d: %v", n, r, err)
			}
			start = end
		}
		got := dec.Flush()
		if !array.RecordEqual(got, rec) {
			t.Errorf("n=%d: round trip differs:\nwant %v\ngot  %v", n, rec, got)
		}
		// AppendRow writes the same bytes.
		var row []byte
		start = 0
		for r, end := range ends {
			row = enc.AppendRow(row[:0], rec, r)
			if string(row) != string(buf[start:end]) {
				t.Fatalf("row %d: AppendRow differs from AppendBatch", r)
			}
			start = end
		}
		enc.Unbind()
		got.Release()
		rec.Release()
		dec.Release()
	}
}

// TestRoundTripSelection writes only the selected rows.
func TestRoundTripSelection(t *testing.T) {
	mem := checked(t)
	schema := allTypes()
	enc, _ := NewEncoder(schema)
	rng := rand.New(rand.NewPCG(3, 4))
	rec := randomBatch(rng, mem, schema, 100)
	defer rec.Release()
	var sel []int32
	for i := 0; i < 100; i++ {
		if rng.IntN(3) == 0 {
			sel = append(sel, int32(i))
		}
	}
	buf, ends := enc.AppendBatch(nil, &vector.Batch{Rec: rec, Sel: sel}, nil)
	if len(ends) != len(sel) {
		t.Fatalf("%d ends for %d rows", len(ends), len(sel))
	}
	dec := NewDecoder(schema, mem, Options{})
	defer dec.Release()
	start := 0
	for _, end := range ends {
		if err := dec.Append(buf[start:end]); err != nil {
			t.Fatal(err)
		}
		start = end
	}
	got := dec.Flush()
	defer got.Release()
	for k, i := range sel {
		want := rec.NewSlice(int64(i), int64(i)+1)
		g := got.NewSlice(int64(k), int64(k)+1)
		if !array.RecordEqual(want, g) {
			t.Errorf("selected row %d (physical %d) differs", k, i)
		}
		want.Release()
		g.Release()
	}
}
