package substrait

import (
	"fmt"
	"sort"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Builder collects the extension declarations a plan needs while its
// relations are built.
type Builder struct {
	urns    map[string]uint32
	urnList []*ext.SimpleExtensionURN
	funcs   map[string]uint32
	decls   []*ext.SimpleExtensionDeclaration
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder {
	return &Builder{urns: map[string]uint32{}, funcs: map[string]uint32{}}
}

// Func returns the anchor of function compound (e.g. "add:i64_i64") from
// the extension urn, declaring it on first use.
func (b *Builder) Func(urn, compound string) uint32 {
	key := urn + "#" + compound
	if a, ok := b.funcs[key]; ok {
		return a
	}
	u, ok := b.urns[urn]
	if !ok {
		u = uint32(len(b.urnList) + 1)
		b.urns[urn] = u
		b.urnList = append(b.urnList, &ext.SimpleExtensionURN{ExtensionUrnAnchor: u, Urn: urn})
	}
	a := uint32(len(b.decls) + 1)
	b.funcs[key] = a
	b.decls = append(b.decls, &ext.SimpleExtensionDeclaration{
		MappingType: &ext.SimpleExtensionDeclaration_ExtensionFunction_{
			ExtensionFunction: &ext.SimpleExtensionDeclaration_ExtensionFunction{
				ExtensionUrnReference: u, FunctionAnchor: a, Name: compound,
			},
		},
	})
	return a
}

// Plan wraps the roots into a plan carrying the declarations.
func (b *Builder) Plan(roots ...*pb.RelRoot) *pb.Plan {
	p := &pb.Plan{
		Version:       &pb.Version{MajorNumber: 0, MinorNumber: 85, Producer: "clink"},
		ExtensionUrns: b.urnList,
		Extensions:    b.decls,
	}
	for _, r := range roots {
		p.Relations = append(p.Relations, &pb.PlanRel{RelType: &pb.PlanRel_Root{Root: r}})
	}
	return p
}

// FieldRef references input column i.
func FieldRef(i int) *pb.Expression {
	return &pb.Expression{RexType: &pb.Expression_Selection{Selection: &pb.Expression_FieldReference{
		ReferenceType: &pb.Expression_FieldReference_DirectReference{DirectReference: &pb.Expression_ReferenceSegment{
			ReferenceType: &pb.Expression_ReferenceSegment_StructField_{StructField: &pb.Expression_ReferenceSegment_StructField{Field: int32(i)}},
		}},
		RootType: &pb.Expression_FieldReference_RootReference_{RootReference: &pb.Expression_FieldReference_RootReference{}},
	}}}
}

// FieldIndex returns the column a direct root field reference names.
func FieldIndex(e *pb.Expression) (int, bool) {
	sel := e.GetSelection()
	if sel == nil || sel.GetRootReference() == nil {
		return 0, false
	}
	sf := sel.GetDirectReference().GetStructField()
	if sf == nil || sf.GetChild() != nil {
		return 0, false
	}
	return int(sf.GetField()), true
}

func lit(l *pb.Expression_Literal) *pb.Expression {
	l.Nullable = true
	return &pb.Expression{RexType: &pb.Expression_Literal_{Literal: l}}
}

// LitI64 is a BIGINT literal.
func LitI64(v int64) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_I64{I64: v}})
}

// LitI32 is an INT literal.
func LitI32(v int32) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_I32{I32: v}})
}

// LitF64 is a DOUBLE literal.
func LitF64(v float64) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Fp64{Fp64: v}})
}

// LitDecimal is an exact DECIMAL(p, s) literal: unscaled is the value
// times 10^s as 16 bytes, little-endian two's complement.
func LitDecimal(unscaled []byte, precision, scale int32) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Decimal_{Decimal: &pb.Expression_Literal_Decimal{Value: unscaled, Precision: precision, Scale: scale}}})
}

// LitString is a VARCHAR literal.
func LitString(v string) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_String_{String_: v}})
}

// LitBool is a BOOLEAN literal.
func LitBool(v bool) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: v}})
}

// LitNull is a typed NULL.
func LitNull(t *pb.Type) *pb.Expression {
	return lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Null{Null: t}})
}

// Call is a scalar function call.
func Call(anchor uint32, out *pb.Type, args ...*pb.Expression) *pb.Expression {
	fa := make([]*pb.FunctionArgument, len(args))
	for i, a := range args {
		fa[i] = &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: a}}
	}
	return &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: &pb.Expression_ScalarFunction{
		FunctionReference: anchor, Arguments: fa, OutputType: out,
	}}}
}

// EnumArg is an enumeration argument (e.g. the window kind).
func EnumArg(v string) *pb.FunctionArgument {
	return &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Enum{Enum: v}}
}

// ValueArg wraps an expression as a function argument.
func ValueArg(e *pb.Expression) *pb.FunctionArgument {
	return &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: e}}
}

// Cast converts e to t; a failed cast is an error (not NULL).
func Cast(e *pb.Expression, t *pb.Type) *pb.Expression {
	return &pb.Expression{RexType: &pb.Expression_Cast_{Cast: &pb.Expression_Cast{
		Type: t, Input: e, FailureBehavior: pb.Expression_Cast_FAILURE_BEHAVIOR_THROW_EXCEPTION,
	}}}
}

// Options is the payload Clink attaches to ReadRel and WriteRel as an
// AdvancedExtension enhancement: the table's connector options, verbatim.
func Options(opts map[string]string) (*ext.AdvancedExtension, error) {
	fields := map[string]any{}
	for k, v := range opts {
		fields[k] = v
	}
	st, err := structpb.NewStruct(map[string]any{"clink_connector_options": fields})
	if err != nil {
		return nil, err
	}
	a, err := PackAny(st)
	if err != nil {
		return nil, err
	}
	return &ext.AdvancedExtension{Enhancement: a}, nil
}

// OptionsOf reads the connector options back from a relation's
// AdvancedExtension.
func OptionsOf(ae *ext.AdvancedExtension) (map[string]string, error) {
	if ae.GetEnhancement() == nil {
		return nil, fmt.Errorf("relation has no Clink connector options (AdvancedExtension enhancement)")
	}
	var st structpb.Struct
	if err := ae.GetEnhancement().UnmarshalTo(&st); err != nil {
		return nil, fmt.Errorf("relation enhancement is not a google.protobuf.Struct: %w", err)
	}
	v, ok := st.Fields["clink_connector_options"]
	if !ok || v.GetStructValue() == nil {
		return nil, fmt.Errorf("relation enhancement has no clink_connector_options")
	}
	out := map[string]string{}
	for k, f := range v.GetStructValue().Fields {
		s, ok := f.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, fmt.Errorf("connector option %s is not a string", k)
		}
		out[k] = s.StringValue
	}
	return out, nil
}

// SortedKeys returns m's keys in order.
func SortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Direct is the RelCommon of a relation that emits all its columns.
func Direct() *pb.RelCommon {
	return &pb.RelCommon{EmitKind: &pb.RelCommon_Direct_{Direct: &pb.RelCommon_Direct{}}}
}

// PackAny packs m into an Any deterministically (map fields sorted), so
// the same SQL always compiles to the same plan bytes: the plan's
// fingerprint identifies the job whose checkpoints may be restored.
func PackAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, err
	}
	return a, nil
}
