package planner

import (
	"strings"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/clink-dev/clink/substrait"
)

// Projection pushdown. Before a root is planned, its relations are walked
// from the top with the set of output columns each must produce; what a
// relation reads of its input follows from its expressions (every field
// reference in them counts) and its column mapping. At the reads, the
// result is the set of table columns the query uses, by reading (readKey):
// a source may skip decoding the others, which stay NULL. Anything the
// walk does not understand needs every column: the analysis only ever
// errs towards decoding more.

// colSet is a set of column indices, or every column.
type colSet struct {
	all  bool
	cols map[int]bool
}

func allCols() colSet { return colSet{all: true} }

func (s *colSet) add(i int) {
	if s.all {
		return
	}
	if s.cols == nil {
		s.cols = map[int]bool{}
	}
	s.cols[i] = true
}

func (s *colSet) union(o colSet) {
	if o.all {
		s.all, s.cols = true, nil
		return
	}
	for i := range o.cols {
		s.add(i)
	}
}

// needs are the columns used of each reading of a table, by readKey.
type needs map[string]*colSet

// walk walks r with out, the columns of its output the consumer uses.
func (n needs) walk(r *pb.Rel, out colSet) {
	switch x := r.GetRelType().(type) {
	case *pb.Rel_Read:
		rd := x.Read
		in := preEmit(rd.GetCommon(), out)
		if rd.GetNamedTable() == nil {
			return
		}
		key, ok := readKeyOf(rd)
		if !ok {
			return
		}
		if n[key] == nil {
			n[key] = &colSet{}
		}
		n[key].union(in)
	case *pb.Rel_Filter:
		in := preEmit(x.Filter.GetCommon(), out)
		if !refsOf(x.Filter.GetCondition(), &in) {
			in = allCols()
		}
		n.walk(x.Filter.GetInput(), in)
	case *pb.Rel_Project:
		p := x.Project
		pre := preEmit(p.GetCommon(), out)
		w, ok := arity(p.GetInput())
		var in colSet
		if !ok || pre.all {
			in = allCols()
		} else {
			for i := range pre.cols {
				if i < w {
					in.add(i)
				}
			}
		}
		for _, e := range p.GetExpressions() {
			if !refsOf(e, &in) {
				in = allCols()
			}
		}
		n.walk(p.GetInput(), in)
	case *pb.Rel_Aggregate:
		a := x.Aggregate
		var in colSet
		if !refsOf(a, &in) {
			in = allCols()
		}
		n.walk(a.GetInput(), in)
	case *pb.Rel_Join:
		j := x.Join
		pre := preEmit(j.GetCommon(), out)
		nl, ok := arity(j.GetLeft())
		var cond colSet
		if !ok || pre.all || !refsOf(j.GetExpression(), &cond) || !refsOf(j.GetPostJoinFilter(), &cond) || cond.all {
			n.walk(j.GetLeft(), allCols())
			n.walk(j.GetRight(), allCols())
			return
		}
		var left, right colSet
		for _, s := range []colSet{pre, cond} {
			for i := range s.cols {
				if i < nl {
					left.add(i)
				} else {
					right.add(i - nl)
				}
			}
		}
		if lt, rt, ok := intervalTimes(j); ok {
			left.add(lt)
			right.add(rt)
		} else {
			left, right = allCols(), allCols()
		}
		n.walk(j.GetLeft(), left)
		n.walk(j.GetRight(), right)
	case *pb.Rel_Set:
		in := preEmit(x.Set.GetCommon(), out)
		for _, i := range x.Set.GetInputs() {
			n.walk(i, in)
		}
	default:
		// Top-N (its time column is named in an enhancement) and anything
		// else: every input column.
		for _, i := range inputsOf(r) {
			n.walk(i, allCols())
		}
	}
}

// preEmit maps the used output columns of a relation back through its
// emit mapping to its direct output.
func preEmit(common *pb.RelCommon, out colSet) colSet {
	em := common.GetEmit()
	if em == nil {
		return out
	}
	var pre colSet
	for i, m := range em.GetOutputMapping() {
		if out.all || out.cols[i] {
			pre.add(int(m))
		}
	}
	return pre
}

// arity is the number of columns a relation emits, when known.
func arity(r *pb.Rel) (int, bool) {
	var common *pb.RelCommon
	var n int
	switch x := r.GetRelType().(type) {
	case *pb.Rel_Read:
		common = x.Read.GetCommon()
		n = len(x.Read.GetBaseSchema().GetNames())
		if st := x.Read.GetBaseSchema().GetStruct(); st != nil {
			n = len(st.GetTypes())
		}
	case *pb.Rel_Filter:
		common = x.Filter.GetCommon()
		w, ok := arity(x.Filter.GetInput())
		if !ok {
			return 0, false
		}
		n = w
	case *pb.Rel_Project:
		common = x.Project.GetCommon()
		w, ok := arity(x.Project.GetInput())
		if !ok {
			return 0, false
		}
		n = w + len(x.Project.GetExpressions())
	case *pb.Rel_Join:
		common = x.Join.GetCommon()
		l, ok1 := arity(x.Join.GetLeft())
		r, ok2 := arity(x.Join.GetRight())
		if !ok1 || !ok2 {
			return 0, false
		}
		n = l + r
	case *pb.Rel_Aggregate:
		// The grouping columns (as aggregate plans them: one grouping set)
		// then one column per measure.
		a := x.Aggregate
		common = a.GetCommon()
		if len(a.GetGroupings()) > 1 {
			return 0, false
		}
		n = len(a.GetGroupingExpressions())
		if len(a.GetGroupings()) == 1 {
			g := a.GetGroupings()[0]
			if refs := len(g.GetExpressionReferences()); refs > 0 {
				n = refs
			} else if exprs := len(g.GetGroupingExpressions()); exprs > 0 {
				n = exprs
			}
		}
		n += len(a.GetMeasures())
	case *pb.Rel_Set:
		common = x.Set.GetCommon()
		if len(x.Set.GetInputs()) == 0 {
			return 0, false
		}
		w, ok := arity(x.Set.GetInputs()[0])
		if !ok {
			return 0, false
		}
		n = w
	default:
		return 0, false
	}
	if em := common.GetEmit(); em != nil {
		return len(em.GetOutputMapping()), true
	}
	return n, true
}

// inputsOf are a relation's direct inputs.
func inputsOf(r *pb.Rel) []*pb.Rel {
	m := r.ProtoReflect()
	od := m.Descriptor().Oneofs().ByName("rel_type")
	if od == nil {
		return nil
	}
	which := m.WhichOneof(od)
	if which == nil || which.Message() == nil {
		return nil
	}
	relName := m.Descriptor().FullName()
	var out []*pb.Rel
	m.Get(which).Message().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.Message().FullName() != relName {
			return true
		}
		if fd.IsList() {
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, v.List().Get(i).Message().Interface().(*pb.Rel))
			}
		} else {
			out = append(out, v.Message().Interface().(*pb.Rel))
		}
		return true
	})
	return out
}

// refsOf adds to s the columns every field reference in m (an expression or
// a relation's own message, not descending into input relations) names. It
// reports false when a reference is not a plain column of the input (an
// outer reference, a subquery, an expression-rooted reference).
func refsOf(m proto.Message, s *colSet) bool {
	if m == nil || !m.ProtoReflect().IsValid() {
		return true
	}
	ok := true
	relName := (&pb.Rel{}).ProtoReflect().Descriptor().FullName()
	refName := (&pb.Expression_FieldReference{}).ProtoReflect().Descriptor().FullName()
	subName := (&pb.Expression_Subquery{}).ProtoReflect().Descriptor().FullName()
	var visit func(protoreflect.Message)
	visit = func(msg protoreflect.Message) {
		switch msg.Descriptor().FullName() {
		case relName:
			return // an input: walked on its own
		case subName:
			ok = false
			return
		case refName:
			ref := msg.Interface().(*pb.Expression_FieldReference)
			sf := ref.GetDirectReference().GetStructField()
			if ref.GetRootReference() == nil || sf == nil {
				ok = false
				return
			}
			s.add(int(sf.GetField()))
			return
		}
		msg.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.Message() == nil {
				return true
			}
			switch {
			case fd.IsList():
				for i := 0; i < v.List().Len(); i++ {
					visit(v.List().Get(i).Message())
				}
			case fd.IsMap():
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					if fd.MapValue().Message() != nil {
						visit(mv.Message())
					}
					return true
				})
			default:
				visit(v.Message())
			}
			return true
		})
	}
	visit(m.ProtoReflect())
	return ok
}

// intervalTimes are an interval join's time columns (left, and right in
// the right input), from its enhancement; ok is true without one too.
func intervalTimes(j *pb.JoinRel) (int, int, bool) {
	enh := j.GetAdvancedExtension().GetEnhancement()
	if enh == nil {
		return 0, 0, true
	}
	var st structpb.Struct
	if err := enh.UnmarshalTo(&st); err != nil {
		return 0, 0, false
	}
	f := st.Fields["clink_interval_join"].GetStructValue().GetFields()
	l, okl := f["left_time"]
	r, okr := f["right_time"]
	if !okl || !okr {
		return 0, 0, false
	}
	return int(l.GetNumberValue()), int(r.GetNumberValue()), true
}

// readKeyOf is readKey for a ReadRel, as read computes it.
func readKeyOf(rd *pb.ReadRel) (string, bool) {
	schema, err := substrait.ArrowSchema(rd.GetBaseSchema())
	if err != nil {
		return "", false
	}
	opts, err := substrait.OptionsOf(rd.GetAdvancedExtension())
	if err != nil {
		return "", false
	}
	return readKey(strings.Join(rd.GetNamedTable().GetNames(), "."), schema, opts), true
}

// neededOf turns a reading's used columns into Table.Needed: nil when
// every column is used; the event-time column is always decoded (the
// source's watermarks come from it).
func (n needs) neededOf(key string, width, eventTime int) []bool {
	s := n[key]
	if s == nil || s.all {
		return nil
	}
	out := make([]bool, width)
	all := true
	for i := range out {
		out[i] = s.cols[i] || i == eventTime
		all = all && out[i]
	}
	if all {
		return nil
	}
	return out
}
