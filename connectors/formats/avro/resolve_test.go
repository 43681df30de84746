package avro

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	hamba "github.com/hamba/avro/v2"
)

// TestResolveReference decodes random records of an older writer schema
// with Writer and with hamba/avro's own resolution (SchemaCompatibility.
// Resolve against SchemaFor's schema, then Unmarshal), which must agree:
// a removed nested field, int → long, float → double, bytes → string, a
// union with null second, and an added field taking its default.
func TestResolveReference(t *testing.T) {
	mem := checked(t)
	table := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "opt", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "site", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	const ws = `{"type":"record","name":"W","fields":[
	 {"name":"id","type":"long"},
	 {"name":"gone","type":{"type":"map","values":{"type":"array","items":"int"}}},
	 {"name":"count","type":"int"},
	 {"name":"ratio","type":["null","float"]},
	 {"name":"name","type":"bytes"},
	 {"name":"opt","type":["long","null"]}
	]}`
	writer := hamba.MustParse(ws)
	rs, _ := SchemaFor(table, "W")
	resolved, err := hamba.NewSchemaCompatibility().Resolve(hamba.MustParse(rs), writer)
	if err != nil {
		t.Fatal(err)
	}
	dec := NewDecoder(table, mem, Options{})
	defer dec.Release()
	w, err := dec.Writer(ws)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 14))
	var want []map[string]any
	for r := 0; r < 300; r++ {
		v := map[string]any{
			"id":    randInt(rng),
			"gone":  map[string]any{},
			"count": int(int32(randInt(rng))),
			"ratio": nil,
			"name":  []byte(alphabet[rng.IntN(len(alphabet))]),
			"opt":   nil,
		}
		for k := rng.IntN(3); k > 0; k-- {
			v["gone"].(map[string]any)[fmt.Sprint(k)] = []any{rng.IntN(100), -rng.IntN(100)}
		}
		if rng.IntN(2) == 0 {
			v["ratio"] = float32(randFloat(rng))
		}
		if rng.IntN(2) == 0 {
			v["opt"] = randInt(rng)
		}
		b, err := hamba.Marshal(writer, v)
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		if err := hamba.Unmarshal(resolved, b, &h); err != nil {
			t.Fatalf("row %d: hamba: %v", r, err)
		}
		want = append(want, h)
		if err := dec.AppendWriter(w, b); err != nil {
			t.Fatalf("row %d: %v", r, err)
		}
	}
	got := dec.Flush()
	defer got.Release()
	for r, h := range want {
		for c, f := range table.Fields() {
			g := generic(got.Column(c), r)
			hv := h[f.Name]
			if f.Name == "name" || f.Name == "site" {
				if bs, ok := hv.([]byte); ok { // hamba keeps bytes → string as bytes
					hv = string(bs)
				}
			}
			if !sameGeneric(hv, g) {
				t.Fatalf("row %d column %s: ours %v (%T), hamba %v (%T)", r, f.Name, g, g, hv, hv)
			}
		}
	}
}
