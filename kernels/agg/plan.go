package agg

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// Func is an aggregate function of a grouped aggregation.
type Func uint8

const (
	// CountStar is COUNT(*): rows in the group, an int64.
	CountStar Func = iota
	// Count is COUNT(x): non-null values, an int64.
	Count
	// Sum is SUM(x): int64 for integer x, float64 for floating x; NULL
	// when the group has no non-null x. Integer sums wrap on overflow like
	// Flink's BIGINT; floating sums are compensated (see aggFloatState).
	Sum
	// Avg is AVG(x) as float64; NULL when the group has no non-null x.
	Avg
	// Min is MIN(x) in x's type (numbers, timestamps, strings, booleans;
	// NaN sorts above every other float). NULL when no non-null x.
	Min
	// Max is MAX(x), like Min.
	Max
	// CountDistinct is COUNT(DISTINCT x): distinct non-null values, an
	// int64. Each group keeps the set of values it has seen.
	CountDistinct
)

func (f Func) String() string {
	switch f {
	case CountStar:
		return "COUNT(*)"
	case Count:
		return "COUNT"
	case Sum:
		return "SUM"
	case Avg:
		return "AVG"
	case Min:
		return "MIN"
	case Max:
		return "MAX"
	case CountDistinct:
		return "COUNT(DISTINCT)"
	}
	return fmt.Sprintf("AggFunc(%d)", uint8(f))
}

// Spec is one aggregate call: Func over input column Arg (-1 for
// COUNT(*)), output column Name.
type Spec struct {
	Func Func
	Arg  int
	Name string
}

// State holds the accumulators of one input column (or of COUNT(*)) for
// every group, as typed columns indexed by group id. All aggregates over the
// same column share one state, so SUM(x), AVG(x) and COUNT(x) keep one sum
// and one count. Methods take a whole batch: the interface is dispatched
// once per batch and state, never per row.
type State interface {
	// Enable turns on what f needs, or reports that f does not apply.
	Enable(f Func) error
	OutType(f Func) arrow.DataType
	// Grow makes room for group ids < n, each in its initial state.
	Grow(n int)
	// Update folds entry k (row rows[k] of arr; rows nil: row k) into
	// group gids[k]. arr is nil for COUNT(*).
	Update(gids []int32, arr arrow.Array, rows []int32)
	// Merge folds group src into dst (session merges); src is reset later.
	Merge(dst, src int32)
	// Reset returns groups to their initial state before their ids are
	// reused.
	Reset(gids []int32)
	// Build emits f for groups gids, in order.
	Build(mem memory.Allocator, f Func, gids []int32) arrow.Array
	// StateFields are the value columns a snapshot holds, named with
	// prefix p; StateColumns returns them for gids and SetState sets gids
	// (grown already) from them.
	StateFields(p string) []arrow.Field
	StateColumns(mem memory.Allocator, gids []int32) []arrow.Array
	SetState(gids []int32, cols []arrow.Array) error
}

// Out is one aggregate of a Plan: function Func of States[State].
type Out struct {
	State int
	Func  Func
}

// Plan maps a list of Specs onto shared per-column states.
type Plan struct {
	States []State
	Cols   []int // input column of each state; -1 for COUNT(*)
	Outs   []Out
	Fields []arrow.Field
}

// NewPlan validates specs over input and shares a state between the
// aggregates of one column.
func NewPlan(input *arrow.Schema, specs []Spec) (*Plan, error) {
	p := &Plan{}
	byCol := map[int]int{}
	for i, a := range specs {
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		col := a.Arg
		if a.Func == CountStar {
			col = -1
		} else if a.Func > CountDistinct {
			return nil, fmt.Errorf("aggregate %d (%s): unknown function %s", i, name, a.Func)
		} else if col < 0 || col >= input.NumFields() {
			return nil, fmt.Errorf("aggregate %d (%s): %s argument column %d out of range [0,%d)", i, name, a.Func, col, input.NumFields())
		}
		key := col
		if a.Func == CountDistinct {
			key = -2 - col // its own state: a set per group
		}
		si, ok := byCol[key]
		if !ok {
			var st State
			switch {
			case a.Func == CountDistinct:
				st = &DistinctState{}
			case col < 0:
				st = &aggCountState{star: true}
			default:
				st = NewState(input.Field(col).Type)
			}
			si = len(p.States)
			byCol[key] = si
			p.States = append(p.States, st)
			p.Cols = append(p.Cols, col)
		}
		st := p.States[si]
		if err := st.Enable(a.Func); err != nil {
			return nil, fmt.Errorf("aggregate %d (%s): %s(%s): %w", i, name, a.Func, input.Field(col).Name, err)
		}
		p.Outs = append(p.Outs, Out{State: si, Func: a.Func})
		nullable := a.Func != CountStar && a.Func != Count && a.Func != CountDistinct
		p.Fields = append(p.Fields, arrow.Field{Name: name, Type: st.OutType(a.Func), Nullable: nullable})
	}
	return p, nil
}

// NewState returns the empty state of a column of type dt.
func NewState(dt arrow.DataType) State {
	switch dt.ID() {
	case arrow.INT8:
		return &aggIntState[int8]{dt: dt}
	case arrow.INT16:
		return &aggIntState[int16]{dt: dt}
	case arrow.INT32:
		return &aggIntState[int32]{dt: dt}
	case arrow.INT64:
		return &aggIntState[int64]{dt: dt}
	case arrow.DATE32:
		return &aggIntState[int32]{dt: dt, noSum: true}
	case arrow.TIMESTAMP, arrow.DATE64:
		return &aggIntState[int64]{dt: dt, noSum: true}
	case arrow.FLOAT32:
		return &aggFloatState[float32]{dt: dt}
	case arrow.FLOAT64:
		return &aggFloatState[float64]{dt: dt}
	case arrow.BOOL:
		return &aggBoolState{}
	case arrow.STRING:
		return &aggStrState{}
	case arrow.DECIMAL128:
		return &aggDecState{dt: dt.(*arrow.Decimal128Type)}
	}
	return &aggCountState{dt: dt}
}

// Grow grows every state (State.Grow).
func (p *Plan) Grow(n int) {
	for _, s := range p.States {
		s.Grow(n)
	}
}

// Reset resets groups gids in every state (State.Reset).
func (p *Plan) Reset(gids []int32) {
	for _, s := range p.States {
		s.Reset(gids)
	}
}

// Merge merges group src into dst in every state (State.Merge).
func (p *Plan) Merge(dst, src int32) {
	for _, s := range p.States {
		s.Merge(dst, src)
	}
}

// aggGather lines values up with gids: vals[rows[k]] for entry k (rows nil:
// vals itself), and, when arr has nulls, a copy of gids with -1 where the
// value is null (update loops skip negative gids).
func aggGather[T any](vals []T, rows []int32, gids []int32, arr arrow.Array, vbuf *[]T, gbuf *[]int32, nbuf *[]bool) ([]int32, []T) {
	n := len(gids)
	var vs []T
	if rows == nil {
		vs = vals[:n]
	} else {
		vs = column.Grow(*vbuf, n)
		*vbuf = vs
		for k, r := range rows[:n] {
			vs[k] = vals[r]
		}
	}
	return aggMaskNulls(gids, arr, rows, gbuf, nbuf), vs
}

func aggMaskNulls(gids []int32, arr arrow.Array, rows []int32, gbuf *[]int32, nbuf *[]bool) []int32 {
	nulls := column.Nulls((*nbuf)[:0], arr, rows, len(gids))
	if nulls == nil {
		return gids
	}
	*nbuf = nulls
	gs := column.Grow(*gbuf, len(gids))
	*gbuf = gs
	for k, g := range gids {
		if nulls[k] {
			g = -1
		}
		gs[k] = g
	}
	return gs
}

func aggBuildCount(mem memory.Allocator, n *column.Chunked[int64], gids []int32) arrow.Array {
	o := column.NewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
	for j, g := range gids {
		o.Vals[j] = *n.At(g)
	}
	return o.Finish()
}
