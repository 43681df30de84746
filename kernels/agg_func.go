package kernels

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// AggFunc is an aggregate function of a grouped aggregation.
type AggFunc uint8

const (
	// AggCountStar is COUNT(*): rows in the group, an int64.
	AggCountStar AggFunc = iota
	// AggCount is COUNT(x): non-null values, an int64.
	AggCount
	// AggSum is SUM(x): int64 for integer x, float64 for floating x; NULL
	// when the group has no non-null x. Integer sums wrap on overflow like
	// Flink's BIGINT; floating sums are compensated (see aggFloatState).
	AggSum
	// AggAvg is AVG(x) as float64; NULL when the group has no non-null x.
	AggAvg
	// AggMin is MIN(x) in x's type (numbers, timestamps, strings, booleans;
	// NaN sorts above every other float). NULL when no non-null x.
	AggMin
	// AggMax is MAX(x), like AggMin.
	AggMax
	// AggCountDistinct is COUNT(DISTINCT x): distinct non-null values, an
	// int64. Each group keeps the set of values it has seen.
	AggCountDistinct
)

func (f AggFunc) String() string {
	switch f {
	case AggCountStar:
		return "COUNT(*)"
	case AggCount:
		return "COUNT"
	case AggSum:
		return "SUM"
	case AggAvg:
		return "AVG"
	case AggMin:
		return "MIN"
	case AggMax:
		return "MAX"
	case AggCountDistinct:
		return "COUNT(DISTINCT)"
	}
	return fmt.Sprintf("AggFunc(%d)", uint8(f))
}

// AggSpec is one aggregate call: Func over input column Arg (-1 for
// COUNT(*)), output column Name.
type AggSpec struct {
	Func AggFunc
	Arg  int
	Name string
}

// aggState holds the accumulators of one input column (or of COUNT(*)) for
// every group, as typed columns indexed by group id. All aggregates over the
// same column share one state, so SUM(x), AVG(x) and COUNT(x) keep one sum
// and one count. Methods take a whole batch: the interface is dispatched
// once per batch and state, never per row.
type aggState interface {
	// enable turns on what f needs, or reports that f does not apply.
	enable(f AggFunc) error
	outType(f AggFunc) arrow.DataType
	// grow makes room for group ids < n, each in its initial state.
	grow(n int)
	// update folds entry k (row rows[k] of arr; rows nil: row k) into
	// group gids[k]. arr is nil for COUNT(*).
	update(gids []int32, arr arrow.Array, rows []int32)
	// merge folds group src into dst (session merges); src is reset later.
	merge(dst, src int32)
	// reset returns groups to their initial state before their ids are
	// reused.
	reset(gids []int32)
	// build emits f for groups gids, in order.
	build(mem memory.Allocator, f AggFunc, gids []int32) arrow.Array
	// stateFields are the value columns a snapshot holds, named with
	// prefix p; snapshot writes them for gids and restore sets gids (grown
	// already) from them.
	stateFields(p string) []arrow.Field
	snapshot(mem memory.Allocator, gids []int32) []arrow.Array
	restore(gids []int32, cols []arrow.Array) error
}

type aggOut struct {
	state int
	fn    AggFunc
}

// aggPlan maps a list of AggSpecs onto shared per-column states.
type aggPlan struct {
	states []aggState
	cols   []int // input column of each state; -1 for COUNT(*)
	outs   []aggOut
	fields []arrow.Field
}

func newAggPlan(input *arrow.Schema, specs []AggSpec) (*aggPlan, error) {
	p := &aggPlan{}
	byCol := map[int]int{}
	for i, a := range specs {
		name := a.Name
		if name == "" {
			name = fmt.Sprintf("agg%d", i)
		}
		col := a.Arg
		if a.Func == AggCountStar {
			col = -1
		} else if a.Func > AggCountDistinct {
			return nil, fmt.Errorf("aggregate %d (%s): unknown function %s", i, name, a.Func)
		} else if col < 0 || col >= input.NumFields() {
			return nil, fmt.Errorf("aggregate %d (%s): %s argument column %d out of range [0,%d)", i, name, a.Func, col, input.NumFields())
		}
		key := col
		if a.Func == AggCountDistinct {
			key = -2 - col // its own state: a set per group
		}
		si, ok := byCol[key]
		if !ok {
			var st aggState
			switch {
			case a.Func == AggCountDistinct:
				st = &aggDistinctState{}
			case col < 0:
				st = &aggCountState{star: true}
			default:
				st = newAggState(input.Field(col).Type)
			}
			si = len(p.states)
			byCol[key] = si
			p.states = append(p.states, st)
			p.cols = append(p.cols, col)
		}
		st := p.states[si]
		if err := st.enable(a.Func); err != nil {
			return nil, fmt.Errorf("aggregate %d (%s): %s(%s): %w", i, name, a.Func, input.Field(col).Name, err)
		}
		p.outs = append(p.outs, aggOut{state: si, fn: a.Func})
		nullable := a.Func != AggCountStar && a.Func != AggCount && a.Func != AggCountDistinct
		p.fields = append(p.fields, arrow.Field{Name: name, Type: st.outType(a.Func), Nullable: nullable})
	}
	return p, nil
}

func newAggState(dt arrow.DataType) aggState {
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

func (p *aggPlan) grow(n int) {
	for _, s := range p.states {
		s.grow(n)
	}
}

func (p *aggPlan) reset(gids []int32) {
	for _, s := range p.states {
		s.reset(gids)
	}
}

func (p *aggPlan) merge(dst, src int32) {
	for _, s := range p.states {
		s.merge(dst, src)
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
		vs = winGrow(*vbuf, n)
		*vbuf = vs
		for k, r := range rows[:n] {
			vs[k] = vals[r]
		}
	}
	return aggMaskNulls(gids, arr, rows, gbuf, nbuf), vs
}

func aggMaskNulls(gids []int32, arr arrow.Array, rows []int32, gbuf *[]int32, nbuf *[]bool) []int32 {
	nulls := winNulls((*nbuf)[:0], arr, rows, len(gids))
	if nulls == nil {
		return gids
	}
	*nbuf = nulls
	gs := winGrow(*gbuf, len(gids))
	*gbuf = gs
	for k, g := range gids {
		if nulls[k] {
			g = -1
		}
		gs[k] = g
	}
	return gs
}

func aggBuildCount(mem memory.Allocator, n []int64, gids []int32) arrow.Array {
	o := winNewFixed[int64](mem, arrow.PrimitiveTypes.Int64, len(gids))
	for j, g := range gids {
		o.vals[j] = n[g]
	}
	return o.finish()
}
