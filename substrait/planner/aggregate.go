package planner

import (
	"fmt"
	"strconv"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/groupagg"
	"github.com/clink-dev/clink/engine/op/window"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/substrait"
)

// aggregate plans an AggregateRel: a window aggregate when the grouping
// starts with window_start and window_end of Clink's extension (with the
// same arguments), otherwise an unwindowed (updating) aggregate, which
// also accepts a changelog input (retracting its -U/-D rows).
func (b *builder) aggregate(a *pb.AggregateRel) (*chain, error) {
	c, err := b.rel(a.GetInput())
	if err != nil {
		return nil, err
	}
	if len(a.GetGroupings()) > 1 {
		return nil, fmt.Errorf("aggregate: grouping sets are not supported")
	}
	groups := a.GetGroupingExpressions()
	if len(a.GetGroupings()) == 1 && len(a.GetGroupings()[0].GetExpressionReferences()) > 0 {
		var gs []*pb.Expression
		for _, ref := range a.GetGroupings()[0].GetExpressionReferences() {
			if int(ref) >= len(groups) {
				return nil, fmt.Errorf("aggregate: grouping references expression %d of %d", ref, len(groups))
			}
			gs = append(gs, groups[ref])
		}
		groups = gs
	} else if len(a.GetGroupings()) == 1 && len(a.GetGroupings()[0].GetGroupingExpressions()) > 0 {
		groups = a.GetGroupings()[0].GetGroupingExpressions()
	}
	windowed := isWindow(b, groups)
	var spec kwindow.Spec
	var timeExpr *pb.Expression
	keyExprs := groups
	if windowed {
		if c.updating {
			return nil, fmt.Errorf("a window aggregate over an updating (changelog) input is not supported")
		}
		if spec, timeExpr, err = b.windowOf(groups); err != nil {
			return nil, err
		}
		keyExprs = groups[2:]
	}
	// An unwindowed aggregate over a changelog retracts its -U/-D rows.
	retract := !windowed && c.updating

	// Every input the kernel reads must be a column: expressions that are
	// not plain references are computed by a projection in front of it.
	in := c.schema
	var extra []kernels.Expr
	colOf := func(e *pb.Expression) (int, error) {
		if i, ok := substrait.FieldIndex(e); ok && i < in.NumFields() {
			return i, nil
		}
		ke, err := b.expr(e, in)
		if err != nil {
			return 0, err
		}
		extra = append(extra, ke)
		return in.NumFields() + len(extra) - 1, nil
	}
	cfg := window.Config{Window: spec}
	if windowed {
		if cfg.TimeCol, err = colOf(timeExpr); err != nil {
			return nil, err
		}
	}
	for _, g := range keyExprs {
		i, err := colOf(g)
		if err != nil {
			return nil, fmt.Errorf("GROUP BY: %w", err)
		}
		cfg.Keys = append(cfg.Keys, i)
	}
	for mi, m := range a.GetMeasures() {
		f := m.GetMeasure()
		if m.GetFilter() != nil {
			return nil, fmt.Errorf("aggregate FILTER clauses are not supported")
		}
		name, err := b.fname(f.GetFunctionReference())
		if err != nil {
			return nil, err
		}
		distinct := f.GetInvocation() == pb.AggregateFunction_AGGREGATION_INVOCATION_DISTINCT
		if distinct && (name != "count" || len(f.GetArguments()) != 1) {
			return nil, fmt.Errorf("%s(DISTINCT ...) is not supported (only COUNT(DISTINCT x))", name)
		}
		spec := agg.Spec{Arg: -1, Name: "$m" + strconv.Itoa(mi)}
		args := f.GetArguments()
		switch name {
		case "count":
			spec.Func = agg.CountStar
			if len(args) == 1 {
				spec.Func = agg.Count
			}
			if distinct {
				spec.Func = agg.CountDistinct
			}
		case "sum":
			spec.Func = agg.Sum
		case "avg":
			spec.Func = agg.Avg
		case "min":
			spec.Func = agg.Min
		case "max":
			spec.Func = agg.Max
		default:
			return nil, fmt.Errorf("aggregate function %s is not supported", name)
		}
		if spec.Func != agg.CountStar {
			if len(args) != 1 || args[0].GetValue() == nil {
				return nil, fmt.Errorf("%s takes one argument", name)
			}
			if spec.Arg, err = colOf(args[0].GetValue()); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		cfg.Aggs = append(cfg.Aggs, spec)
	}
	if len(extra) > 0 {
		var exprs []kernels.Expr
		var names []string
		for i, f := range in.Fields() {
			exprs = append(exprs, kernels.ColRef(i, f.Type, f.Name))
			names = append(names, f.Name)
		}
		for i, e := range extra {
			exprs = append(exprs, e)
			names = append(names, "$e"+strconv.Itoa(i))
		}
		p := op.NewProject(exprs, names, b.env.Runtime.Mem)
		c.add("project", p, p.Schema)
	}
	cfg.Input = c.schema
	for i, k := range cfg.Keys {
		_ = i
		cfg.KeyNames = append(cfg.KeyNames, c.schema.Field(k).Name)
	}
	if !windowed {
		ga, err := groupagg.New(groupagg.Config{Input: cfg.Input, Keys: cfg.Keys, KeyNames: cfg.KeyNames, Aggs: cfg.Aggs, Retract: retract}, b.env.Runtime.Mem)
		if err != nil {
			return nil, err
		}
		c.add("group_aggregate", ga, ga.OutputSchema())
		sig := b.opSig("group_aggregate")
		sig["group key"] = colList(cfg.Input, cfg.Keys)
		sig["aggregates"] = aggList(cfg.Input, cfg.Aggs)
		sig["input"] = "insert-only"
		if retract {
			sig["input"] = "changelog"
		}
		c.sign(sig)
		// Without aggregates (SELECT DISTINCT) a group of an insert-only
		// input never changes after its first row: the output is
		// insert-only. Over a changelog a group can be deleted.
		c.updating = len(cfg.Aggs) > 0 || retract
		return c, b.emit(c, a.GetCommon())
	}
	if cfg.AllowedLateness, err = allowedLateness(a); err != nil {
		return nil, err
	}
	wa, err := window.New(cfg, b.env.Runtime.Mem)
	if err != nil {
		return nil, err
	}
	c.add("window_aggregate", wa, wa.OutputSchema())
	sig := b.opSig("window_aggregate")
	sig["group key"] = colList(cfg.Input, cfg.Keys)
	sig["window"] = windowString(cfg.Window)
	sig["aggregates"] = aggList(cfg.Input, cfg.Aggs)
	c.sign(sig)
	c.updating = cfg.AllowedLateness > 0
	return c, b.emit(c, a.GetCommon())
}

// isWindow reports whether the grouping starts with Clink's window_start.
func isWindow(b *builder, groups []*pb.Expression) bool {
	if len(groups) == 0 {
		return false
	}
	f := groups[0].GetScalarFunction()
	if f == nil {
		return false
	}
	n, err := b.fname(f.GetFunctionReference())
	return err == nil && n == "window_start"
}

// windowOf reads the window from the grouping expressions.
func (b *builder) windowOf(groups []*pb.Expression) (kwindow.Spec, *pb.Expression, error) {
	var spec kwindow.Spec
	if len(groups) < 2 {
		return spec, nil, fmt.Errorf("window aggregate: the first two grouping expressions must be window_start and window_end")
	}
	start, end := groups[0].GetScalarFunction(), groups[1].GetScalarFunction()
	if start == nil || end == nil {
		return spec, nil, fmt.Errorf("window aggregate: the first two grouping expressions must be window_start and window_end")
	}
	n1, err := b.fname(start.GetFunctionReference())
	if err != nil {
		return spec, nil, err
	}
	n2, err := b.fname(end.GetFunctionReference())
	if err != nil {
		return spec, nil, err
	}
	if n1 != "window_start" || n2 != "window_end" {
		return spec, nil, fmt.Errorf("window aggregate: the first two grouping expressions must be window_start and window_end")
	}
	args := start.GetArguments()
	if len(args) != 5 {
		return spec, nil, fmt.Errorf("window_start takes 5 arguments, got %d", len(args))
	}
	var nums [3]int64
	for i := 0; i < 3; i++ {
		l := args[2+i].GetValue().GetLiteral()
		if l == nil {
			return spec, nil, fmt.Errorf("window_start argument %d must be a literal", i+3)
		}
		switch v := l.GetLiteralType().(type) {
		case *pb.Expression_Literal_I64:
			nums[i] = v.I64
		case *pb.Expression_Literal_I32:
			nums[i] = int64(v.I32)
		default:
			return spec, nil, fmt.Errorf("window_start argument %d must be an integer literal", i+3)
		}
	}
	size, slide, offset := nums[0], nums[1], nums[2]
	switch kind := args[1].GetEnum(); kind {
	case "TUMBLE":
		spec = kwindow.Spec{Kind: kwindow.Tumble, Size: size, Offset: offset}
	case "HOP":
		spec = kwindow.Spec{Kind: kwindow.Hop, Size: size, Slide: slide, Offset: offset}
	case "SESSION":
		spec = kwindow.Spec{Kind: kwindow.Session, Gap: size}
	case "CUMULATE":
		spec = kwindow.Spec{Kind: kwindow.Cumulate, Size: size, Step: slide, Offset: offset}
	default:
		return spec, nil, fmt.Errorf("unknown window kind %q", kind)
	}
	tv := args[0].GetValue()
	if tv == nil {
		return spec, nil, fmt.Errorf("window_start: the time argument must be a value")
	}
	return spec, tv, nil
}

// allowedLateness reads Clink's enhancement on a window AggregateRel:
// {"clink_allowed_lateness_ms": L}.
func allowedLateness(a *pb.AggregateRel) (int64, error) {
	enh := a.GetAdvancedExtension().GetEnhancement()
	if enh == nil {
		return 0, nil
	}
	var st structpb.Struct
	if err := enh.UnmarshalTo(&st); err != nil {
		return 0, fmt.Errorf("aggregate enhancement is not a google.protobuf.Struct: %w", err)
	}
	v, ok := st.Fields["clink_allowed_lateness_ms"]
	if !ok {
		return 0, fmt.Errorf("aggregate enhancement has no clink_allowed_lateness_ms")
	}
	return int64(v.GetNumberValue()), nil
}
