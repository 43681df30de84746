package kernels

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Function is a scalar SQL function: its Substrait name, arity and
// documentation, separate from the typed kernels that Bind picks for the
// operand types.
type Function struct {
	Name    string
	MinArgs int
	MaxArgs int // -1: variadic
	Doc     string
	// Bind type-checks args, inserts the implicit casts and returns the
	// compiled expression. Errors name the function and the SQL types.
	Bind func(args []Expr) (Expr, error)
}

// Registry maps function names to functions. It is filled by explicit
// Register calls (RegisterScalar for the built-ins), never by init.
// A filled registry is read-only and safe for concurrent Call.
type Registry struct {
	funcs map[string]*Function
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{funcs: map[string]*Function{}} }

// Register adds f. Names are case-insensitive; registering a name twice is
// an error.
func (r *Registry) Register(f *Function) error {
	key := strings.ToLower(f.Name)
	if f.Bind == nil {
		return fmt.Errorf("function %s has no Bind", f.Name)
	}
	if _, dup := r.funcs[key]; dup {
		return fmt.Errorf("function %s registered twice", f.Name)
	}
	r.funcs[key] = f
	return nil
}

// Lookup finds a function by name; a Substrait compound name
// ("add:i64_i64") finds its base function.
func (r *Registry) Lookup(name string) (*Function, bool) {
	key := strings.ToLower(name)
	if i := strings.IndexByte(key, ':'); i >= 0 {
		key = key[:i]
	}
	f, ok := r.funcs[key]
	return f, ok
}

// Names lists the registered functions, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.funcs))
	for _, f := range r.funcs {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// Call resolves the overload of name for args, inserting implicit numeric
// promotions and typing untyped NULLs, and returns the compiled expression.
// A call whose operands are all literals is evaluated once, here.
func (r *Registry) Call(name string, args []Expr) (Expr, error) {
	f, ok := r.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown function %s", name)
	}
	if len(args) < f.MinArgs || (f.MaxArgs >= 0 && len(args) > f.MaxArgs) {
		return nil, fmt.Errorf("function %s: %d arguments, expects %s", f.Name, len(args), scArity(f))
	}
	allLit := true
	for i, a := range args {
		if a == nil {
			return nil, fmt.Errorf("function %s: argument %d is nil", f.Name, i+1)
		}
		if _, ok := a.(*exprLit); !ok {
			allLit = false
		}
	}
	e, err := f.Bind(args)
	if err != nil {
		return nil, err
	}
	if _, isLit := e.(*exprLit); allLit && !isLit {
		e = exprFold(e)
	}
	return e, nil
}

func scArity(f *Function) string {
	switch {
	case f.MaxArgs < 0:
		return fmt.Sprintf("at least %d", f.MinArgs)
	case f.MinArgs == f.MaxArgs:
		return fmt.Sprintf("%d", f.MinArgs)
	}
	return fmt.Sprintf("%d to %d", f.MinArgs, f.MaxArgs)
}

// RegisterScalar registers the built-in scalar functions (Substrait names).
func RegisterScalar(r *Registry) {
	fns := []*Function{
		{Name: "add", MinArgs: 2, MaxArgs: 2, Bind: bindArith("add", scAdd),
			Doc: "a + b. Integer operands give the wider integer type and wrap on overflow; FLOAT with an integer or FLOAT gives FLOAT; anything with DOUBLE gives DOUBLE."},
		{Name: "subtract", MinArgs: 2, MaxArgs: 2, Bind: bindArith("subtract", scSub),
			Doc: "a - b. Types as add."},
		{Name: "multiply", MinArgs: 2, MaxArgs: 2, Bind: bindArith("multiply", scMul),
			Doc: "a * b. Types as add."},
		{Name: "divide", MinArgs: 2, MaxArgs: 2, Bind: bindArith("divide", scDiv),
			Doc: "a / b. Types as add. Integer division truncates toward zero and fails on a zero divisor; floating division by zero gives ±Infinity or NaN."},
		{Name: "modulus", MinArgs: 2, MaxArgs: 2, Bind: bindArith("modulus", scMod),
			Doc: "a % b, with the sign of the dividend. Types as add. Integer modulus by zero fails; floating modulus by zero gives NaN."},
		{Name: "negate", MinArgs: 1, MaxArgs: 1, Bind: bindNegate,
			Doc: "-a, same numeric type; integers wrap (-MIN = MIN)."},
		{Name: "equal", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("equal", scEq),
			Doc: "a = b. Numbers compare in their common type, strings by bytes, booleans FALSE < TRUE, timestamps with timestamps."},
		{Name: "not_equal", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("not_equal", scNe), Doc: "a <> b. Types as equal."},
		{Name: "lt", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("lt", scLt), Doc: "a < b. Types as equal."},
		{Name: "lte", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("lte", scLte), Doc: "a <= b. Types as equal."},
		{Name: "gt", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("gt", scGt), Doc: "a > b. Types as equal."},
		{Name: "gte", MinArgs: 2, MaxArgs: 2, Bind: bindCompare("gte", scGte), Doc: "a >= b. Types as equal."},
		{Name: "and", MinArgs: 1, MaxArgs: -1, Bind: bindLogic("and", true),
			Doc: "Three-valued AND of BOOLEANs: FALSE AND NULL is FALSE. Operands that may fail are evaluated only where the result is not yet FALSE."},
		{Name: "or", MinArgs: 1, MaxArgs: -1, Bind: bindLogic("or", false),
			Doc: "Three-valued OR of BOOLEANs: TRUE OR NULL is TRUE. Operands that may fail are evaluated only where the result is not yet TRUE."},
		{Name: "not", MinArgs: 1, MaxArgs: 1, Bind: bindNot, Doc: "NOT a; NOT NULL is NULL."},
		{Name: "is_null", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_null", scIsNull), Doc: "a IS NULL, any type; never NULL."},
		{Name: "is_not_null", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_not_null", scIsNotNull), Doc: "a IS NOT NULL, any type; never NULL."},
		{Name: "is_true", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_true", scIsTrue), Doc: "a IS TRUE, BOOLEAN; never NULL."},
		{Name: "is_false", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_false", scIsFalse), Doc: "a IS FALSE, BOOLEAN; never NULL."},
		{Name: "is_not_true", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_not_true", scIsNotTrue), Doc: "a IS NOT TRUE, BOOLEAN; never NULL."},
		{Name: "is_not_false", MinArgs: 1, MaxArgs: 1, Bind: bindIs("is_not_false", scIsNotFalse), Doc: "a IS NOT FALSE, BOOLEAN; never NULL."},
		{Name: "coalesce", MinArgs: 1, MaxArgs: -1, Bind: bindCoalesce,
			Doc: "The first non-NULL operand, in the operands' common type (numbers promote as in add). Later operands are evaluated only for rows still NULL."},
	}
	for _, f := range fns {
		if err := r.Register(f); err != nil {
			panic(err)
		}
	}
}

// scSigError is the error for operand types a function does not accept.
func scSigError(name string, args []Expr) error {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = SQLTypeName(a.Type())
	}
	return fmt.Errorf("function %s does not accept (%s)", name, strings.Join(names, ", "))
}

// scCommonKind is the type two operands are compared or combined in: the
// wider numeric type (DOUBLE > FLOAT > BIGINT > INT > SMALLINT > TINYINT),
// or the shared non-numeric type. An untyped NULL takes the other's type.
func scCommonKind(a, b scKind) (scKind, bool) {
	switch {
	case a == skUnsupported || b == skUnsupported:
		return skUnsupported, false
	case a == skNull:
		return b, true
	case b == skNull:
		return a, true
	case a.isNumeric() && b.isNumeric():
		return max(a, b), true
	case a == b:
		return a, true
	}
	return skUnsupported, false
}

// scCoerce converts e to kind k (type t): unchanged if it already has that
// kind, a typed NULL literal for an untyped NULL, else an implicit cast.
func scCoerce(e Expr, k scKind, t arrow.DataType) (Expr, error) {
	if scKindOf(e.Type()) == k {
		return e, nil
	}
	if scIsNullLiteral(e) {
		return Literal(nil, t)
	}
	return Cast(e, t)
}

// scTypeFor is the result type for kind k given the operands (a timestamp
// keeps the first operand's time zone).
func scTypeFor(k scKind, args ...Expr) arrow.DataType {
	for _, a := range args {
		if scKindOf(a.Type()) == k {
			return a.Type()
		}
	}
	return scTypeOf(k)
}
