package flightsql

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/substrait/sql"
)

// The engine runs no ORDER BY (a stream has no end to sort at). A
// query's input here is bounded, so the endpoint sorts the result
// itself: a top-level ORDER BY over output columns (by name or position)
// and the LIMIT after it are taken off the statement, and the result is
// sorted and cut at end of input.

// sortKey is one ORDER BY item: an output column by name or 1-based
// position.
type sortKey struct {
	name    string
	ordinal int
	desc    bool
	nulls   sql.NullsOrder
	pos     sql.Pos
	col     int // resolved against the result schema
}

var orderByTail = regexp.MustCompile(`(?is)\border\s+by\s*$`)

// sortSpec is a result's ORDER BY and LIMIT (limit < 0: none).
type sortSpec struct {
	keys  []sortKey
	limit int64
}

// splitOrderBy returns the statement the engine runs and the sort of its
// result (nil: none). A statement it cannot split goes to the engine as
// it is, for the engine's own answer.
func splitOrderBy(text string) (string, *sortSpec) {
	sc, err := sql.Parse(text)
	if err != nil || len(sc.Statements) != 1 {
		return text, nil
	}
	q, ok := sc.Statements[0].(*sql.Query)
	if !ok || len(q.OrderBy) == 0 {
		return text, nil
	}
	spec := &sortSpec{limit: -1}
	if q.Limit != nil {
		l, ok := q.Limit.(*sql.IntLit)
		if !ok || l.Value < 0 {
			return text, nil
		}
		spec.limit = l.Value
	}
	for _, it := range q.OrderBy {
		k := sortKey{desc: it.Desc, nulls: it.Nulls, pos: it.Pos}
		switch e := it.Expr.(type) {
		case *sql.ColumnRef:
			k.name = e.Column.Name
		case *sql.IntLit:
			k.ordinal = int(e.Value)
		default:
			return text, nil
		}
		spec.keys = append(spec.keys, k)
	}
	head := text[:q.OrderBy[0].Pos.Offset]
	loc := orderByTail.FindStringIndex(head)
	if loc == nil {
		return text, nil
	}
	return strings.TrimRight(text[:loc[0]], " \t\r\n"), spec
}

// resolve finds the keys' columns in the result schema.
func (spec *sortSpec) resolve(s *arrow.Schema) error {
	if spec == nil {
		return nil
	}
	for i := range spec.keys {
		k := &spec.keys[i]
		switch {
		case k.ordinal != 0:
			if k.ordinal < 1 || k.ordinal > s.NumFields() {
				return fmt.Errorf("line %d:%d: ORDER BY %d: the result has %d columns", k.pos.Line, k.pos.Col, k.ordinal, s.NumFields())
			}
			k.col = k.ordinal - 1
		default:
			k.col = -1
			for c, f := range s.Fields() {
				if strings.EqualFold(f.Name, k.name) {
					k.col = c
					break
				}
			}
			if k.col < 0 {
				return fmt.Errorf("line %d:%d: ORDER BY %s: sort by a column of the result (a name in the SELECT list, or its position)", k.pos.Line, k.pos.Col, k.name)
			}
		}
	}
	return nil
}

// sortRows orders rows i of rec by keys. NULLs sort as the largest value
// (last ascending, first descending) unless NULLS FIRST/LAST says.
func sortRows(rec arrow.RecordBatch, keys []sortKey, idx []int32) {
	slices.SortStableFunc(idx, func(a, b int32) int {
		for _, k := range keys {
			col := rec.Column(k.col)
			na, nb := col.IsNull(int(a)), col.IsNull(int(b))
			if na || nb {
				if na == nb {
					continue
				}
				first := k.desc
				if k.nulls == sql.NullsFirst {
					first = true
				} else if k.nulls == sql.NullsLast {
					first = false
				}
				if na == first {
					return -1
				}
				return 1
			}
			c := compareAt(col, int(a), int(b))
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

func compareAt(col arrow.Array, a, b int) int {
	switch c := col.(type) {
	case *array.Int64:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Int32:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Int16:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Int8:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Float64:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Float32:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.String:
		return strings.Compare(c.Value(a), c.Value(b))
	case *array.Boolean:
		return cmp.Compare(b2i(c.Value(a)), b2i(c.Value(b)))
	case *array.Decimal128:
		return c.Value(a).Cmp(c.Value(b))
	case *array.Timestamp:
		return cmp.Compare(c.Value(a), c.Value(b))
	case *array.Date32:
		return cmp.Compare(c.Value(a), c.Value(b))
	}
	return strings.Compare(col.ValueStr(a), col.ValueStr(b))
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
