package avro

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	hamba "github.com/hamba/avro/v2"
)

// generic is the value hamba/avro's generic decoding gives for row i of
// arr (the independent reference): nil for null, else int for int, int64
// for long, time.Time for the timestamps and date, *big.Rat for decimals.
func generic(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Int8:
		return int(a.Value(i))
	case *array.Int16:
		return int(a.Value(i))
	case *array.Int32:
		return int(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Timestamp:
		v := int64(a.Value(i))
		if a.DataType().(*arrow.TimestampType).Unit == arrow.Microsecond {
			return time.UnixMicro(v).UTC()
		}
		return time.UnixMilli(v).UTC()
	case *array.Date32:
		return time.Unix(int64(a.Value(i))*86400, 0).UTC()
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return new(big.Rat).SetFrac(a.Value(i).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	}
	panic(arr.DataType())
}

func sameGeneric(want, got any) bool {
	switch w := want.(type) {
	case nil:
		return got == nil
	case time.Time:
		g, ok := got.(time.Time)
		return ok && w.Equal(g)
	case *big.Rat:
		g, ok := got.(*big.Rat)
		return ok && w.Cmp(g) == 0
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(w) == math.Float64bits(g)
	case float32:
		g, ok := got.(float32)
		return ok && math.Float32bits(w) == math.Float32bits(g)
	}
	return want == got
}

// TestReferenceHamba checks both directions against hamba/avro's generic
// encoding of SchemaFor's schema: our Encoder's bytes decode with hamba to
// the expected values, and hamba's bytes of those values decode with our
// Decoder to the original batch.
func TestReferenceHamba(t *testing.T) {
	mem := checked(t)
	schema := allTypes()
	js, err := SchemaFor(schema, "")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := hamba.Parse(js)
	if err != nil {
		t.Fatalf("hamba rejects SchemaFor's schema: %v\n%s", err, js)
	}
	enc, _ := NewEncoder(schema)
	dec := NewDecoder(schema, mem, Options{})
	defer dec.Release()
	rng := rand.New(rand.NewPCG(5, 6))
	rec := randomBatch(rng, mem, schema, 500)
	defer rec.Release()
	var buf []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		want := map[string]any{}
		for c, f := range schema.Fields() {
			want[f.Name] = generic(rec.Column(c), i)
		}
		buf = enc.AppendRow(buf[:0], rec, i)
		var got map[string]any
		if err := hamba.Unmarshal(hs, buf, &got); err != nil {
			t.Fatalf("row %d: hamba cannot read our encoding: %v", i, err)
		}
		for name, w := range want {
			if !sameGeneric(w, got[name]) {
				t.Fatalf("row %d column %s: hamba read %v (%T), want %v (%T)", i, name, got[name], got[name], w, w)
			}
		}
		hb, err := hamba.Marshal(hs, want)
		if err != nil {
			t.Fatalf("row %d: hamba cannot write %v: %v", i, want, err)
		}
		if err := dec.Append(hb); err != nil {
			t.Fatalf("row %d: cannot read hamba's encoding %x: %v", i, hb, err)
		}
	}
	got := dec.Flush()
	defer got.Release()
	if !array.RecordEqual(got, rec) {
		for c := range schema.Fields() {
			if !array.Equal(got.Column(c), rec.Column(c)) {
				t.Errorf("column %s: decoded from hamba's bytes:\n%v\nwant\n%v", schema.Field(c).Name, got.Column(c), rec.Column(c))
			}
		}
	}
}
