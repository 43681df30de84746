package join

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestStoreReference stores random rows of every column type (NULLs,
// empty and block-sized strings, a column that stays NULL for a long
// while) from random batches, kills random rows and compacts, and checks
// that gathering the live rows gives what a reference holding the input
// arrays gives; the allocator must be back to zero.
func TestStoreReference(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "late", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 12, Scale: 2}, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(5, 6))
	long := strings.Repeat("x", blockBytes+10)
	batch := func(n, k int) arrow.RecordBatch {
		bld := array.NewRecordBuilder(mem, schema)
		defer bld.Release()
		for i := 0; i < n; i++ {
			null := r.IntN(5) == 0
			app := func(c int, f func()) {
				if null && r.IntN(2) == 0 {
					bld.Field(c).AppendNull()
					return
				}
				f()
			}
			app(0, func() { bld.Field(0).(*array.Int64Builder).Append(r.Int64()) })
			app(1, func() { bld.Field(1).(*array.Float64Builder).Append(r.NormFloat64()) })
			app(2, func() {
				v := fmt.Sprint(k, "/", i)
				switch r.IntN(20) {
				case 0:
					v = ""
				case 1:
					v = long[:r.IntN(len(long))]
				}
				bld.Field(2).(*array.StringBuilder).Append(v)
			})
			if k < 40 || null {
				bld.Field(3).AppendNull()
			} else {
				bld.Field(3).(*array.StringBuilder).Append(fmt.Sprint("late", i))
			}
			app(4, func() { bld.Field(4).(*array.BooleanBuilder).Append(r.IntN(2) == 0) })
			app(5, func() { bld.Field(5).(*array.Int8Builder).Append(int8(r.IntN(256) - 128)) })
			app(6, func() { bld.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(1e9))) })
			app(7, func() { bld.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(r.Int64N(1e12))) })
		}
		return bld.NewRecordBatch()
	}
	type ref struct {
		b   arrow.RecordBatch
		row int
	}
	s := newStore(schema)
	var refs []ref // by stored row; b nil once dead
	var batches []arrow.RecordBatch
	compactions := 0
	check := func(step int) {
		var live []int32
		for i, rf := range refs {
			if rf.b != nil {
				live = append(live, int32(i))
			}
		}
		if s.live() != len(live) || int(s.len()) != len(refs) {
			t.Fatalf("step %d: %d live of %d, want %d of %d", step, s.live(), s.len(), len(live), len(refs))
		}
		for c, f := range schema.Fields() {
			got, err := s.gather(mem, f.Type, c, append([]int32{-1}, live...))
			if err != nil {
				t.Fatal(err)
			}
			if !got.IsNull(0) {
				t.Fatalf("step %d, %s: -1 is not NULL", step, f.Name)
			}
			for k, idx := range live {
				rf := refs[idx]
				want := rf.b.Column(c)
				if got.IsNull(k+1) != want.IsNull(rf.row) || !want.IsNull(rf.row) && got.ValueStr(k+1) != want.ValueStr(rf.row) {
					t.Fatalf("step %d, %s, stored row %d: got %q, want %q", step, f.Name, idx, got.ValueStr(k+1), want.ValueStr(rf.row))
				}
			}
			got.Release()
		}
	}
	for k := 0; k < 80; k++ {
		b := batch(1+r.IntN(1500), k)
		batches = append(batches, b)
		var rows []int32
		for i := 0; i < int(b.NumRows()); i++ {
			if r.IntN(4) > 0 {
				rows = append(rows, int32(i))
			}
		}
		first := s.add(b.Columns(), rows, nil, -1)
		if int(first) != len(refs) {
			t.Fatalf("batch %d stored from %d, want %d", k, first, len(refs))
		}
		for _, row := range rows {
			refs = append(refs, ref{b, int(row)})
		}
		// Kill mostly old rows, as expiry does, and some at random.
		for i := range refs {
			if refs[i].b != nil && (i < len(refs)/2 && r.IntN(3) > 0 || r.IntN(50) == 0) {
				s.kill(int32(i))
				refs[i].b = nil
			}
		}
		if remap := s.compact(); remap != nil {
			compactions++
			var kept []ref
			for i, to := range remap {
				if to >= 0 {
					if int(to) != len(kept) {
						t.Fatalf("batch %d: row %d moved to %d, want %d", k, i, to, len(kept))
					}
					kept = append(kept, refs[i])
				}
			}
			refs = kept
		}
		if k%5 == 4 {
			check(k)
		}
	}
	if compactions < 2 {
		t.Errorf("%d compactions, want some", compactions)
	}
	for _, b := range batches {
		b.Release()
	}
}

// TestStoreUnsupported: a column type the join cannot output is an error
// when gathered, not when stored.
func TestStoreUnsupported(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Date32}}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	bld.Field(0).(*array.Date32Builder).Append(1)
	b := bld.NewRecordBatch()
	defer b.Release()
	s := newStore(schema)
	s.add(b.Columns(), []int32{0}, nil, -1)
	if _, err := s.gather(mem, schema.Field(0).Type, 0, []int32{0}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("gather of a date32 column: %v", err)
	}
}
