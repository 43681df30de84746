package planner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/engine/op/join"
	"github.com/clink-dev/clink/substrait"
)

// join plans a JoinRel: equalities between a left and a right column are
// the keys; every other conjunct of the condition is a residual predicate.
// An interval join is declared by Clink's enhancement on the JoinRel
// (docs/design/substrait.md).
func (b *builder) join(jr *pb.JoinRel) (*chain, error) {
	left, err := b.rel(jr.GetLeft())
	if err != nil {
		return nil, err
	}
	right, err := b.rel(jr.GetRight())
	if err != nil {
		return nil, err
	}
	if left.updating || right.updating {
		return nil, fmt.Errorf("joins over an updating (changelog) input are not supported")
	}
	if jr.GetPostJoinFilter() != nil {
		return nil, fmt.Errorf("JoinRel post_join_filter is not supported")
	}
	cfg := join.Config{}
	switch jr.GetType() {
	case pb.JoinRel_JOIN_TYPE_INNER:
		cfg.Kind = join.Inner
	case pb.JoinRel_JOIN_TYPE_LEFT:
		cfg.Kind = join.Left
	case pb.JoinRel_JOIN_TYPE_RIGHT:
		cfg.Kind = join.Right
	case pb.JoinRel_JOIN_TYPE_OUTER:
		cfg.Kind = join.Full
	default:
		return nil, fmt.Errorf("join type %s is not supported", jr.GetType())
	}
	nl := left.schema.NumFields()
	joined := arrow.NewSchema(append(append([]arrow.Field{}, left.schema.Fields()...), right.schema.Fields()...), nil)
	var residual []*pb.Expression
	for _, c := range conjuncts(b, jr.GetExpression()) {
		if l, r, ok := b.equiKey(c, nl, joined.NumFields()); ok {
			cfg.LeftKeys = append(cfg.LeftKeys, l)
			cfg.RightKeys = append(cfg.RightKeys, r-nl)
			continue
		}
		residual = append(residual, c)
	}
	if len(cfg.LeftKeys) == 0 {
		return nil, fmt.Errorf("join needs at least one equality between a column of each side (a cross or theta join is not supported)")
	}
	for i, l := range cfg.LeftKeys {
		if !arrow.TypeEqual(left.schema.Field(l).Type, right.schema.Field(cfg.RightKeys[i]).Type) {
			return nil, fmt.Errorf("join keys %s and %s have different types", left.schema.Field(l).Name, right.schema.Field(cfg.RightKeys[i]).Name)
		}
	}
	if len(residual) > 0 {
		e := residual[0]
		if len(residual) > 1 {
			anchor, ok := b.anchorOf("and")
			if !ok {
				return nil, fmt.Errorf("join condition: 'and' is not declared in the plan")
			}
			e = substrait.Call(anchor, nil, residual...)
		}
		if cfg.Residual, err = b.expr(e, joined); err != nil {
			return nil, fmt.Errorf("join condition: %w", err)
		}
	}
	if iv, err := intervalOf(jr, nl); err != nil {
		return nil, err
	} else if iv != nil {
		cfg.Interval = iv
	}
	cfg.Left, cfg.Right = left.schema, right.schema
	j, err := join.New(cfg, b.env.Runtime.Mem)
	if err != nil {
		return nil, err
	}
	c := &chain{binary: j, inputs: []*engine.Node{left.node(), right.node()}, schema: j.OutputSchema(), updating: j.Updating(), binarySig: joinSig(b, cfg)}
	return c, b.emit(c, jr.GetCommon())
}

// conjuncts splits a condition on AND.
func conjuncts(b *builder, e *pb.Expression) []*pb.Expression {
	if e == nil {
		return nil
	}
	if f := e.GetScalarFunction(); f != nil {
		if n, err := b.fname(f.GetFunctionReference()); err == nil && n == "and" {
			var out []*pb.Expression
			for _, a := range f.GetArguments() {
				out = append(out, conjuncts(b, a.GetValue())...)
			}
			return out
		}
	}
	return []*pb.Expression{e}
}

// equiKey recognizes equal($l, $r) with one column of each side.
func (b *builder) equiKey(e *pb.Expression, nl, n int) (int, int, bool) {
	f := e.GetScalarFunction()
	if f == nil || len(f.GetArguments()) != 2 {
		return 0, 0, false
	}
	if name, err := b.fname(f.GetFunctionReference()); err != nil || name != "equal" {
		return 0, 0, false
	}
	a, ok1 := substrait.FieldIndex(f.GetArguments()[0].GetValue())
	c, ok2 := substrait.FieldIndex(f.GetArguments()[1].GetValue())
	if !ok1 || !ok2 || a >= n || c >= n {
		return 0, 0, false
	}
	switch {
	case a < nl && c >= nl:
		return a, c, true
	case c < nl && a >= nl:
		return c, a, true
	}
	return 0, 0, false
}

func (b *builder) anchorOf(name string) (uint32, bool) {
	for a, n := range b.fnames {
		if n == name || len(n) > len(name) && n[:len(name)+1] == name+":" {
			return a, true
		}
	}
	return 0, false
}

// intervalOf reads Clink's interval-join enhancement:
// {"clink_interval_join": {"left_time": i, "right_time": j, "lower": ms, "upper": ms}}
// with i a left column and j a column of the right input (0-based there).
func intervalOf(jr *pb.JoinRel, nl int) (*join.Interval, error) {
	enh := jr.GetAdvancedExtension().GetEnhancement()
	if enh == nil {
		return nil, nil
	}
	var st structpb.Struct
	if err := enh.UnmarshalTo(&st); err != nil {
		return nil, fmt.Errorf("join enhancement is not a google.protobuf.Struct: %w", err)
	}
	v, ok := st.Fields["clink_interval_join"]
	if !ok {
		return nil, fmt.Errorf("join enhancement has no clink_interval_join")
	}
	f := v.GetStructValue().GetFields()
	num := func(k string) (int64, error) {
		x, ok := f[k]
		if !ok {
			return 0, fmt.Errorf("clink_interval_join has no %s", k)
		}
		return int64(x.GetNumberValue()), nil
	}
	var iv join.Interval
	var vals [4]int64
	for i, k := range []string{"left_time", "right_time", "lower", "upper"} {
		n, err := num(k)
		if err != nil {
			return nil, err
		}
		vals[i] = n
	}
	iv.LeftTime, iv.RightTime, iv.Lower, iv.Upper = int(vals[0]), int(vals[1]), vals[2], vals[3]
	if iv.LeftTime < 0 || iv.LeftTime >= nl {
		return nil, fmt.Errorf("clink_interval_join left_time %d is not a left column", iv.LeftTime)
	}
	return &iv, nil
}
