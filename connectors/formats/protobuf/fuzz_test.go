package protobuf

import (
	"errors"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/clink-dev/clink/vector"
)

// FuzzDecode: any input either appends one row or returns a *RecordError
// and appends nothing; the decoder never panics, the batch it builds is
// valid Arrow, and nothing leaks.
func FuzzDecode(f *testing.F) {
	md := mustCompile(f, allProto, "All")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := randomBatch(mem, allSchema, rand.New(rand.NewPCG(9, 9)), 40, 3)
	enc, _ := NewEncoder(allSchema, md)
	buf, ends, _ := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	rec.Release()
	start := 0
	for _, end := range ends {
		f.Add(buf[start:end])
		start = end
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x80})
	f.Add([]byte{0xa2, 0x01, 0x02, 0x08, 0x01}) // the packed repeated field 22
	// More readers of the same bytes: oneofs, proto2 defaults, NOT NULL.
	oneofMD := mustCompile(f, oneofSrc, "O")
	oneofSchema := arrow.NewSchema([]arrow.Field{
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	p2MD := mustCompile(f, proto2Src, "P2")
	p2Schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int16},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "level", Type: arrow.BinaryTypes.String},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 5, Scale: 2}},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	type reader struct {
		schema *arrow.Schema
		md     protoreflect.MessageDescriptor
		opts   Options
	}
	readers := []reader{
		{allSchema, md, Options{}},
		{allSchema, md, Options{ReadDefaultValues: true}},
		{allSchema, md, Options{Needed: []bool{true, false, true, false}}},
		{oneofSchema, oneofMD, Options{}},
		{p2Schema, p2MD, Options{}},
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		for _, rd := range readers {
			dec, err := NewDecoder(rd.schema, rd.md, mem, rd.opts)
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			for range 3 {
				err := dec.Append(msg)
				var re *RecordError
				switch {
				case err == nil:
					want++
				case !errors.As(err, &re):
					t.Fatalf("error %v is not a *RecordError", err)
				}
				if dec.Len() != want {
					t.Fatalf("Len %d, want %d", dec.Len(), want)
				}
			}
			got := dec.Flush()
			for c := 0; c < int(got.NumCols()); c++ {
				if got.Column(c).Len() != want {
					t.Fatalf("column %d: %d rows, want %d", c, got.Column(c).Len(), want)
				}
				s, ok := got.Column(c).(*array.String)
				if !ok {
					continue
				}
				if err := s.ValidateFull(); err != nil {
					t.Fatalf("column %d: %v", c, err)
				}
				for i := 0; i < s.Len(); i++ {
					if !utf8.ValidString(s.Value(i)) {
						t.Fatalf("column %d row %d: invalid UTF-8", c, i)
					}
				}
			}
			got.Release()
			dec.Release()
		}
	})
}
