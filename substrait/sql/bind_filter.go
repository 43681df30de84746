package sql

import (
	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// aggFilter applies an aggregate's FILTER (WHERE cond) to its argument.
// As in Flink, the aggregate sees only the rows where cond is TRUE (not
// FALSE or NULL). Every aggregate Clink has ignores NULL arguments, so
// agg(x) FILTER (WHERE cond) is agg(CASE WHEN cond THEN x END) and
// COUNT(*) FILTER (WHERE cond) is COUNT(CASE WHEN cond THEN 1 END),
// DISTINCT or not: the plan needs no Measure.filter and the kernels no
// filter of their own. args are the call's bound arguments (none for
// COUNT(*)); the result is the one argument to aggregate.
func (b *binder) aggFilter(f *FuncCall, args []bound, sc *scope) ([]bound, error) {
	if hasAggregate(f.Filter) {
		return nil, b.errf(f.Filter.Position(), "aggregate functions are not allowed in FILTER")
	}
	c, err := b.expr(f.Filter, sc)
	if err != nil {
		return nil, err
	}
	if c.typ.ID() != arrow.BOOL && c.typ.ID() != arrow.NULL {
		return nil, b.errf(f.Filter.Position(), "FILTER needs a BOOLEAN condition, not %s", kernels.SQLTypeName(c.typ))
	}
	c = b.castNull(c, arrow.FixedWidthTypes.Boolean)
	if f.Star {
		args = []bound{{pb: substrait.LitI32(1), typ: arrow.PrimitiveTypes.Int32, col: -1}}
	}
	x := args[0]
	if x.typ.ID() == arrow.NULL {
		return args, nil // NULL whatever the condition
	}
	pt, err := substrait.TypeOf(x.typ)
	if err != nil {
		return nil, b.errf(f.Pos, "%v", err)
	}
	e := &pb.Expression{RexType: &pb.Expression_IfThen_{IfThen: &pb.Expression_IfThen{
		Ifs:  []*pb.Expression_IfThen_IfClause{{If: c.pb, Then: x.pb}},
		Else: substrait.LitNull(pt),
	}}}
	return []bound{{pb: e, typ: x.typ, col: -1}}, nil
}
