package txn

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
)

// Column is one column of the pending slot, read from and written to a
// field of a transaction E.
type Column[E any] struct {
	Field arrow.Field
	put   func(e *E, b array.Builder)
	get   func(e *E, a arrow.Array, i int) bool
}

// String is a string column of field f.
func String[E any](name string, f func(*E) *string) Column[E] {
	return Column[E]{Field: arrow.Field{Name: name, Type: arrow.BinaryTypes.String},
		put: func(e *E, b array.Builder) { b.(*array.StringBuilder).Append(*f(e)) },
		get: func(e *E, a arrow.Array, i int) bool {
			s, ok := a.(*array.String)
			if ok {
				*f(e) = s.Value(i)
			}
			return ok
		}}
}

// Int64 is a BIGINT column of field f.
func Int64[E any](name string, f func(*E) *int64) Column[E] {
	return Column[E]{Field: arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64},
		put: func(e *E, b array.Builder) { b.(*array.Int64Builder).Append(*f(e)) },
		get: func(e *E, a arrow.Array, i int) bool {
			v, ok := a.(*array.Int64)
			if ok {
				*f(e) = v.Value(i)
			}
			return ok
		}}
}

// Int is a BIGINT column of int field f.
func Int[E any](name string, f func(*E) *int) Column[E] {
	return Column[E]{Field: arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64},
		put: func(e *E, b array.Builder) { b.(*array.Int64Builder).Append(int64(*f(e))) },
		get: func(e *E, a arrow.Array, i int) bool {
			v, ok := a.(*array.Int64)
			if ok {
				*f(e) = int(v.Value(i))
			}
			return ok
		}}
}

// Int32 is an INT column of int field f.
func Int32[E any](name string, f func(*E) *int) Column[E] {
	return Column[E]{Field: arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int32},
		put: func(e *E, b array.Builder) { b.(*array.Int32Builder).Append(int32(*f(e))) },
		get: func(e *E, a arrow.Array, i int) bool {
			v, ok := a.(*array.Int32)
			if ok {
				*f(e) = int(v.Value(i))
			}
			return ok
		}}
}

// Int16 is a SMALLINT column of field f.
func Int16[E any](name string, f func(*E) *int16) Column[E] {
	return Column[E]{Field: arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int16},
		put: func(e *E, b array.Builder) { b.(*array.Int16Builder).Append(*f(e)) },
		get: func(e *E, a arrow.Array, i int) bool {
			v, ok := a.(*array.Int16)
			if ok {
				*f(e) = v.Value(i)
			}
			return ok
		}}
}

// Rows is the Codec of transactions *E made of columns.
type Rows[E any] struct {
	Columns []Column[E]
	// Valid, if set, accepts a row read (an id not empty, a name without
	// a path).
	Valid func(e *E) bool
	// Owner, if set, says whose a row of part subtask p is (and may note
	// it in e); by default p's.
	Owner func(e *E, p int) int
}

var _ Codec[*struct{}] = Rows[struct{}]{}

// Slot is a raw slot of the columns (a system's own state, Extra).
func (r Rows[E]) Slot(name string) checkpoint.Slot {
	return checkpoint.Slot{Name: name, Raw: true, Values: r.Fields()}
}

// Fields are the columns' fields.
func (r Rows[E]) Fields() []arrow.Field {
	out := make([]arrow.Field, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Field
	}
	return out
}

// Append sets the row's columns from e.
func (r Rows[E]) Append(b *checkpoint.RowBuilder, e *E) {
	for _, c := range r.Columns {
		c.put(e, b.Value(c.Field.Name))
	}
}

// Read reads row i into a new E.
func (r Rows[E]) Read(p *checkpoint.Part, rec arrow.RecordBatch, i int) (*E, int, error) {
	e := new(E)
	for _, c := range r.Columns {
		a := checkpoint.Column(rec, c.Field.Name)
		if a == nil || a.IsNull(i) || !c.get(e, a, i) {
			return nil, 0, fmt.Errorf("bad pending row %d (column %s)", i, c.Field.Name)
		}
	}
	if r.Valid != nil && !r.Valid(e) {
		return nil, 0, fmt.Errorf("bad pending row %d", i)
	}
	k := p.Subtask
	if r.Owner != nil {
		k = r.Owner(e, p.Subtask)
	}
	return e, k, nil
}
