package avro

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/vector"
)

// TestProjection: columns not needed come out all NULL, the others as
// without projection, for the reader schema and for a writer schema.
func TestProjection(t *testing.T) {
	mem := checked(t)
	schema := allTypes()
	rng := rand.New(rand.NewPCG(9, 10))
	rec := randomBatch(rng, mem, schema, 200)
	defer rec.Release()
	enc, _ := NewEncoder(schema)
	buf, ends := enc.AppendBatch(nil, vector.New(rec), nil)
	js, _ := SchemaFor(schema, "com.example.Other")
	for trial := 0; trial < 4; trial++ {
		needed := make([]bool, schema.NumFields())
		for c := range needed {
			needed[c] = rng.IntN(2) == 0
		}
		dec := NewDecoder(schema, mem, Options{Needed: needed})
		w, err := dec.Writer(js)
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		for r, end := range ends {
			var err error
			if r%2 == 0 {
				err = dec.Append(buf[start:end])
			} else {
				err = dec.AppendWriter(w, buf[start:end])
			}
			if err != nil {
				t.Fatalf("row %d: %v", r, err)
			}
			start = end
		}
		got := dec.Flush()
		for c, f := range schema.Fields() {
			if needed[c] {
				if !array.Equal(got.Column(c), rec.Column(c)) {
					t.Errorf("needed column %s differs", f.Name)
				}
			} else if got.Column(c).NullN() != int(rec.NumRows()) || !arrow.TypeEqual(got.Column(c).DataType(), f.Type) {
				t.Errorf("column %s not needed: %d nulls of %d, type %s", f.Name, got.Column(c).NullN(), rec.NumRows(), got.Column(c).DataType())
			}
		}
		got.Release()
		dec.Release()
	}
}
