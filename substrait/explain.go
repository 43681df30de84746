package substrait

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuncNames maps a plan's function anchors to their compound names.
func FuncNames(p *pb.Plan) map[uint32]string {
	m := map[uint32]string{}
	for _, d := range p.GetExtensions() {
		if f := d.GetExtensionFunction(); f != nil {
			m[f.GetFunctionAnchor()] = f.GetName()
		}
	}
	return m
}

// Explain prints a plan one line per relation, children indented under
// their parent.
func Explain(p *pb.Plan) string {
	e := &explainer{names: FuncNames(p)}
	for _, r := range p.GetRelations() {
		if root := r.GetRoot(); root != nil {
			fmt.Fprintf(&e.sb, "Root names=[%s]\n", strings.Join(root.GetNames(), ", "))
			e.rel(root.GetInput(), 1)
		} else {
			e.rel(r.GetRel(), 0)
		}
	}
	return e.sb.String()
}

type explainer struct {
	sb    strings.Builder
	names map[uint32]string
}

func (e *explainer) rel(r *pb.Rel, depth int) {
	ind := strings.Repeat("  ", depth)
	switch x := r.GetRelType().(type) {
	case *pb.Rel_Read:
		rd := x.Read
		if vt := rd.GetVirtualTable(); vt != nil {
			fmt.Fprintf(&e.sb, "%sValues rows=%d schema=[%s]%s\n", ind, len(vt.GetExpressions()), schemaString(rd.GetBaseSchema()), emitString(rd.GetCommon()))
			return
		}
		opts, _ := OptionsOf(rd.GetAdvancedExtension())
		fmt.Fprintf(&e.sb, "%sRead %s schema=[%s]%s%s\n", ind, strings.Join(rd.GetNamedTable().GetNames(), "."), schemaString(rd.GetBaseSchema()), emitString(rd.GetCommon()), optString(opts))
	case *pb.Rel_Filter:
		fmt.Fprintf(&e.sb, "%sFilter %s%s\n", ind, e.expr(x.Filter.GetCondition()), emitString(x.Filter.GetCommon()))
		e.rel(x.Filter.GetInput(), depth+1)
	case *pb.Rel_Project:
		fmt.Fprintf(&e.sb, "%sProject [%s]%s\n", ind, e.exprs(x.Project.GetExpressions()), emitString(x.Project.GetCommon()))
		e.rel(x.Project.GetInput(), depth+1)
	case *pb.Rel_Aggregate:
		a := x.Aggregate
		var ms []string
		for _, m := range a.GetMeasures() {
			ms = append(ms, e.agg(m.GetMeasure()))
		}
		fmt.Fprintf(&e.sb, "%sAggregate groups=[%s] measures=[%s]%s\n", ind, e.exprs(a.GetGroupingExpressions()), strings.Join(ms, ", "), emitString(a.GetCommon()))
		e.rel(a.GetInput(), depth+1)
	case *pb.Rel_Join:
		j := x.Join
		extra := ""
		if enh := j.GetAdvancedExtension().GetEnhancement(); enh != nil {
			var st structpb.Struct
			if enh.UnmarshalTo(&st) == nil {
				if iv := st.Fields["clink_interval_join"].GetStructValue(); iv != nil {
					f := iv.GetFields()
					extra = fmt.Sprintf(" interval=[left $%d, right $%d, %d..%d ms]", int(f["left_time"].GetNumberValue()), int(f["right_time"].GetNumberValue()), int64(f["lower"].GetNumberValue()), int64(f["upper"].GetNumberValue()))
				}
			}
		}
		fmt.Fprintf(&e.sb, "%sJoin %s on=%s%s%s\n", ind, strings.TrimPrefix(j.GetType().String(), "JOIN_TYPE_"), e.expr(j.GetExpression()), extra, emitString(j.GetCommon()))
		e.rel(j.GetLeft(), depth+1)
		e.rel(j.GetRight(), depth+1)
	case *pb.Rel_Write:
		w := x.Write
		opts, _ := OptionsOf(w.GetAdvancedExtension())
		fmt.Fprintf(&e.sb, "%sWrite %s op=%s schema=[%s]%s\n", ind, strings.Join(w.GetNamedTable().GetNames(), "."), strings.TrimPrefix(w.GetOp().String(), "WRITE_OP_"), schemaString(w.GetTableSchema()), optString(opts))
		e.rel(w.GetInput(), depth+1)
	default:
		fmt.Fprintf(&e.sb, "%s%T\n", ind, r.GetRelType())
	}
}

func emitString(c *pb.RelCommon) string {
	em := c.GetEmit()
	if em == nil {
		return ""
	}
	parts := make([]string, len(em.GetOutputMapping()))
	for i, m := range em.GetOutputMapping() {
		parts[i] = "$" + strconv.Itoa(int(m))
	}
	return " emit=[" + strings.Join(parts, ", ") + "]"
}

func optString(opts map[string]string) string {
	if len(opts) == 0 {
		return ""
	}
	var parts []string
	for _, k := range SortedKeys(opts) {
		v := opts[k]
		if secretOption(k) && !strings.HasPrefix(v, "env://") {
			v = "******"
		} else {
			v = redactURL(v)
		}
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	return " options={" + strings.Join(parts, ", ") + "}"
}

func schemaString(ns *pb.NamedStruct) string {
	var parts []string
	for i, n := range ns.GetNames() {
		t := "?"
		if i < len(ns.GetStruct().GetTypes()) {
			t = TypeString(ns.GetStruct().GetTypes()[i])
		}
		parts = append(parts, n+":"+t)
	}
	return strings.Join(parts, ", ")
}

// TypeString prints a Substrait type in its short form.
func TypeString(t *pb.Type) string {
	at, err := ArrowOf(t)
	if err != nil {
		return fmt.Sprintf("%T", t.GetKind())
	}
	return ShortName(at)
}

func (e *explainer) exprs(xs []*pb.Expression) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = e.expr(x)
	}
	return strings.Join(parts, ", ")
}

func (e *explainer) fname(anchor uint32) string {
	n, ok := e.names[anchor]
	if !ok {
		return fmt.Sprintf("fn#%d", anchor)
	}
	if i := strings.IndexByte(n, ':'); i >= 0 {
		return n[:i]
	}
	return n
}

func (e *explainer) args(as []*pb.FunctionArgument) string {
	parts := make([]string, len(as))
	for i, a := range as {
		switch v := a.GetArgType().(type) {
		case *pb.FunctionArgument_Enum:
			parts[i] = v.Enum
		case *pb.FunctionArgument_Value:
			parts[i] = e.expr(v.Value)
		case *pb.FunctionArgument_Type:
			parts[i] = TypeString(v.Type)
		}
	}
	return strings.Join(parts, ", ")
}

func (e *explainer) agg(f *pb.AggregateFunction) string {
	d := ""
	if f.GetInvocation() == pb.AggregateFunction_AGGREGATION_INVOCATION_DISTINCT {
		d = "DISTINCT "
	}
	return fmt.Sprintf("%s(%s%s)", e.fname(f.GetFunctionReference()), d, e.args(f.GetArguments()))
}

func (e *explainer) expr(x *pb.Expression) string {
	if i, ok := FieldIndex(x); ok {
		return "$" + strconv.Itoa(i)
	}
	switch v := x.GetRexType().(type) {
	case *pb.Expression_Literal_:
		return LiteralString(v.Literal)
	case *pb.Expression_ScalarFunction_:
		return fmt.Sprintf("%s(%s)", e.fname(v.ScalarFunction.GetFunctionReference()), e.args(v.ScalarFunction.GetArguments()))
	case *pb.Expression_Cast_:
		return fmt.Sprintf("cast(%s AS %s)", e.expr(v.Cast.GetInput()), TypeString(v.Cast.GetType()))
	case *pb.Expression_IfThen_:
		var parts []string
		for _, c := range v.IfThen.GetIfs() {
			parts = append(parts, "when "+e.expr(c.GetIf())+" then "+e.expr(c.GetThen()))
		}
		if v.IfThen.GetElse() != nil {
			parts = append(parts, "else "+e.expr(v.IfThen.GetElse()))
		}
		return "case(" + strings.Join(parts, " ") + ")"
	case *pb.Expression_SingularOrList_:
		return e.expr(v.SingularOrList.GetValue()) + " in [" + e.exprs(v.SingularOrList.GetOptions()) + "]"
	}
	return fmt.Sprintf("%T", x.GetRexType())
}

// LiteralString prints a literal as SQL-ish text.
func LiteralString(l *pb.Expression_Literal) string {
	switch v := l.GetLiteralType().(type) {
	case *pb.Expression_Literal_I8:
		return strconv.Itoa(int(v.I8))
	case *pb.Expression_Literal_I16:
		return strconv.Itoa(int(v.I16))
	case *pb.Expression_Literal_I32:
		return strconv.Itoa(int(v.I32))
	case *pb.Expression_Literal_I64:
		return strconv.FormatInt(v.I64, 10)
	case *pb.Expression_Literal_Fp32:
		return strconv.FormatFloat(float64(v.Fp32), 'g', -1, 32)
	case *pb.Expression_Literal_Fp64:
		return strconv.FormatFloat(v.Fp64, 'g', -1, 64)
	case *pb.Expression_Literal_String_:
		return "'" + strings.ReplaceAll(v.String_, "'", "''") + "'"
	case *pb.Expression_Literal_Boolean:
		if v.Boolean {
			return "true"
		}
		return "false"
	case *pb.Expression_Literal_Null:
		return "null:" + TypeString(v.Null)
	}
	return fmt.Sprintf("%T", l.GetLiteralType())
}

// secretOption reports options whose values explain must not print
// (credentials); env:// references are shown, they name no secret.
func secretOption(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "secret", "token", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	// An account key (azure.key, account_key), not an access key id.
	return k == "key" || strings.HasSuffix(k, ".key") || strings.HasSuffix(k, "account_key")
}

var (
	urlPassword = regexp.MustCompile(`(://[^/:@\s]*:)[^@/\s]*@`)
	kvPassword  = regexp.MustCompile(`(?i)\b(password\s*=\s*)('[^']*'|\S+)`)
)

// redactURL hides the password of a connection string (a URL's
// user:password@, or a key=value password=...) in any option.
func redactURL(v string) string {
	v = urlPassword.ReplaceAllString(v, "${1}******@")
	return kvPassword.ReplaceAllString(v, "${1}******")
}
