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
	Aliases []string // other names that find it (mod for modulus)
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

// Register adds f under its name and aliases. Names are case-insensitive;
// registering a name twice is an error.
func (r *Registry) Register(f *Function) error {
	if f.Bind == nil {
		return fmt.Errorf("function %s has no Bind", f.Name)
	}
	names := append([]string{f.Name}, f.Aliases...)
	for _, n := range names {
		if _, dup := r.funcs[strings.ToLower(n)]; dup {
			return fmt.Errorf("function %s registered twice", n)
		}
	}
	for _, n := range names {
		r.funcs[strings.ToLower(n)] = f
	}
	return nil
}

// Lookup finds a function by name or alias; a Substrait compound name
// ("add:i64_i64") finds its base function. The Function's Name is the
// canonical (Substrait) name.
func (r *Registry) Lookup(name string) (*Function, bool) {
	key := strings.ToLower(name)
	if i := strings.IndexByte(key, ':'); i >= 0 {
		key = key[:i]
	}
	f, ok := r.funcs[key]
	return f, ok
}

// Names lists the registered functions by canonical name, sorted (aliases
// are not listed).
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.funcs))
	for key, f := range r.funcs {
		if key == strings.ToLower(f.Name) {
			out = append(out, f.Name)
		}
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
			Doc: "a + b. Integer operands give the wider integer type and wrap on overflow; FLOAT with an integer or FLOAT gives FLOAT; anything with DOUBLE gives DOUBLE. " +
				"DECIMAL (with DECIMAL or an integer) is exact, DECIMAL(max(p1-s1, p2-s2) + max(s1, s2) + 1, max(s1, s2)) capped at 38 digits as Flink; DECIMAL with FLOAT/DOUBLE gives DOUBLE. " +
				"TIMESTAMP(3) + integer milliseconds (an INTERVAL) gives TIMESTAMP(3)."},
		{Name: "subtract", MinArgs: 2, MaxArgs: 2, Bind: bindArith("subtract", scSub),
			Doc: "a - b. Types as add (TIMESTAMP(3) - integer milliseconds too)."},
		{Name: "multiply", MinArgs: 2, MaxArgs: 2, Bind: bindArith("multiply", scMul),
			Doc: "a * b. Types as add; DECIMAL: DECIMAL(p1+p2+1, s1+s2), capped at 38 digits keeping at least 6 fractional ones, rounded half up."},
		{Name: "divide", MinArgs: 2, MaxArgs: 2, Bind: bindArith("divide", scDiv),
			Doc: "a / b. Types as add. Integer division truncates toward zero and fails on a zero divisor; floating division by zero gives ±Infinity or NaN. " +
				"DECIMAL: scale max(6, s1+p2+1), precision p1-s1+s2+scale, capped at 38 as Flink, rounded half up; division by zero fails."},
		{Name: "modulus", Aliases: []string{"mod"}, MinArgs: 2, MaxArgs: 2, Bind: bindArith("modulus", scMod),
			Doc: "a % b, with the sign of the dividend. Types as add. Integer or DECIMAL modulus by zero fails; floating modulus by zero gives NaN."},
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
		{Name: "nullif", MinArgs: 2, MaxArgs: 2, Bind: bindNullif,
			Doc: "NULL if a = b, else a; a's type."},
		{Name: "between", MinArgs: 3, MaxArgs: 3, Bind: bindBetween,
			Doc: "x >= lo AND x <= hi (inclusive)."},

		// Strings (VARCHAR; characters are code points).
		{Name: "like", MinArgs: 2, MaxArgs: 3, Bind: bindLike,
			Doc: "like(s, pattern [, escape]): '%' any characters, '_' one; case-sensitive. The escape (a constant character) makes the next %, _ or escape literal."},
		{Name: "upper", MinArgs: 1, MaxArgs: 1, Bind: bindCaseMap("upper", true), Doc: "Upper case (Unicode simple case mapping)."},
		{Name: "lower", MinArgs: 1, MaxArgs: 1, Bind: bindCaseMap("lower", false), Doc: "Lower case (Unicode simple case mapping)."},
		{Name: "char_length", Aliases: []string{"character_length"}, MinArgs: 1, MaxArgs: 1, Bind: bindCharLength,
			Doc: "Number of characters, INT."},
		{Name: "substring", Aliases: []string{"substr"}, MinArgs: 2, MaxArgs: 3, Bind: bindSubstring,
			Doc: "substring(s, pos [, len]) as Flink: pos counts from 1, a negative pos from the end, 0 is 1; a negative len gives NULL."},
		{Name: "trim", MinArgs: 1, MaxArgs: 2, Bind: bindTrim("trim", true, true),
			Doc: "trim(s [, characters]): remove every character in characters (default ' ') from both ends."},
		{Name: "ltrim", MinArgs: 1, MaxArgs: 2, Bind: bindTrim("ltrim", true, false), Doc: "As trim, from the start only (TRIM(LEADING ...))."},
		{Name: "rtrim", MinArgs: 1, MaxArgs: 2, Bind: bindTrim("rtrim", false, true), Doc: "As trim, from the end only (TRIM(TRAILING ...))."},
		{Name: "concat", MinArgs: 1, MaxArgs: -1, Bind: bindConcat,
			Doc: "concat(s1, ..., sn) and ||: NULL if any operand is NULL (Flink)."},
		{Name: "replace", MinArgs: 3, MaxArgs: 3, Bind: bindReplace,
			Doc: "replace(s, from, to): every occurrence of from replaced by to; an empty from changes nothing."},
		{Name: "strpos", MinArgs: 2, MaxArgs: 2, Bind: bindStrpos,
			Doc: "strpos(s, sub) = POSITION(sub IN s): 1-based character position of sub in s, 0 if absent, 1 for an empty sub. INT."},
		{Name: "split_part", MinArgs: 3, MaxArgs: 3, Bind: bindSplitPart,
			Doc: "split_part(s, delimiter, n) as PostgreSQL: field n (1-based, negative from the end); '' if there is none; n = 0 fails."},
		{Name: "regexp_extract", MinArgs: 2, MaxArgs: 3, Bind: bindRegexpExtract,
			Doc: "regexp_extract(s, regex [, group]) as Flink: group (default 0, the whole match) of the first match of regex in s; NULL if there is no match, the group did not take part in it, or a group index from a column is out of range. " +
				"regex is Go RE2 syntax (no backreferences or lookaround); a constant regex is compiled once and checked at planning, as a constant group against its groups."},
		{Name: "regexp", MinArgs: 2, MaxArgs: 2, Bind: bindRegexp,
			Doc: "regexp(s, regex) → BOOLEAN as Flink: TRUE if some (possibly empty) substring of s matches regex (Go RE2 syntax)."},

		// Math.
		{Name: "abs", MinArgs: 1, MaxArgs: 1, Bind: bindAbs, Doc: "|x|, same type (integers wrap at the minimum, as Java)."},
		{Name: "floor", MinArgs: 1, MaxArgs: 1, Bind: bindFloorCeil("floor", false),
			Doc: "Largest integral value <= x: integers unchanged, floats keep their type, DECIMAL(p, s) gives DECIMAL(p, 0)."},
		{Name: "ceil", Aliases: []string{"ceiling"}, MinArgs: 1, MaxArgs: 1, Bind: bindFloorCeil("ceil", true),
			Doc: "Smallest integral value >= x; types as floor."},
		{Name: "round", MinArgs: 1, MaxArgs: 2, Bind: bindRound,
			Doc: "round(x [, d]): half away from zero to d places (default 0, negative rounds left of the point); floats round their shortest decimal form (round(2.675, 2) = 2.68). " +
				"Same type, except DECIMAL(p, s) with d < s: DECIMAL(1+p-s+d, d), or DECIMAL(min(38, 1+p-s), 0) for d < 0; d must then be a constant."},
		{Name: "power", MinArgs: 2, MaxArgs: 2, Bind: bindPower, Doc: "x to the power y, DOUBLE (Java Math.pow)."},
		{Name: "sqrt", MinArgs: 1, MaxArgs: 1, Bind: bindSqrt, Doc: "Square root, DOUBLE; NaN for a negative x."},

		// Time (TIMESTAMP(3): epoch ms, UTC).
		{Name: "extract", MinArgs: 2, MaxArgs: 2, Bind: bindTimeUnitFunc("extract", false),
			Doc: "extract(unit, ts) → BIGINT; unit a VARCHAR: " + scExtractUnits + ". WEEK is the ISO week, DAYOFWEEK 1 = Sunday .. 7, ISODOW 1 = Monday .. 7, MILLISECOND 0..999, EPOCH whole seconds (floor)."},
		{Name: "date_trunc", MinArgs: 2, MaxArgs: 2, Bind: bindTimeUnitFunc("date_trunc", true),
			Doc: "date_trunc(unit, ts) → TIMESTAMP(3), the start of ts's unit: " + scTruncUnits + " (WEEK starts on Monday)."},
		{Name: "to_timestamp", MinArgs: 1, MaxArgs: 2, Bind: bindToTimestamp,
			Doc: "to_timestamp(s [, format]) → TIMESTAMP(3): s read as UTC with a Java-style format (yyyy MM dd HH mm ss SSS and literal text), " +
				"by default 'yyyy-MM-dd HH:mm:ss[.SSS]' (also 'T', a date alone, HH:mm). Text that does not match gives NULL (Flink)."},
		{Name: "date_format", MinArgs: 2, MaxArgs: 2, Bind: bindDateFormat,
			Doc: "date_format(ts, format) → VARCHAR: ts (TIMESTAMP(3), or VARCHAR read as CAST to TIMESTAMP(3); NULL if it does not parse) formatted with a Java pattern as Flink's DateTimeFormatter: " +
				"y M d D E a H h K k m s S (S.. fraction digits), 'quoted text'; English names; UTC."},
		{Name: "to_timestamp_ltz", MinArgs: 1, MaxArgs: 2, Bind: bindToTimestampLtz,
			Doc: "to_timestamp_ltz(epoch [, precision]): an integer epoch in seconds (precision 0) or milliseconds (3, the default) as TIMESTAMP(3), UTC."},
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

// scCommonType is the type two operands combine in: scCommonKind's for
// the built-in kinds (a timestamp keeps its own type); with a DECIMAL,
// Flink's rules: DECIMAL and DECIMAL or an integer (as DECIMAL(3|5|10|19,
// 0)) give scDecCommonType, DECIMAL and FLOAT or DOUBLE give DOUBLE.
func scCommonType(a, b arrow.DataType) (arrow.DataType, bool) {
	ka, kb := scKindOf(a), scKindOf(b)
	if ka == skDecimal || kb == skDecimal {
		switch {
		case ka == skNull:
			return b, true
		case kb == skNull:
			return a, true
		case ka.isFloat() || kb.isFloat():
			return scTypeOf(skFloat64), true
		case ka.isInt():
			a = scDecOfInt(ka)
		case kb.isInt():
			b = scDecOfInt(kb)
		case ka != kb:
			return nil, false
		}
		p1, s1 := scDecPS(a)
		p2, s2 := scDecPS(b)
		return scDecCommonType(p1, s1, p2, s2), true
	}
	k, ok := scCommonKind(ka, kb)
	switch {
	case !ok:
		return nil, false
	case k == ka:
		return a, true
	case k == kb:
		return b, true
	}
	return scTypeOf(k), true
}

// scCommonTypes folds scCommonType over the operands' types (NULL if all
// are untyped NULLs).
func scCommonTypes(args []Expr) (arrow.DataType, bool) {
	var t arrow.DataType = arrow.Null
	for _, a := range args {
		var ok bool
		if t, ok = scCommonType(t, a.Type()); !ok {
			return nil, false
		}
	}
	return t, true
}

// scCoerceTo converts e to type t (see scCoerce).
func scCoerceTo(e Expr, t arrow.DataType) (Expr, error) {
	return scCoerce(e, scKindOf(t), t)
}

// scBindStrict is a strict function's binding: NULL if an operand is the
// NULL literal, else the kernel.
func scBindStrict(name string, t arrow.DataType, args []Expr, fails bool, kern func(c *scCall) (arrow.Array, error)) (Expr, error) {
	for _, a := range args {
		if scIsNullLiteral(a) {
			return Literal(nil, t)
		}
	}
	return newScFunc(name, t, args, fails, kern), nil
}

// scCoerce converts e to kind k (type t): unchanged if it already has that
// kind (for DECIMAL: that precision and scale), a typed NULL literal for an
// untyped NULL, else an implicit cast.
func scCoerce(e Expr, k scKind, t arrow.DataType) (Expr, error) {
	if scKindOf(e.Type()) == k && (k != skDecimal || arrow.TypeEqual(e.Type(), t)) {
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
