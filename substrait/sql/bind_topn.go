package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/substrait"
)

// rowNumber binds ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) as a
// ConsistentPartitionWindowRel over rel; its output is rel's columns plus
// the rank. It only runs as Top-N: the enclosing query must filter the rank
// (rn <= N), which sets the limit (see limitTopN).
func (b *binder) rowNumber(f *FuncCall, rel *pb.Rel, sc *scope) (*pb.Rel, *pb.ConsistentPartitionWindowRel, error) {
	if f.Over == nil || f.Name != "ROW_NUMBER" || len(f.Args) > 0 {
		return nil, nil, b.errf(f.Pos, "only ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) is supported as a window function")
	}
	if sc.updating {
		return nil, nil, b.errf(f.Pos, "Top-N over an updating (changelog) input is not supported yet")
	}
	if f.Over.Frame != nil {
		return nil, nil, b.errf(f.Over.Pos, "ROW_NUMBER() takes no window frame")
	}
	if len(f.Over.OrderBy) == 0 {
		return nil, nil, b.errf(f.Over.Pos, "ROW_NUMBER() needs ORDER BY")
	}
	w := &pb.ConsistentPartitionWindowRel{Common: substrait.Direct(), Input: rel}
	timeCol := -1
	for _, p := range f.Over.PartitionBy {
		v, err := b.expr(p, sc)
		if err != nil {
			return nil, nil, err
		}
		if v.col < 0 {
			return nil, nil, b.errf(p.Position(), "PARTITION BY takes columns")
		}
		if sc.cols[v.col].eventTime {
			timeCol = v.col
		}
		w.PartitionExpressions = append(w.PartitionExpressions, v.pb)
	}
	for _, o := range f.Over.OrderBy {
		v, err := b.expr(o.Expr, sc)
		if err != nil {
			return nil, nil, err
		}
		if v.col < 0 {
			return nil, nil, b.errf(o.Pos, "ORDER BY in OVER takes columns")
		}
		// Flink: NULLs sort first ascending, last descending, by default.
		dir := pb.SortField_SORT_DIRECTION_ASC_NULLS_FIRST
		nullsFirst := !o.Desc
		if o.Nulls == NullsFirst {
			nullsFirst = true
		} else if o.Nulls == NullsLast {
			nullsFirst = false
		}
		switch {
		case o.Desc && nullsFirst:
			dir = pb.SortField_SORT_DIRECTION_DESC_NULLS_FIRST
		case o.Desc:
			dir = pb.SortField_SORT_DIRECTION_DESC_NULLS_LAST
		case !nullsFirst:
			dir = pb.SortField_SORT_DIRECTION_ASC_NULLS_LAST
		}
		w.Sorts = append(w.Sorts, &pb.SortField{Expr: v.pb, SortKind: &pb.SortField_Direction{Direction: dir}})
	}
	i64, _ := substrait.TypeOf(arrow.PrimitiveTypes.Int64)
	w.WindowFunctions = []*pb.ConsistentPartitionWindowRel_WindowRelFunction{{
		FunctionReference: b.sb.Func(substrait.URNArithmetic, "row_number:"),
		OutputType:        i64,
		Phase:             pb.AggregationPhase_AGGREGATION_PHASE_INITIAL_TO_RESULT,
		Invocation:        pb.AggregateFunction_AGGREGATION_INVOCATION_ALL,
		BoundsType:        pb.Expression_WindowFunction_BOUNDS_TYPE_ROWS,
		LowerBound:        &pb.Expression_WindowFunction_Bound{Kind: &pb.Expression_WindowFunction_Bound_Unbounded_{Unbounded: &pb.Expression_WindowFunction_Bound_Unbounded{}}},
		UpperBound:        &pb.Expression_WindowFunction_Bound{Kind: &pb.Expression_WindowFunction_Bound_CurrentRow_{CurrentRow: &pb.Expression_WindowFunction_Bound_CurrentRow{}}},
	}}
	b.topNTime[w] = timeCol
	return &pb.Rel{RelType: &pb.Rel_Window{Window: w}}, w, nil
}

// limitTopN finds rn <= N (or rn < N, rn = 1) among the WHERE conjuncts on
// a ROW_NUMBER column and records N on its window relation as Clink's
// Top-N enhancement.
func (b *binder) limitTopN(where Expr, sc *scope) error {
	if where == nil {
		return nil
	}
	for _, c := range conjunctsOf(where) {
		be, ok := c.(*BinaryExpr)
		if !ok {
			continue
		}
		idx, ok := b.sideOf(be.Left, sc)
		if !ok || sc.cols[idx].rowNumber == nil {
			continue
		}
		lit, ok := be.Right.(*IntLit)
		if !ok {
			continue
		}
		var n int64
		switch be.Op {
		case OpLe:
			n = lit.Value
		case OpLt:
			n = lit.Value - 1
		case OpEq:
			if lit.Value != 1 {
				continue
			}
			n = 1
		default:
			continue
		}
		if n < 1 {
			return b.errf(be.Right.Position(), "a Top-N filter keeps at least the first row")
		}
		w := sc.cols[idx].rowNumber
		st, err := structpb.NewStruct(map[string]any{"clink_top_n": map[string]any{"limit": n, "time_column": b.topNTime[w]}})
		if err != nil {
			return err
		}
		a, err := substrait.PackAny(st)
		if err != nil {
			return err
		}
		w.AdvancedExtension = &ext.AdvancedExtension{Enhancement: a}
	}
	return nil
}
