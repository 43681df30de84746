package planner

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// expr compiles a Substrait expression over an input schema.
func (b *builder) expr(e *pb.Expression, in *arrow.Schema) (kernels.Expr, error) {
	if i, ok := substrait.FieldIndex(e); ok {
		if i < 0 || i >= in.NumFields() {
			return nil, fmt.Errorf("field reference $%d out of range (%d columns)", i, in.NumFields())
		}
		f := in.Field(i)
		return kernels.ColRef(i, f.Type, f.Name), nil
	}
	switch x := e.GetRexType().(type) {
	case *pb.Expression_Literal_:
		return substrait.LiteralExpr(x.Literal)
	case *pb.Expression_ScalarFunction_:
		sf := x.ScalarFunction
		name, err := b.fname(sf.GetFunctionReference())
		if err != nil {
			return nil, err
		}
		if name == "window_start" || name == "window_end" {
			return nil, fmt.Errorf("%s is only valid as a grouping expression of a window aggregate", name)
		}
		args := make([]kernels.Expr, len(sf.GetArguments()))
		for i, a := range sf.GetArguments() {
			v := a.GetValue()
			if v == nil {
				return nil, fmt.Errorf("%s: argument %d is not a value", name, i+1)
			}
			if args[i], err = b.expr(v, in); err != nil {
				return nil, err
			}
		}
		return b.env.Funcs.Call(name, args)
	case *pb.Expression_IfThen_:
		it := x.IfThen
		var conds, results []kernels.Expr
		for _, c := range it.GetIfs() {
			ce, err := b.expr(c.GetIf(), in)
			if err != nil {
				return nil, err
			}
			re, err := b.expr(c.GetThen(), in)
			if err != nil {
				return nil, err
			}
			conds, results = append(conds, ce), append(results, re)
		}
		var els kernels.Expr
		if it.GetElse() != nil {
			var err error
			if els, err = b.expr(it.GetElse(), in); err != nil {
				return nil, err
			}
		}
		return kernels.Case(conds, results, els)
	case *pb.Expression_SingularOrList_:
		v, err := b.expr(x.SingularOrList.GetValue(), in)
		if err != nil {
			return nil, err
		}
		var items []kernels.Expr
		for _, o := range x.SingularOrList.GetOptions() {
			ie, err := b.expr(o, in)
			if err != nil {
				return nil, err
			}
			items = append(items, ie)
		}
		return kernels.InList(v, items)
	case *pb.Expression_Cast_:
		inner, err := b.expr(x.Cast.GetInput(), in)
		if err != nil {
			return nil, err
		}
		t, err := substrait.ArrowOf(x.Cast.GetType())
		if err != nil {
			return nil, err
		}
		return kernels.Cast(inner, t)
	}
	return nil, fmt.Errorf("expression %T is not supported", e.GetRexType())
}
