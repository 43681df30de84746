package sql

import (
	binenc "encoding/binary"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// funcURN says which extension file declares a scalar or aggregate
// function the binder emits.
var funcURN = map[string]string{
	"add": substrait.URNArithmetic, "subtract": substrait.URNArithmetic, "multiply": substrait.URNArithmetic,
	"divide": substrait.URNArithmetic, "modulus": substrait.URNArithmetic, "negate": substrait.URNArithmetic,
	"sum": substrait.URNArithmetic, "avg": substrait.URNArithmetic, "min": substrait.URNArithmetic, "max": substrait.URNArithmetic,
	"count": substrait.URNAggregate,
	"equal": substrait.URNComparison, "not_equal": substrait.URNComparison, "lt": substrait.URNComparison,
	"lte": substrait.URNComparison, "gt": substrait.URNComparison, "gte": substrait.URNComparison,
	"is_null": substrait.URNComparison, "is_not_null": substrait.URNComparison, "is_true": substrait.URNComparison,
	"is_false": substrait.URNComparison, "is_not_true": substrait.URNComparison, "is_not_false": substrait.URNComparison,
	"coalesce": substrait.URNComparison,
	"and":      substrait.URNBoolean, "or": substrait.URNBoolean, "not": substrait.URNBoolean,
	"window_start": substrait.URNClink, "window_end": substrait.URNClink,
	"upper": substrait.URNString, "lower": substrait.URNString, "char_length": substrait.URNString,
	"substring": substrait.URNString, "trim": substrait.URNString, "ltrim": substrait.URNString,
	"rtrim": substrait.URNString, "concat": substrait.URNString, "replace": substrait.URNString,
	"strpos": substrait.URNString, "like": substrait.URNString,
	"abs": substrait.URNArithmetic, "power": substrait.URNArithmetic, "sqrt": substrait.URNArithmetic,
	"floor": substrait.URNRounding, "ceil": substrait.URNRounding, "round": substrait.URNRounding,
	"extract": substrait.URNDatetime,
	"nullif":  substrait.URNClink, "split_part": substrait.URNClink, "date_trunc": substrait.URNClink,
	"to_timestamp": substrait.URNClink, "to_timestamp_ltz": substrait.URNClink, "date_format": substrait.URNClink,
	"regexp_extract": substrait.URNClink, "regexp": substrait.URNClink,
}

// sqlFuncs maps the SQL names users write to registry names.
var sqlFuncs = map[string]string{
	"UPPER": "upper", "LOWER": "lower", "CHAR_LENGTH": "char_length", "CHARACTER_LENGTH": "char_length",
	"SUBSTRING": "substring", "SUBSTR": "substring", "CONCAT": "concat", "REPLACE": "replace",
	"POSITION": "strpos", "SPLIT_PART": "split_part", "LTRIM": "ltrim", "RTRIM": "rtrim",
	"ABS": "abs", "FLOOR": "floor", "CEIL": "ceil", "CEILING": "ceil", "ROUND": "round",
	"MOD": "modulus", "POWER": "power", "POW": "power", "SQRT": "sqrt",
	"NULLIF": "nullif", "COALESCE": "coalesce", "DATE_TRUNC": "date_trunc",
	"TO_TIMESTAMP": "to_timestamp", "TO_TIMESTAMP_LTZ": "to_timestamp_ltz", "DATE_FORMAT": "date_format",
	"REGEXP_EXTRACT": "regexp_extract", "REGEXP": "regexp",
}

// compound is a function's signature name as the extension files declare
// it: comparisons take any_any, the boolean connectives are variadic.
func compound(name string, types []arrow.DataType) string {
	switch name {
	case "equal", "not_equal", "lt", "lte", "gt", "gte":
		return name + ":any_any"
	case "is_null", "is_not_null", "coalesce":
		return name + ":any"
	case "and", "or", "not", "is_true", "is_false", "is_not_true", "is_not_false":
		return name + ":bool"
	}
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = substrait.ShortName(t)
	}
	return name + ":" + strings.Join(parts, "_")
}

// call binds a scalar function call; the kernels registry types it (and
// rejects argument types it has no kernel for).
func (b *binder) call(pos Pos, display, name string, args ...bound) (bound, error) {
	kargs := make([]kernels.Expr, len(args))
	types := make([]arrow.DataType, len(args))
	for i, a := range args {
		// Literal arguments are typed as constants: some functions need
		// them (a LIKE escape, ROUND's digits on a DECIMAL, a unit).
		kargs[i] = kernels.ColRef(i, a.typ, "")
		if l := a.pb.GetLiteral(); l != nil {
			if k, err := substrait.LiteralExpr(l); err == nil {
				kargs[i] = k
			}
		}
		types[i] = a.typ
	}
	k, err := b.funcs.Call(name, kargs)
	if err != nil {
		return bound{}, b.errf(pos, "%s: %v", display, err)
	}
	urn, ok := funcURN[name]
	if !ok {
		urn = substrait.URNClink
	}
	out, err := substrait.TypeOf(k.Type())
	if err != nil {
		return bound{}, b.errf(pos, "%s: %v", display, err)
	}
	anchor := b.sb.Func(urn, compound(name, types))
	pbs := make([]*pb.Expression, len(args))
	for i, a := range args {
		pbs[i] = a.pb
	}
	return bound{pb: substrait.Call(anchor, out, pbs...), typ: k.Type(), col: -1}, nil
}

func numericRank(t arrow.DataType) int {
	switch t.ID() {
	case arrow.INT8:
		return 1
	case arrow.INT16:
		return 2
	case arrow.INT32:
		return 3
	case arrow.INT64:
		return 4
	case arrow.FLOAT32:
		return 5
	case arrow.FLOAT64:
		return 6
	}
	return 0
}

// common is the type two operands are compared or combined in.
func common(a, b arrow.DataType) (arrow.DataType, bool) {
	if arrow.TypeEqual(a, b) {
		return a, true
	}
	if a.ID() == arrow.NULL {
		return b, true
	}
	if b.ID() == arrow.NULL {
		return a, true
	}
	ra, rb := numericRank(a), numericRank(b)
	if ra == 0 || rb == 0 {
		return nil, false
	}
	if ra >= rb {
		return a, true
	}
	return b, true
}

// cast converts e to t (no-op when equal; a NULL literal becomes typed).
func (b *binder) cast(e bound, t arrow.DataType) bound {
	if arrow.TypeEqual(e.typ, t) {
		return e
	}
	pt, _ := substrait.TypeOf(t)
	if e.typ.ID() == arrow.NULL {
		return bound{pb: substrait.LitNull(pt), typ: t, col: -1}
	}
	return bound{pb: substrait.Cast(e.pb, pt), typ: t, col: -1}
}

// decimalLit binds an exact decimal literal.
func (b *binder) decimalLit(x *NumberLit) (bound, error) {
	text := strings.TrimPrefix(x.Text, "+")
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimPrefix(text, "-")
	intPart, frac, _ := strings.Cut(text, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	p := len(digits)
	if p < len(frac) {
		p = len(frac)
	}
	if p == 0 {
		p = 1
	}
	if p > 38 {
		return bound{pb: substrait.LitF64(x.Value), typ: arrow.PrimitiveTypes.Float64, col: -1}, nil
	}
	n, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return bound{}, b.errf(x.Pos, "invalid decimal literal %s", x.Text)
	}
	if neg {
		n.Neg(n)
	}
	num := decimal128.FromBigInt(n)
	raw := make([]byte, 16)
	binenc.LittleEndian.PutUint64(raw[:8], num.LowBits())
	binenc.LittleEndian.PutUint64(raw[8:], uint64(num.HighBits()))
	t := &arrow.Decimal128Type{Precision: int32(p), Scale: int32(len(frac))}
	return bound{pb: substrait.LitDecimal(raw, t.Precision, t.Scale), typ: t, col: -1}, nil
}

// castNull gives an untyped NULL the type t; other values are unchanged.
func (b *binder) castNull(e bound, t arrow.DataType) bound {
	if e.typ.ID() == arrow.NULL {
		return b.cast(e, t)
	}
	return e
}

// coerce converts e to want where SQL allows it implicitly (numeric
// widening, NULL); ok is false otherwise.
func (b *binder) coerce(e bound, want arrow.DataType) (bound, bool) {
	if arrow.TypeEqual(e.typ, want) || e.typ.ID() == arrow.NULL {
		return b.cast(e, want), true
	}
	rw, re := numericRank(want), numericRank(e.typ)
	if rw > 0 && re > 0 && rw >= re {
		return b.cast(e, want), true
	}
	return e, false
}

var binaryFuncs = map[BinaryOp]string{
	OpConcat: "concat",
	OpAdd:    "add", OpSub: "subtract", OpMul: "multiply", OpDiv: "divide", OpMod: "modulus",
	OpEq: "equal", OpNe: "not_equal", OpLt: "lt", OpLe: "lte", OpGt: "gt", OpGe: "gte",
	OpAnd: "and", OpOr: "or",
}

// expr binds a scalar expression over sc. In the select list of an
// aggregate, b.post maps group keys and aggregate calls to the aggregate's
// output columns.
func (b *binder) expr(e Expr, sc *scope) (bound, error) {
	if b.post != nil {
		if idx, ok := b.post.lookup(e); ok {
			return bound{pb: substrait.FieldRef(idx), typ: sc.cols[idx].typ, col: idx}, nil
		}
	}
	switch x := e.(type) {
	case *ColumnRef:
		if b.post != nil && x.Table == nil && strings.EqualFold(x.Column.Name, "window_time") {
			if end, ok := b.post.subst["window_end"]; ok {
				// Flink's window_time: the last millisecond of the window.
				e := bound{pb: substrait.FieldRef(end), typ: arrow.PrimitiveTypes.Int64, col: end}
				return b.call(x.Pos, "window_time", "subtract", e, bound{pb: substrait.LitI64(1), typ: arrow.PrimitiveTypes.Int64, col: -1})
			}
		}
		if b.post != nil {
			if _, err := b.resolve(x, b.post.in); err == nil {
				return bound{}, b.errf(x.Pos, "column %s must appear in GROUP BY or be used in an aggregate function", x.String())
			}
		}
		idx, err := b.resolve(x, sc)
		if err != nil {
			return bound{}, err
		}
		return bound{pb: substrait.FieldRef(idx), typ: sc.cols[idx].typ, col: idx}, nil
	case *IntLit:
		if x.Value >= math.MinInt32 && x.Value <= math.MaxInt32 {
			return bound{pb: substrait.LitI32(int32(x.Value)), typ: arrow.PrimitiveTypes.Int32, col: -1}, nil
		}
		return bound{pb: substrait.LitI64(x.Value), typ: arrow.PrimitiveTypes.Int64, col: -1}, nil
	case *NumberLit:
		if x.Exponent {
			return bound{pb: substrait.LitF64(x.Value), typ: arrow.PrimitiveTypes.Float64, col: -1}, nil
		}
		// 1.50 is an exact DECIMAL(3, 2), as in Flink.
		return b.decimalLit(x)
	case *StringLit:
		return bound{pb: substrait.LitString(x.Value), typ: arrow.BinaryTypes.String, col: -1}, nil
	case *BoolLit:
		return bound{pb: substrait.LitBool(x.Value), typ: arrow.FixedWidthTypes.Boolean, col: -1}, nil
	case *NullLit:
		return bound{pb: nil, typ: arrow.Null, col: -1}, nil
	case *IntervalLit:
		return bound{pb: substrait.LitI64(x.Duration.Milliseconds()), typ: arrow.PrimitiveTypes.Int64, col: -1}, nil
	case *BinaryExpr:
		name, ok := binaryFuncs[x.Op]
		if !ok {
			return bound{}, b.errf(x.OpPos, "operator %s is not supported yet", x.Op)
		}
		l, err := b.expr(x.Left, sc)
		if err != nil {
			return bound{}, err
		}
		r, err := b.expr(x.Right, sc)
		if err != nil {
			return bound{}, err
		}
		switch x.Op {
		case OpAnd, OpOr:
			for _, o := range []struct {
				v bound
				e Expr
			}{{l, x.Left}, {r, x.Right}} {
				if o.v.typ.ID() != arrow.BOOL && o.v.typ.ID() != arrow.NULL {
					return bound{}, b.errf(o.e.Position(), "%s needs BOOLEAN operands, not %s", x.Op, kernels.SQLTypeName(o.v.typ))
				}
			}
			return b.call(x.OpPos, string(x.Op), name, b.cast(l, arrow.FixedWidthTypes.Boolean), b.cast(r, arrow.FixedWidthTypes.Boolean))
		}
		if x.Op == OpConcat {
			return b.call(x.OpPos, "||", "concat", b.castNull(l, arrow.BinaryTypes.String), b.castNull(r, arrow.BinaryTypes.String))
		}
		if (x.Op == OpAdd || x.Op == OpSub) && l.typ.ID() == arrow.TIMESTAMP && numericRank(r.typ) > 0 && numericRank(r.typ) <= 4 {
			// TIMESTAMP ± INTERVAL (milliseconds).
			return b.call(x.OpPos, string(x.Op), name, l, b.cast(r, arrow.PrimitiveTypes.Int64))
		}
		if l.typ.ID() == arrow.DECIMAL128 || r.typ.ID() == arrow.DECIMAL128 {
			// DECIMAL with DECIMAL or an integer keeps exact decimal rules
			// (the kernels derive precision and scale, as Flink does); with
			// a floating type it is DOUBLE.
			fl := func(v bound) bool { return v.typ.ID() == arrow.FLOAT32 || v.typ.ID() == arrow.FLOAT64 }
			if fl(l) || fl(r) {
				return b.call(x.OpPos, string(x.Op), name, b.cast(l, arrow.PrimitiveTypes.Float64), b.cast(r, arrow.PrimitiveTypes.Float64))
			}
			return b.call(x.OpPos, string(x.Op), name, b.castNull(l, r.typ), b.castNull(r, l.typ))
		}
		t, ok := common(l.typ, r.typ)
		if !ok {
			return bound{}, b.errf(x.OpPos, "operator %s cannot combine %s and %s", x.Op, kernels.SQLTypeName(l.typ), kernels.SQLTypeName(r.typ))
		}
		if t.ID() == arrow.NULL {
			return bound{}, b.errf(x.OpPos, "operator %s has only NULL operands: CAST one of them to a type", x.Op)
		}
		return b.call(x.OpPos, string(x.Op), name, b.cast(l, t), b.cast(r, t))
	case *UnaryExpr:
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		switch x.Op {
		case OpPlus:
			if numericRank(v.typ) == 0 {
				return bound{}, b.errf(x.Pos, "unary + needs a number, not %s", kernels.SQLTypeName(v.typ))
			}
			return v, nil
		case OpNeg:
			return b.call(x.Pos, "-", "negate", v)
		case OpNot:
			if v.typ.ID() == arrow.NULL {
				v = b.cast(v, arrow.FixedWidthTypes.Boolean)
			}
			return b.call(x.Pos, "NOT", "not", v)
		}
	case *IsExpr:
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		if v.typ.ID() == arrow.NULL {
			v = b.cast(v, arrow.FixedWidthTypes.Boolean)
		}
		name := map[IsKind]string{IsNull: "is_null", IsTrue: "is_true", IsFalse: "is_false"}[x.Kind]
		if x.Not {
			name = map[IsKind]string{IsNull: "is_not_null", IsTrue: "is_not_true", IsFalse: "is_not_false"}[x.Kind]
		}
		return b.call(x.OpPos, "IS", name, v)
	case *BetweenExpr:
		// Inclusive, as in SQL: x >= low AND x <= high.
		var cond Expr = &BinaryExpr{Op: OpAnd, Pos: x.Pos, OpPos: x.OpPos,
			Left:  &BinaryExpr{Op: OpGe, Left: x.X, Right: x.Low, Pos: x.Pos, OpPos: x.OpPos},
			Right: &BinaryExpr{Op: OpLe, Left: x.X, Right: x.High, Pos: x.Pos, OpPos: x.OpPos}}
		if x.Not {
			cond = &UnaryExpr{Op: OpNot, X: cond, Pos: x.OpPos}
		}
		return b.expr(cond, sc)
	case *CastExpr:
		if x.Try {
			return bound{}, b.errf(x.Pos, "TRY_CAST is not supported yet")
		}
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		t, err := b.sqlType(x.Type)
		if err != nil {
			return bound{}, err
		}
		if v.typ.ID() == arrow.NULL {
			return b.cast(v, t), nil
		}
		if _, err := kernels.Cast(kernels.ColRef(0, v.typ, ""), t); err != nil {
			return bound{}, b.errf(x.Pos, "CAST: %v", err)
		}
		return b.cast(v, t), nil
	case *CaseExpr:
		return b.caseExpr(x, sc)
	case *InExpr:
		return b.inExpr(x, sc)
	case *LikeExpr:
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		p, err := b.expr(x.Pattern, sc)
		if err != nil {
			return bound{}, err
		}
		args := []bound{b.castNull(v, arrow.BinaryTypes.String), b.castNull(p, arrow.BinaryTypes.String)}
		if x.Escape != nil {
			e, err := b.expr(x.Escape, sc)
			if err != nil {
				return bound{}, err
			}
			args = append(args, b.castNull(e, arrow.BinaryTypes.String))
		}
		res, err := b.call(x.OpPos, "LIKE", "like", args...)
		if err != nil || !x.Not {
			return res, err
		}
		return b.call(x.OpPos, "NOT LIKE", "not", res)
	case *ExtractExpr:
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		return b.call(x.Pos, "EXTRACT", "extract", bound{pb: substrait.LitString(x.Unit), typ: arrow.BinaryTypes.String, col: -1}, v)
	case *TrimExpr:
		v, err := b.expr(x.X, sc)
		if err != nil {
			return bound{}, err
		}
		name := map[string]string{"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[x.Mode]
		if name == "" {
			name = "trim"
		}
		args := []bound{v}
		if x.Chars != nil {
			c, err := b.expr(x.Chars, sc)
			if err != nil {
				return bound{}, err
			}
			args = append(args, c)
		}
		return b.call(x.Pos, "TRIM", name, args...)
	case *TypedLit:
		t, err := b.sqlType(x.Type)
		if err != nil {
			return bound{}, err
		}
		if _, err := kernels.Cast(kernels.ColRef(0, arrow.BinaryTypes.String, ""), t); err != nil {
			return bound{}, b.errf(x.Pos, "%s literals are not supported: %v", x.Type.Base, err)
		}
		return b.cast(bound{pb: substrait.LitString(x.Value), typ: arrow.BinaryTypes.String, col: -1}, t), nil
	case *FuncCall:
		if isAggregate(x) {
			return bound{}, b.errf(x.Pos, "aggregate function %s is not allowed here", x.Name)
		}
		if _, ok := windowKinds[x.Name]; ok {
			return bound{}, b.errf(x.Pos, "window function %s belongs in GROUP BY", x.Name)
		}
		if x.Over != nil {
			return bound{}, b.errf(x.Pos, "OVER windows are not supported yet")
		}
		name, ok := sqlFuncs[x.Name]
		if x.Quoted {
			ok = false
		}
		if !ok {
			return bound{}, b.errf(x.Pos, "function %s is not supported (see docs/sql.md for the list)", x.Name)
		}
		if _, ok := b.funcs.Lookup(name); !ok {
			return bound{}, b.errf(x.Pos, "function %s is not supported", x.Name)
		}
		if name == "strpos" && len(x.Args) == 2 {
			// POSITION(sub IN s) = strpos(s, sub)
			x = &FuncCall{Name: x.Name, Args: []Expr{x.Args[1], x.Args[0]}, Pos: x.Pos}
		}
		args := make([]bound, len(x.Args))
		for i, a := range x.Args {
			v, err := b.expr(a, sc)
			if err != nil {
				return bound{}, err
			}
			args[i] = v
		}
		if name == "coalesce" && len(args) > 0 {
			t := args[0].typ
			for _, a := range args[1:] {
				var ok bool
				if t, ok = common(t, a.typ); !ok {
					return bound{}, b.errf(x.Pos, "COALESCE arguments have incompatible types")
				}
			}
			for i := range args {
				args[i] = b.cast(args[i], t)
			}
		}
		return b.call(x.Pos, x.Name, name, args...)
	}
	return bound{}, b.errf(e.Position(), "%s is not supported yet", describeExpr(e))
}

func describeExpr(e Expr) string {
	switch e.(type) {
	case *CaseExpr:
		return "CASE"
	case *BetweenExpr:
		return "BETWEEN"
	case *InExpr:
		return "IN"
	case *LikeExpr:
		return "LIKE"
	case *ExtractExpr:
		return "EXTRACT"
	case *TrimExpr:
		return "TRIM"
	case *SubqueryExpr:
		return "a scalar subquery"
	case *ExistsExpr:
		return "EXISTS"
	case *TypedLit:
		return "a typed literal"
	}
	return e.String()
}

var aggregateNames = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true}

func isAggregate(f *FuncCall) bool { return !f.Quoted && aggregateNames[f.Name] && f.Over == nil }

// hasAggregate reports whether e contains an aggregate call.
func hasAggregate(e Expr) bool {
	found := false
	visitExpr(e, func(x Expr) {
		if f, ok := x.(*FuncCall); ok && isAggregate(f) {
			found = true
		}
	})
	return found
}

// visitExpr visits e and its sub-expressions (not subqueries).
func visitExpr(e Expr, fn func(Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch x := e.(type) {
	case *BinaryExpr:
		visitExpr(x.Left, fn)
		visitExpr(x.Right, fn)
	case *UnaryExpr:
		visitExpr(x.X, fn)
	case *IsExpr:
		visitExpr(x.X, fn)
	case *BetweenExpr:
		visitExpr(x.X, fn)
		visitExpr(x.Low, fn)
		visitExpr(x.High, fn)
	case *InExpr:
		visitExpr(x.X, fn)
		for _, a := range x.List {
			visitExpr(a, fn)
		}
	case *LikeExpr:
		visitExpr(x.X, fn)
		visitExpr(x.Pattern, fn)
	case *FuncCall:
		for _, a := range x.Args {
			visitExpr(a, fn)
		}
		visitExpr(x.Filter, fn)
	case *CastExpr:
		visitExpr(x.X, fn)
	case *CaseExpr:
		visitExpr(x.Operand, fn)
		for _, w := range x.Whens {
			visitExpr(w.Cond, fn)
			visitExpr(w.Result, fn)
		}
		visitExpr(x.Else, fn)
	}
}

// caseExpr binds CASE as a Substrait IfThen. CASE x WHEN v THEN ... is
// CASE WHEN x = v THEN .... The result type is the THEN/ELSE values'
// common type.
func (b *binder) caseExpr(x *CaseExpr, sc *scope) (bound, error) {
	var operand bound
	if x.Operand != nil {
		var err error
		if operand, err = b.expr(x.Operand, sc); err != nil {
			return bound{}, err
		}
	}
	var conds, results []bound
	var t arrow.DataType = arrow.Null
	for _, w := range x.Whens {
		var c bound
		var err error
		if x.Operand != nil {
			v, err := b.expr(w.Cond, sc)
			if err != nil {
				return bound{}, err
			}
			ct, ok := common(operand.typ, v.typ)
			if !ok {
				return bound{}, b.errf(w.Cond.Position(), "CASE cannot compare %s with %s", kernels.SQLTypeName(operand.typ), kernels.SQLTypeName(v.typ))
			}
			if c, err = b.call(w.Pos, "CASE", "equal", b.cast(operand, ct), b.cast(v, ct)); err != nil {
				return bound{}, err
			}
		} else if c, err = b.expr(w.Cond, sc); err != nil {
			return bound{}, err
		}
		if c.typ.ID() != arrow.BOOL && c.typ.ID() != arrow.NULL {
			return bound{}, b.errf(w.Cond.Position(), "WHEN needs a BOOLEAN condition, not %s", kernels.SQLTypeName(c.typ))
		}
		r, err := b.expr(w.Result, sc)
		if err != nil {
			return bound{}, err
		}
		var ok bool
		if t, ok = common(t, r.typ); !ok {
			return bound{}, b.errf(w.Result.Position(), "CASE results mix %s and %s", kernels.SQLTypeName(t), kernels.SQLTypeName(r.typ))
		}
		conds, results = append(conds, b.castNull(c, arrow.FixedWidthTypes.Boolean)), append(results, r)
	}
	els := bound{typ: arrow.Null, col: -1}
	if x.Else != nil {
		var err error
		if els, err = b.expr(x.Else, sc); err != nil {
			return bound{}, err
		}
		var ok bool
		if t, ok = common(t, els.typ); !ok {
			return bound{}, b.errf(x.Else.Position(), "CASE results mix %s and %s", kernels.SQLTypeName(t), kernels.SQLTypeName(els.typ))
		}
	}
	if t.ID() == arrow.NULL {
		return bound{}, b.errf(x.Pos, "CASE has only NULL results: CAST one of them to a type")
	}
	ifs := make([]*pb.Expression_IfThen_IfClause, len(conds))
	for i := range conds {
		ifs[i] = &pb.Expression_IfThen_IfClause{If: conds[i].pb, Then: b.cast(results[i], t).pb}
	}
	e := &pb.Expression{RexType: &pb.Expression_IfThen_{IfThen: &pb.Expression_IfThen{Ifs: ifs, Else: b.cast(els, t).pb}}}
	return bound{pb: e, typ: t, col: -1}, nil
}

// inExpr binds x [NOT] IN (list) as a Substrait SingularOrList.
func (b *binder) inExpr(x *InExpr, sc *scope) (bound, error) {
	if x.Query != nil {
		return bound{}, b.errf(x.OpPos, "IN (subquery) is not supported yet")
	}
	v, err := b.expr(x.X, sc)
	if err != nil {
		return bound{}, err
	}
	t := v.typ
	items := make([]bound, len(x.List))
	for i, it := range x.List {
		if items[i], err = b.expr(it, sc); err != nil {
			return bound{}, err
		}
		var ok bool
		if t, ok = common(t, items[i].typ); !ok {
			return bound{}, b.errf(it.Position(), "IN list mixes %s and %s", kernels.SQLTypeName(v.typ), kernels.SQLTypeName(items[i].typ))
		}
	}
	if t.ID() == arrow.NULL {
		return bound{}, b.errf(x.OpPos, "IN with only NULLs: CAST one of them to a type")
	}
	opts := make([]*pb.Expression, len(items))
	for i, it := range items {
		opts[i] = b.cast(it, t).pb
	}
	e := bound{pb: &pb.Expression{RexType: &pb.Expression_SingularOrList_{SingularOrList: &pb.Expression_SingularOrList{
		Value: b.cast(v, t).pb, Options: opts}}}, typ: arrow.FixedWidthTypes.Boolean, col: -1}
	if x.Not {
		return b.call(x.OpPos, "NOT IN", "not", e)
	}
	return e, nil
}
