package avro

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// FuzzDecode feeds arbitrary bytes to the reader-schema program and to a
// writer schema with nested values to skip: neither may panic, and after
// any error the decoder still decodes a good record.
func FuzzDecode(f *testing.F) {
	schema := allTypes()
	mem := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(11, 12))
	rec := randomBatch(rng, mem, schema, 8)
	enc, _ := NewEncoder(schema)
	buf, ends := enc.AppendBatch(nil, vector.New(rec), nil)
	good := buf[:ends[0]]
	start := 0
	for _, end := range ends {
		f.Add(buf[start:end], false)
		start = end
	}
	f.Add(badRec(1, ptr(int64(2)), ptr("s"), []byte{1}, 1, 1), true)
	f.Add([]byte{}, true)
	f.Add([]byte{0xff, 0xff, 0xff}, false)
	dec := NewDecoder(schema, mem, Options{})
	bad := NewDecoder(badTable, mem, Options{Needed: []bool{true, false, true, true, false, true}})
	w, err := bad.Writer(nestedWriter)
	if err != nil {
		f.Fatal(err)
	}
	goodBad := badRec(1, ptr(int64(2)), ptr("s"), []byte{1}, 1, 1)
	goodNested := append(append([]byte{}, goodBad[:len(goodBad)-1]...), 0, 0, 1)
	f.Fuzz(func(t *testing.T, b []byte, writer bool) {
		if writer {
			n := bad.Len()
			if err := bad.AppendWriter(w, b); err != nil && bad.Len() != n {
				t.Fatalf("a rejected record changed Len")
			}
			if err := bad.AppendWriter(w, goodNested); err != nil {
				t.Fatalf("good record after %x: %v", b, err)
			}
			if bad.Len() >= 1000 {
				bad.Flush().Release()
			}
			return
		}
		n := dec.Len()
		if err := dec.Append(b); err != nil && dec.Len() != n {
			t.Fatalf("a rejected record changed Len")
		}
		if err := dec.Append(good); err != nil {
			t.Fatalf("good record after %x: %v", b, err)
		}
		if dec.Len() >= 1000 {
			dec.Flush().Release()
		}
	})
}

// nestedWriter is badWriter with a recursive record and a map to skip.
const nestedWriter = `{"type":"record","name":"B","fields":[
 {"name":"a","type":"long"},
 {"name":"n","type":["null","long"]},
 {"name":"s","type":["null","string"]},
 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},
 {"name":"skipped","type":{"type":"array","items":"string"}},
 {"name":"tree","type":["null",{"type":"record","name":"Node","fields":[
   {"name":"kids","type":{"type":"array","items":"Node"}},
   {"name":"attrs","type":{"type":"map","values":["null","double",{"type":"fixed","name":"F","size":3}]}}]}]},
 {"name":"empties","type":{"type":"array","items":"null"}},
 {"name":"ok","type":"boolean"}
]}`
