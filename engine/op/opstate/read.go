package opstate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// SlotRows sorts the rows of a state record by slot: keyed rows whose
// key group owns accepts (nil: all) and every raw row. A slot not in slots
// is an error.
func SlotRows(rec arrow.RecordBatch, owns func(int32) bool, slots ...string) (map[string][]int32, error) {
	slot, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("not a state record: columns 0 and 1 are %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType())
	}
	rows := make(map[string][]int32, len(slots))
	for _, s := range slots {
		rows[s] = nil
	}
	for i := range int(rec.NumRows()) {
		s := slot.Value(i)
		l, known := rows[s]
		if !known {
			return nil, fmt.Errorf("row %d: unknown slot %q (want one of %s)", i, s, strings.Join(slots, ", "))
		}
		if g := kg.Value(i); g == checkpoint.RawKeyGroup || owns == nil || owns(g) {
			rows[s] = append(l, int32(i))
		}
	}
	return rows, nil
}

// slotSel lists the rows of slot in a state record whose key group owns
// accepts (nil: all).
func slotSel(rec arrow.RecordBatch, owns func(int32) bool, slot string) ([]int32, error) {
	slots, ok1 := rec.Column(0).(*array.String)
	kg, ok2 := rec.Column(1).(*array.Int32)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("not a state record: columns 0 and 1 are %s, %s", rec.Column(0).DataType(), rec.Column(1).DataType())
	}
	var sel []int32
	for i := range int(rec.NumRows()) {
		if slots.Value(i) == slot && (owns == nil || owns(kg.Value(i))) {
			sel = append(sel, int32(i))
		}
	}
	return sel, nil
}

// Cols reads value columns of the selected rows of a state record.
// The arrays are the record's (all rows selected, unless copy is set) or
// copies allocated from mem; release drops them.
type Cols struct {
	rec   arrow.RecordBatch
	Sel   []int32
	mem   memory.Allocator
	copy  bool
	owned []arrow.Array
}

// NewCols reads value columns of rows sel of the state record rec.
func NewCols(rec arrow.RecordBatch, sel []int32, mem memory.Allocator) *Cols {
	return &Cols{rec: rec, Sel: sel, mem: mem}
}

// Typed returns the named column of the selected rows, which must have
// type dt.
func (s *Cols) Typed(name string, dt arrow.DataType) (arrow.Array, error) {
	a := checkpoint.Column(s.rec, name)
	if a == nil {
		return nil, fmt.Errorf("no state column %q", name)
	}
	if !arrow.TypeEqual(a.DataType(), dt) {
		return nil, fmt.Errorf("state column %q is %s, want %s", name, a.DataType(), dt)
	}
	if len(s.Sel) == a.Len() && !s.copy {
		a.Retain()
	} else {
		a = vector.Take(s.mem, a, s.Sel)
	}
	s.owned = append(s.owned, a)
	return a, nil
}

// Int64s returns a BIGINT column of the selected rows (NULL as 0).
func (s *Cols) Int64s(name string) ([]int64, error) {
	a, err := s.Typed(name, arrow.PrimitiveTypes.Int64)
	if err != nil {
		return nil, err
	}
	return a.(*array.Int64).Int64Values(), nil
}

// Release drops the columns returned so far.
func (s *Cols) Release() {
	for _, a := range s.owned {
		a.Release()
	}
	s.owned = nil
}

// SlotColumns reads the rows of slot in part whose key group owns accepts
// (nil: all) as one set of columns, fields (name and type each), allocated
// from mem; the caller releases them. With sortBy set (a BIGINT column),
// the rows are in its order: state whose order matters says so in a
// column, as the format's rows are in no particular order.
func SlotColumns(part *checkpoint.Part, slot string, owns func(int32) bool, mem memory.Allocator, fields []arrow.Field, sortBy string) ([]arrow.Array, error) {
	per := make([][]arrow.Array, len(fields))
	release := func() {
		for _, l := range per {
			for _, a := range l {
				a.Release()
			}
		}
	}
	defer release()
	for _, rec := range part.Records {
		sel, err := slotSel(rec, owns, slot)
		if err != nil {
			return nil, err
		}
		sc := NewCols(rec, sel, mem)
		if len(sc.Sel) == 0 {
			continue
		}
		sc.copy = true
		for i, f := range fields {
			a, err := sc.Typed(f.Name, f.Type)
			if err != nil {
				sc.Release()
				return nil, err
			}
			a.Retain()
			per[i] = append(per[i], a)
		}
		sc.Release()
	}
	if len(per) == 0 || len(per[0]) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(fields))
	var err error
	for i, l := range per {
		if len(l) == 1 {
			l[0].Retain()
			cols[i] = l[0]
		} else if cols[i], err = array.Concatenate(l, mem); err != nil {
			column.ReleaseAll(cols)
			return nil, fmt.Errorf("state column %q: %w", fields[i].Name, err)
		}
	}
	if sortBy == "" {
		return cols, nil
	}
	k := slices.IndexFunc(fields, func(f arrow.Field) bool { return f.Name == sortBy })
	by := cols[k].(*array.Int64).Int64Values()
	if slices.IsSorted(by) {
		return cols, nil
	}
	perm := make([]int32, len(by))
	for r := range perm {
		perm[r] = int32(r)
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return cmp.Compare(by[a], by[b]) })
	for i, c := range cols {
		cols[i] = vector.Take(mem, c, perm)
		c.Release()
	}
	return cols, nil
}
