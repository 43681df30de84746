package sql

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// postAgg is the binding context of expressions above an aggregate: the
// group keys and aggregate calls, by their SQL text, map to the
// aggregate's output columns.
type postAgg struct {
	in    *scope
	subst map[string]int

	// fps and byFP find an expression's key by its fingerprint, without
	// rendering every sub-expression (lookup).
	fps     *fingerprinter
	byFP    map[fpKey][]string
	indexed int // len(subst) when byFP was built
}

type fpKey struct {
	h uint64
	n int
}

// lookup is the aggregate output column that e (a group key, an
// aggregate call, a window bound) is, by its SQL text.
func (p *postAgg) lookup(e Expr) (int, bool) {
	if p.byFP == nil || p.indexed != len(p.subst) {
		p.index()
	}
	x := p.fps.of(e)
	keys := p.byFP[fpKey{x.h, x.n}]
	if len(keys) == 0 {
		return 0, false
	}
	text := e.String() // a candidate: confirm on the text
	for _, k := range keys {
		if k == text {
			idx, ok := p.subst[k]
			return idx, ok
		}
	}
	return 0, false
}

// index fingerprints the keys of subst (which only grows).
func (p *postAgg) index() {
	if p.fps == nil {
		p.fps = newFingerprinter()
	}
	p.byFP = map[fpKey][]string{}
	for k := range p.subst {
		x := fingerprintOf(k)
		p.byFP[fpKey{x.h, x.n}] = append(p.byFP[fpKey{x.h, x.n}], k)
	}
	p.indexed = len(p.subst)
}

// windowStartAliases are Flink's group-window auxiliary functions; they
// name the window's bounds in the select list.
var windowBoundFuncs = map[string]int{
	"TUMBLE_START": 0, "TUMBLE_END": 1, "HOP_START": 0, "HOP_END": 1,
	"SESSION_START": 0, "SESSION_END": 1, "CUMULATE_START": 0, "CUMULATE_END": 1,
}

// aggregate binds SELECT ... GROUP BY <window>, keys.
func (b *binder) aggregate(s *Select, rel *pb.Rel, sc *scope) (*pb.Rel, *scope, error) {
	var win *windowCall
	var keys []Expr
	sawStart, sawEnd := false, false
	for _, g := range s.GroupBy {
		if hasAggregate(g) {
			return nil, nil, b.errf(g.Position(), "aggregate functions are not allowed in GROUP BY")
		}
		if f, ok := g.(*FuncCall); ok {
			if _, isWin := windowKinds[f.Name]; isWin {
				if win != nil || sc.tvf != nil {
					return nil, nil, b.errf(f.Pos, "GROUP BY has more than one window")
				}
				w, err := b.windowArgs(f.Name, f.Args, f.Pos, sc)
				if err != nil {
					return nil, nil, err
				}
				win = w
				continue
			}
		}
		if cr, ok := g.(*ColumnRef); ok && sc.tvf != nil {
			if idx, err := b.resolve(cr, sc); err == nil && sc.cols[idx].window {
				if sc.cols[idx].name == "window_start" {
					sawStart = true
				} else {
					sawEnd = true
				}
				continue
			}
		}
		keys = append(keys, g)
	}
	if sc.tvf != nil {
		if !sawStart || !sawEnd {
			return nil, nil, b.errf(s.Pos, "a window table function needs GROUP BY window_start, window_end (plus any keys)")
		}
		win = sc.tvf
	}
	if win == nil {
		return b.updatingAggregate(s, rel, sc, keys)
	}

	// Grouping expressions: the window, then the keys.
	wargs := []*pb.FunctionArgument{
		substrait.ValueArg(substrait.FieldRef(win.timeCol)),
		substrait.EnumArg(win.kind),
		substrait.ValueArg(substrait.LitI64(win.size)),
		substrait.ValueArg(substrait.LitI64(win.slide)),
		substrait.ValueArg(substrait.LitI64(win.offset)),
	}
	timeType := sc.cols[win.timeCol].typ
	sig := "_req_i64_i64_i64"
	i64, _ := substrait.TypeOf(arrow.PrimitiveTypes.Int64)
	wcall := func(name string) *pb.Expression {
		anchor := b.sb.Func(substrait.URNClink, name+":"+substrait.ShortName(timeType)+sig)
		return &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: &pb.Expression_ScalarFunction{
			FunctionReference: anchor, Arguments: wargs, OutputType: i64,
		}}}
	}
	groups := []*pb.Expression{wcall("window_start"), wcall("window_end")}
	b.lateness = sc.cols[win.timeCol].lateness
	post := &postAgg{in: sc, subst: map[string]int{"window_start": 0, "window_end": 1}}
	out := &scope{cols: []column{
		{name: "window_start", typ: arrow.PrimitiveTypes.Int64},
		{name: "window_end", typ: arrow.PrimitiveTypes.Int64},
	}}
	return b.finishAggregate(s, rel, sc, keys, groups, post, out, false)
}

// updatingAggregate binds GROUP BY without a window (or a global
// aggregate): an updating aggregate whose output is a changelog. Its input
// may be a changelog too (an aggregate of an aggregate): -U and -D rows
// retract. Over an unbounded source its state grows without end, so the
// script must accept that explicitly.
func (b *binder) updatingAggregate(s *Select, rel *pb.Rel, sc *scope, keys []Expr) (*pb.Rel, *scope, error) {
	if sc.unbounded && !b.unboundedState {
		pos := s.Pos
		if len(s.GroupBy) > 0 {
			pos = s.GroupBy[0].Position()
		}
		return nil, nil, b.errf(pos, "GROUP BY without a window over an unbounded source keeps state for every key forever: add a window (TUMBLE, HOP, SESSION, CUMULATE), or accept unbounded state with SET 'table.exec.state.ttl' = '0'")
	}
	post := &postAgg{in: sc, subst: map[string]int{}}
	return b.finishAggregate(s, rel, sc, keys, nil, post, &scope{}, true)
}

// finishAggregate binds the keys, the measures, HAVING and the select list
// of an aggregate whose grouping starts with groups (the window, if any).
func (b *binder) finishAggregate(s *Select, rel *pb.Rel, sc *scope, keys []Expr, groups []*pb.Expression, post *postAgg, out *scope, updating bool) (*pb.Rel, *scope, error) {
	for _, k := range keys {
		v, err := b.expr(k, sc)
		if err != nil {
			return nil, nil, err
		}
		if v.typ.ID() == arrow.NULL {
			return nil, nil, b.errf(k.Position(), "cannot group by NULL")
		}
		if _, dup := post.subst[k.String()]; dup {
			continue
		}
		post.subst[k.String()] = len(out.cols)
		name := k.String()
		if cr, ok := k.(*ColumnRef); ok {
			name = sc.cols[v.col].name
			// A key may also be written qualified or unqualified.
			post.subst[cr.Column.Name] = len(out.cols)
		}
		groups = append(groups, v.pb)
		out.cols = append(out.cols, column{name: name, typ: v.typ})
	}

	// Measures: every aggregate call in SELECT and HAVING, once each.
	var measures []*pb.AggregateRel_Measure
	var aggErr error
	collect := func(e Expr) {
		visitExpr(e, func(x Expr) {
			f, ok := x.(*FuncCall)
			if !ok || !isAggregate(f) || aggErr != nil {
				return
			}
			if _, seen := post.subst[f.String()]; seen {
				return
			}
			m, t, err := b.measure(f, sc)
			if err != nil {
				aggErr = err
				return
			}
			post.subst[f.String()] = len(out.cols)
			measures = append(measures, m)
			out.cols = append(out.cols, column{name: f.String(), typ: t})
		})
	}
	for _, it := range s.Items {
		if it.Expr != nil {
			collect(it.Expr)
		}
	}
	if s.Having != nil {
		collect(s.Having)
	}
	if aggErr != nil {
		return nil, nil, aggErr
	}
	for _, it := range s.Items {
		if it.Expr == nil {
			continue
		}
		visitExpr(it.Expr, func(x Expr) {
			if f, ok := x.(*FuncCall); ok {
				if i, ok := windowBoundFuncs[f.Name]; ok {
					post.subst[f.String()] = i
				}
			}
		})
	}

	agg := &pb.AggregateRel{
		Common:              substrait.Direct(),
		Input:               rel,
		GroupingExpressions: groups,
		Groupings:           []*pb.AggregateRel_Grouping{{ExpressionReferences: seq(len(groups))}},
		Measures:            measures,
	}
	lateness := int64(0)
	if groups != nil {
		lateness, b.lateness = b.lateness, 0
	}
	if lateness > 0 {
		st, err := structpb.NewStruct(map[string]any{"clink_allowed_lateness_ms": lateness})
		if err != nil {
			return nil, nil, err
		}
		a, err := substrait.PackAny(st)
		if err != nil {
			return nil, nil, err
		}
		agg.AdvancedExtension = &ext.AdvancedExtension{Enhancement: a}
		// Late rows update fired windows: the result is a changelog.
		updating = true
	}
	rel = &pb.Rel{RelType: &pb.Rel_Aggregate{Aggregate: agg}}

	b.post = post
	defer func() { b.post = nil }()
	if s.Having != nil {
		cond, err := b.expr(s.Having, out)
		if err != nil {
			return nil, nil, err
		}
		if cond.typ.ID() != arrow.BOOL {
			return nil, nil, b.errf(s.Having.Position(), "HAVING needs a BOOLEAN condition, not %s", kernels.SQLTypeName(cond.typ))
		}
		rel = &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Common: substrait.Direct(), Input: rel, Condition: cond.pb}}}
	}
	var exprs []*pb.Expression
	res := &scope{updating: updating, unbounded: sc.unbounded}
	for i, it := range s.Items {
		if it.Star {
			return nil, nil, b.errf(it.Pos, "SELECT * is not allowed with GROUP BY")
		}
		v, err := b.expr(it.Expr, out)
		if err != nil {
			return nil, nil, err
		}
		if v.typ.ID() == arrow.NULL {
			return nil, nil, b.errf(it.Expr.Position(), "NULL needs a type here: write CAST(NULL AS type)")
		}
		name := b.itemName(it, i, v, out)
		if f, ok := it.Expr.(*FuncCall); ok && it.Alias == nil {
			if _, bound := windowBoundFuncs[f.Name]; bound {
				name = strings.ToLower(f.Name)
			}
		}
		exprs = append(exprs, v.pb)
		// window_end of a window aggregate stays an event-time attribute
		// (Flink's window_time): its rows are emitted when the watermark
		// reaches it, so windows and window joins can follow.
		isEnd := !updating && v.col == 1 && groups != nil
		res.cols = append(res.cols, column{name: name, typ: v.typ, pos: it.Pos, eventTime: isEnd})
	}
	uniqueNames(res.cols)
	return project(rel, len(out.cols), exprs), res, nil
}

func seq(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// measure binds one aggregate call. Arguments are cast so that the plan
// uses the standard signatures: SUM over BIGINT or DOUBLE, AVG over DOUBLE.
func (b *binder) measure(f *FuncCall, sc *scope) (*pb.AggregateRel_Measure, arrow.DataType, error) {
	name := strings.ToLower(f.Name)
	if f.Distinct && name != "count" {
		return nil, nil, b.errf(f.Pos, "%s(DISTINCT ...) is not supported yet (COUNT(DISTINCT x) is)", f.Name)
	}
	var args []bound
	if f.Star {
		if name != "count" {
			return nil, nil, b.errf(f.Pos, "%s(*) is not valid; only COUNT(*)", f.Name)
		}
	} else {
		if len(f.Args) != 1 {
			return nil, nil, b.errf(f.Pos, "%s takes one argument", f.Name)
		}
		if hasAggregate(f.Args[0]) {
			return nil, nil, b.errf(f.Args[0].Position(), "aggregate calls cannot be nested")
		}
		v, err := b.expr(f.Args[0], sc)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if f.Filter != nil {
		var err error
		if args, err = b.aggFilter(f, args, sc); err != nil {
			return nil, nil, err
		}
	}
	i64, f64 := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64
	var out arrow.DataType
	sigArgs := ""
	switch name {
	case "count":
		out = i64
		if len(args) == 1 {
			sigArgs = "any"
			if args[0].typ.ID() == arrow.NULL {
				args[0] = b.cast(args[0], i64)
			}
		}
	case "sum", "avg":
		a := args[0]
		if d, ok := a.typ.(*arrow.Decimal128Type); ok {
			// Exact, as in Flink: SUM is DECIMAL(38, s), AVG DECIMAL(38, max(s, 6)).
			if name == "sum" {
				out = &arrow.Decimal128Type{Precision: 38, Scale: d.Scale}
			} else {
				out = &arrow.Decimal128Type{Precision: 38, Scale: max(d.Scale, 6)}
			}
			sigArgs = "dec"
			break
		}
		r := numericRank(a.typ)
		if r == 0 {
			return nil, nil, b.errf(f.Pos, "%s needs a numeric argument, not %s", f.Name, kernels.SQLTypeName(a.typ))
		}
		switch {
		case name == "avg" || r >= 5:
			args[0] = b.cast(a, f64)
			out = f64
		default:
			args[0] = b.cast(a, i64)
			out = i64
		}
		sigArgs = substrait.ShortName(out)
	case "min", "max":
		a := args[0]
		switch {
		case numericRank(a.typ) > 0, a.typ.ID() == arrow.STRING, a.typ.ID() == arrow.TIMESTAMP, a.typ.ID() == arrow.BOOL, a.typ.ID() == arrow.DECIMAL128:
		default:
			return nil, nil, b.errf(f.Pos, "%s does not accept %s", f.Name, kernels.SQLTypeName(a.typ))
		}
		out = a.typ
		sigArgs = substrait.ShortName(a.typ)
	}
	pt, err := substrait.TypeOf(out)
	if err != nil {
		return nil, nil, b.errf(f.Pos, "%v", err)
	}
	urn := funcURN[name]
	if out.ID() == arrow.DECIMAL128 && name != "count" {
		urn = substrait.URNArithmeticDecimal
	}
	if name == "min" || name == "max" {
		switch out.ID() {
		case arrow.TIMESTAMP:
			urn = substrait.URNDatetime
		case arrow.STRING, arrow.BOOL:
			urn = substrait.URNClink
		}
	}
	anchor := b.sb.Func(urn, name+":"+sigArgs)
	invocation := pb.AggregateFunction_AGGREGATION_INVOCATION_ALL
	if f.Distinct {
		invocation = pb.AggregateFunction_AGGREGATION_INVOCATION_DISTINCT
	}
	fa := make([]*pb.FunctionArgument, len(args))
	for i, a := range args {
		fa[i] = substrait.ValueArg(a.pb)
	}
	return &pb.AggregateRel_Measure{Measure: &pb.AggregateFunction{
		FunctionReference: anchor,
		Arguments:         fa,
		OutputType:        pt,
		Phase:             pb.AggregationPhase_AGGREGATION_PHASE_INITIAL_TO_RESULT,
		Invocation:        invocation,
	}}, out, nil
}
