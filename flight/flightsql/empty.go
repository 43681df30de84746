package flightsql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/substrait/sql"
)

// A global aggregate (no GROUP BY) in the engine emits as rows come, so
// over no rows it emits none; a query over bounded input has one row
// then, as in a batch engine: COUNT 0, the other aggregates NULL. The
// endpoint adds it.

var aggregates = map[string]bool{"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true}

// globalAggregate reports, for a statement whose outermost SELECT is a
// list of aggregate calls without GROUP BY or HAVING, which output columns
// are COUNTs; ok is false for any other statement.
func globalAggregate(text string) (counts []bool, ok bool) {
	sc, err := sql.Parse(text)
	if err != nil || len(sc.Statements) != 1 {
		return nil, false
	}
	q, isQuery := sc.Statements[0].(*sql.Query)
	if !isQuery {
		return nil, false
	}
	s, isSelect := q.Body.(*sql.Select)
	if !isSelect || len(s.GroupBy) > 0 || s.Having != nil || s.Distinct || s.From == nil {
		return nil, false
	}
	for _, it := range s.Items {
		f, isCall := it.Expr.(*sql.FuncCall)
		if it.Star || !isCall || f.Over != nil || !aggregates[strings.ToUpper(f.Name)] {
			return nil, false
		}
		counts = append(counts, strings.EqualFold(f.Name, "COUNT"))
	}
	return counts, true
}

// emptyAggregateRow is the row of a global aggregate over no rows.
func emptyAggregateRow(mem memory.Allocator, s *arrow.Schema, counts []bool) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, s)
	defer b.Release()
	for i := range s.NumFields() {
		switch fb := b.Field(i).(type) {
		case *array.Int64Builder:
			if i < len(counts) && counts[i] {
				fb.Append(0)
				continue
			}
			fb.AppendNull()
		default:
			fb.AppendNull()
		}
	}
	return b.NewRecordBatch()
}
