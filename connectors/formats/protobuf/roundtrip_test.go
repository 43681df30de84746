package protobuf

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/clink-dev/clink/vector"
)

// compareRows checks that row k of got is row rows[k] of want.
func compareRows(t *testing.T, want arrow.RecordBatch, rows []int, got arrow.RecordBatch) {
	t.Helper()
	if int(got.NumRows()) != len(rows) {
		t.Fatalf("got %d rows, want %d", got.NumRows(), len(rows))
	}
	bad := 0
	for c := 0; c < int(want.NumCols()); c++ {
		for k, i := range rows {
			if w, g := cellString(want.Column(c), i), cellString(got.Column(c), k); w != g {
				t.Errorf("row %d column %s: got %s, want %s", k, want.ColumnName(c), g, w)
				if bad++; bad > 20 {
					t.FailNow()
				}
			}
		}
	}
}

// TestRoundTrip writes random batches (nulls in every nullable column,
// random selection vectors) with the Encoder and checks each message
// against proto.Unmarshal into a dynamicpb message and against
// proto.Marshal's bytes for the same row, then reads them back
// with the Decoder. The Decoder also reads proto.Marshal's encoding of the
// same rows built with dynamicpb.
func TestRoundTrip(t *testing.T) {
	md := mustCompile(t, allProto, "test.All")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	enc, err := NewEncoder(allSchema, md)
	if err != nil {
		t.Fatal(err)
	}
	for seed, n := range []int{1, 7, 300, 1024, 1500} {
		r := rand.New(rand.NewPCG(uint64(seed), 42))
		rec := randomBatch(mem, allSchema, r, n, 3)
		var sel []int32
		rows := make([]int, 0, n)
		if seed%2 == 1 {
			sel = []int32{}
			for i := range n {
				if r.IntN(3) != 0 {
					sel = append(sel, int32(i))
					rows = append(rows, i)
				}
			}
		} else {
			for i := range n {
				rows = append(rows, i)
			}
		}
		buf, ends, err := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec, Sel: sel})
		if err != nil {
			t.Fatal(err)
		}
		if len(ends) != len(rows) {
			t.Fatalf("%d ends for %d rows", len(ends), len(rows))
		}
		dec, err := NewDecoder(allSchema, md, mem, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewDecoder(allSchema, md, mem, Options{})
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		for k, end := range ends {
			msg := buf[start:end]
			start = end
			m := dynamicpb.NewMessage(md)
			if err := proto.Unmarshal(msg, m); err != nil {
				t.Fatalf("row %d: proto.Unmarshal of the encoder's output: %v", rows[k], err)
			}
			for c, f := range allSchema.Fields() {
				if w, g := cellString(rec.Column(c), rows[k]), dynamicCell(t, m, f, false); w != g {
					t.Errorf("row %d column %s: proto.Unmarshal read %s, want %s", rows[k], f.Name, g, w)
				}
			}
			if err := dec.Append(msg); err != nil {
				t.Fatalf("row %d: %v", rows[k], err)
			}
			refMsg, err := proto.MarshalOptions{Deterministic: true}.Marshal(rowToDynamic(t, md, rec, rows[k]))
			if err != nil {
				t.Fatal(err)
			}
			// The encoder writes what proto.Marshal writes, byte for byte.
			if string(refMsg) != string(msg) {
				t.Errorf("row %d: encoder wrote %x, proto.Marshal %x", rows[k], msg, refMsg)
			}
			if err := ref.Append(refMsg); err != nil {
				t.Fatalf("row %d: proto.Marshal's message: %v", rows[k], err)
			}
		}
		got := dec.Flush()
		compareRows(t, rec, rows, got)
		got.Release()
		got = ref.Flush()
		compareRows(t, rec, rows, got)
		got.Release()
		dec.Release()
		ref.Release()
		rec.Release()
		if t.Failed() {
			t.FailNow()
		}
	}
}

// TestRoundTripBatchSizes decodes the same messages flushing every 1, 7,
// 1024 and a random number of rows: the concatenated batches are the same.
func TestRoundTripBatchSizes(t *testing.T) {
	md := mustCompile(t, allProto, "All")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(7, 7))
	rec := randomBatch(mem, allSchema, r, 2000, 2)
	defer rec.Release()
	enc, _ := NewEncoder(allSchema, md)
	buf, ends, err := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 7, 1024, 1 + r.IntN(500)} {
		dec, _ := NewDecoder(allSchema, md, mem, Options{})
		start, row0 := 0, 0
		flush := func() {
			got := dec.Flush()
			rows := make([]int, got.NumRows())
			for k := range rows {
				rows[k] = row0 + k
			}
			compareRows(t, rec, rows, got)
			row0 += len(rows)
			got.Release()
		}
		for _, end := range ends {
			if err := dec.Append(buf[start:end]); err != nil {
				t.Fatal(err)
			}
			start = end
			if dec.Len() == size {
				flush()
			}
		}
		flush()
		dec.Release()
	}
}

// TestAppendRow writes single rows; it matches AppendBatch.
func TestAppendRow(t *testing.T) {
	md := mustCompile(t, allProto, "All")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := randomBatch(mem, allSchema, rand.New(rand.NewPCG(1, 2)), 50, 3)
	defer rec.Release()
	enc, _ := NewEncoder(allSchema, md)
	buf, ends, _ := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	start := 0
	for i, end := range ends {
		got := enc.AppendRow(nil, rec, i)
		if string(got) != string(buf[start:end]) {
			t.Fatalf("row %d: AppendRow %x, AppendBatch %x", i, got, buf[start:end])
		}
		start = end
	}
	if err := enc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMerge decodes concatenations of two messages, which protobuf reads
// as one message with the second's values winning (and messages merged):
// the decoder agrees with proto.Unmarshal.
func TestMerge(t *testing.T) {
	md := mustCompile(t, allProto, "All")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(3, 4))
	rec := randomBatch(mem, allSchema, r, 400, 2)
	defer rec.Release()
	enc, _ := NewEncoder(allSchema, md)
	buf, ends, _ := enc.AppendBatch(nil, nil, &vector.Batch{Rec: rec})
	msg := func(i int) []byte {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		return buf[start:ends[i]]
	}
	dec, _ := NewDecoder(allSchema, md, mem, Options{})
	defer dec.Release()
	var refs []*dynamicpb.Message
	for i := 0; i+1 < len(ends); i += 2 {
		both := append(append([]byte(nil), msg(i)...), msg(i+1)...)
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(both, m); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, m)
		if err := dec.Append(both); err != nil {
			t.Fatal(err)
		}
	}
	got := dec.Flush()
	defer got.Release()
	for k, m := range refs {
		for c, f := range allSchema.Fields() {
			if w, g := dynamicCell(t, m, f, false), cellString(got.Column(c), k); w != g {
				t.Errorf("pair %d column %s: got %s, proto.Unmarshal %s", k, f.Name, g, w)
			}
		}
	}
}

// TestNoAllocPerRecord: once its buffers have grown, the decoder appends
// rows of every column type without allocating, and the encoder writes
// them without allocating (DESIGN §6).
func TestNoAllocPerRecord(t *testing.T) {
	md := mustCompile(t, allProto, "All")
	mem := memory.NewGoAllocator()
	rec := randomBatch(mem, allSchema, rand.New(rand.NewPCG(11, 11)), 500, 3)
	defer rec.Release()
	enc, _ := NewEncoder(allSchema, md)
	batch := &vector.Batch{Rec: rec}
	buf, ends, _ := enc.AppendBatch(nil, nil, batch)
	msgs := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		msgs[i], start = buf[start:end], end
	}
	// Merged and crafted forms too: unknown enum numbers, repeated fields.
	for i := 0; i+1 < len(msgs); i += 50 {
		msgs = append(msgs, append(append([]byte(nil), msgs[i]...), msgs[i+1]...))
	}
	dec, _ := NewDecoder(allSchema, md, mem, Options{})
	defer dec.Release()
	appendAll := func() {
		dec.n = 0 // reuse the rows (white-box): Flush would allocate the next batch
		for _, m := range msgs {
			if err := dec.Append(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendAll()
	if a := testing.AllocsPerRun(5, appendAll); a != 0 {
		t.Errorf("decoder: %v allocations per %d records", a, len(msgs))
	}
	out := make([]byte, 0, 2*len(buf))
	outEnds := make([]int, 0, len(ends))
	if a := testing.AllocsPerRun(5, func() {
		out, outEnds, _ = enc.AppendBatch(out[:0], outEnds[:0], batch)
	}); a != 0 {
		t.Errorf("encoder: %v allocations per batch", a)
	}
}
