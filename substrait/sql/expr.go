package sql

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

func (p *parser) parseExpr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseExprList() ([]Expr, error) {
	var list []Expr
	for {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		list = append(list, e)
		if !p.acceptOp(",") {
			return list, nil
		}
	}
}

// binary makes l op r. Chains of binary operators are parsed in loops,
// not by recursion, but the binder and the planner walk the tree they
// make recursively: maxOperators bounds them per statement, so that a
// hostile megabyte of "a + a + ..." is an error instead of a stack
// overflow that ends the process.
func (p *parser) binary(op BinaryOp, l, r Expr, opPos Pos) (Expr, error) {
	p.ops++
	if p.ops > maxOperators {
		return nil, p.errorf(opPos, "expression too long: more than %d operators in one statement", maxOperators)
	}
	return &BinaryExpr{Op: op, Left: l, Right: r, Pos: l.Position(), OpPos: opPos}, nil
}

func (p *parser) parseOr() (Expr, error) {
	left, err := p.parseAnd()
	for err == nil && p.isKw("OR") {
		op := p.next()
		var right Expr
		if right, err = p.parseAnd(); err == nil {
			left, err = p.binary(OpOr, left, right, op.pos)
		}
	}
	return left, err
}

func (p *parser) parseAnd() (Expr, error) {
	left, err := p.parseNot()
	for err == nil && p.isKw("AND") {
		op := p.next()
		var right Expr
		if right, err = p.parseNot(); err == nil {
			left, err = p.binary(OpAnd, left, right, op.pos)
		}
	}
	return left, err
}

func (p *parser) parseNot() (Expr, error) {
	if !p.isKw("NOT") {
		return p.parseComparison()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	op := p.next()
	x, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	return &UnaryExpr{Op: OpNot, X: x, Pos: op.pos}, nil
}

var comparisonOps = map[string]BinaryOp{
	"=": OpEq, "<>": OpNe, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe,
}

// parseComparison parses comparisons and the predicates that share their
// precedence (IS, BETWEEN, IN, LIKE), left-associatively.
func (p *parser) parseComparison() (Expr, error) {
	left, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if op, ok := comparisonOps[t.text]; ok && t.kind == tokOp {
			p.next()
			right, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			if left, err = p.binary(op, left, right, t.pos); err != nil {
				return nil, err
			}
			continue
		}
		if isKw(t, "IS") {
			if left, err = p.parseIs(left); err != nil {
				return nil, err
			}
			continue
		}
		not := false
		if isKw(t, "NOT") {
			n := p.peekAt(1)
			if !isKw(n, "BETWEEN") && !isKw(n, "IN") && !isKw(n, "LIKE") {
				return left, nil
			}
			p.next()
			not = true
		}
		switch kw := p.peek().kw; {
		case p.peek().kind != tokIdent:
		case kw == "BETWEEN":
			p.next()
			b := &BetweenExpr{X: left, Not: not, Pos: left.Position(), OpPos: t.pos}
			if b.Low, err = p.parseConcat(); err != nil {
				return nil, err
			}
			if _, err := p.expectKw("AND"); err != nil {
				return nil, err
			}
			if b.High, err = p.parseConcat(); err != nil {
				return nil, err
			}
			left = b
			continue
		case kw == "IN":
			p.next()
			if left, err = p.parseIn(left, not, t.pos); err != nil {
				return nil, err
			}
			continue
		case kw == "LIKE":
			p.next()
			l := &LikeExpr{X: left, Not: not, Pos: left.Position(), OpPos: t.pos}
			if l.Pattern, err = p.parseConcat(); err != nil {
				return nil, err
			}
			if p.acceptKw("ESCAPE") {
				if l.Escape, err = p.parseConcat(); err != nil {
					return nil, err
				}
			}
			left = l
			continue
		}
		return left, nil
	}
}

func (p *parser) parseIs(left Expr) (Expr, error) {
	is := p.next()
	not := p.acceptKw("NOT")
	e := &IsExpr{X: left, Not: not, Pos: left.Position(), OpPos: is.pos}
	switch {
	case p.acceptKw("NULL"):
		e.Kind = IsNull
	case p.acceptKw("TRUE"):
		e.Kind = IsTrue
	case p.acceptKw("FALSE"):
		e.Kind = IsFalse
	case p.acceptKw("DISTINCT"):
		if _, err := p.expectKw("FROM"); err != nil {
			return nil, err
		}
		right, err := p.parseConcat()
		if err != nil {
			return nil, err
		}
		op := OpIsDistinctFrom
		if not {
			op = OpIsNotDistinctFrom
		}
		return p.binary(op, left, right, is.pos)
	default:
		return nil, p.errExpected("NULL, TRUE, FALSE or DISTINCT FROM")
	}
	return e, nil
}

func (p *parser) parseIn(left Expr, not bool, opPos Pos) (Expr, error) {
	in := &InExpr{X: left, Not: not, Pos: left.Position(), OpPos: opPos}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var err error
	if startsQuery(p.peek()) {
		in.Query, err = p.parseQuery()
	} else {
		in.List, err = p.parseExprList()
	}
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return in, nil
}

// parseLeftAssoc parses operand (op operand)* for the given operators.
func (p *parser) parseLeftAssoc(operand func() (Expr, error), ops ...BinaryOp) (Expr, error) {
	left, err := operand()
	for err == nil {
		t := p.peek()
		op, ok := BinaryOp(""), false
		for _, o := range ops {
			if isOp(t, string(o)) {
				op, ok = o, true
			}
		}
		if !ok {
			break
		}
		p.next()
		var right Expr
		if right, err = operand(); err == nil {
			left, err = p.binary(op, left, right, t.pos)
		}
	}
	return left, err
}

func (p *parser) parseConcat() (Expr, error) { return p.parseLeftAssoc(p.parseAdditive, OpConcat) }

func (p *parser) parseAdditive() (Expr, error) {
	return p.parseLeftAssoc(p.parseMultiplicative, OpAdd, OpSub)
}

func (p *parser) parseMultiplicative() (Expr, error) {
	return p.parseLeftAssoc(p.parseUnary, OpMul, OpDiv, OpMod)
}

func (p *parser) parseUnary() (Expr, error) {
	t := p.peek()
	if !isOp(t, "-") && !isOp(t, "+") {
		return p.parsePrimary()
	}
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	p.next()
	if n := p.peek(); t.text == "-" && (n.kind == tokInt || n.kind == tokNumber) {
		p.next()
		return p.numericLit(n, "-", t.pos)
	}
	x, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	return &UnaryExpr{Op: UnaryOp(t.text), X: x, Pos: t.pos}, nil
}

// numericLit converts a numeric token; sign is "" or "-" (folded from a
// preceding unary minus at pos).
func (p *parser) numericLit(t token, sign string, pos Pos) (Expr, error) {
	text := sign + t.text
	if t.kind == tokInt {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, p.errorf(pos, "integer literal out of range: %s", text)
		}
		return &IntLit{Value: v, Text: text, Pos: pos}, nil
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, p.errorf(pos, "numeric literal out of range: %s", text)
	}
	exp := strings.ContainsAny(text, "eE")
	return &NumberLit{Value: v, Text: text, Exponent: exp, Pos: pos}, nil
}

func (p *parser) parsePrimary() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tokInt, tokNumber:
		p.next()
		return p.numericLit(t, "", t.pos)
	case tokString:
		p.next()
		return &StringLit{Value: t.val, Pos: t.pos}, nil
	case tokQuoted:
		return p.parseNameExpr()
	case tokOp:
		if t.text != "(" {
			break
		}
		if startsQuery(p.peekAt(1)) {
			p.next()
			q, err := p.parseQuery()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return &SubqueryExpr{Query: q, Pos: t.pos}, nil
		}
		p.next()
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return e, nil
	case tokIdent:
		return p.parseKeywordExpr(t)
	}
	return nil, p.errExpected("expression")
}

// parseKeywordExpr parses a primary expression starting with an unquoted
// word: a keyword form, a special function, a call or a column reference.
func (p *parser) parseKeywordExpr(t token) (Expr, error) {
	callNext := isOp(p.peekAt(1), "(")
	switch t.kw {
	case "TRUE", "FALSE":
		p.next()
		return &BoolLit{Value: t.kw == "TRUE", Pos: t.pos}, nil
	case "NULL":
		p.next()
		return &NullLit{Pos: t.pos}, nil
	case "CASE":
		return p.parseCase()
	case "CAST":
		return p.parseCast(false)
	case "INTERVAL":
		return p.parseInterval()
	case "EXISTS":
		p.next()
		if _, err := p.expectOp("("); err != nil {
			return nil, err
		}
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return &ExistsExpr{Query: q, Pos: t.pos}, nil
	case "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME", "LOCALTIMESTAMP":
		p.next()
		return &FuncCall{Name: t.kw, Pos: t.pos}, nil
	case "TIMESTAMP", "DATE":
		if s := p.peekAt(1); s.kind == tokString {
			p.next()
			p.next()
			return &TypedLit{Type: TypeName{Base: t.kw, Pos: t.pos}, Value: s.val, Pos: t.pos}, nil
		}
	case "TRY_CAST":
		if callNext {
			return p.parseCast(true)
		}
	case "EXTRACT":
		if callNext {
			return p.parseExtract()
		}
	case "POSITION":
		if callNext {
			return p.parsePosition()
		}
	case "SUBSTRING":
		if callNext {
			return p.parseSubstring()
		}
	case "TRIM":
		if callNext {
			return p.parseTrim()
		}
	}
	if reserved[t.kw] {
		return nil, p.errExpected("expression")
	}
	return p.parseNameExpr()
}

// parseNameExpr parses a column reference or a function call.
func (p *parser) parseNameExpr() (Expr, error) {
	name, err := p.parseIdent("expression")
	if err != nil {
		return nil, err
	}
	if p.isOp("(") {
		return p.parseCall(name)
	}
	ref := &ColumnRef{Column: name, Pos: name.Pos}
	if p.acceptOp(".") {
		col, err := p.parseIdent("column name")
		if err != nil {
			return nil, err
		}
		ref.Table, ref.Column = &name, col
		if t := p.peek(); isOp(t, ".") {
			return nil, p.errorf(t.pos, "column reference %s.%s.… has too many parts; use table.column", name, col)
		}
	}
	return ref, nil
}

func (p *parser) parseCall(name Ident) (Expr, error) {
	p.next() // (
	f := &FuncCall{Name: name.Name, Quoted: name.Quoted, Pos: name.Pos}
	if !name.Quoted {
		f.Name = asciiUpper(name.Name)
	}
	switch {
	case p.acceptOp("*"):
		f.Star = true
	case p.isOp(")"):
	default:
		if !p.acceptKw("ALL") {
			f.Distinct = p.acceptKw("DISTINCT")
		}
		var err error
		if f.Args, err = p.parseExprList(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.isKw("FILTER") && isOp(p.peekAt(1), "(") && isKw(p.peekAt(2), "WHERE") {
		// agg(...) FILTER (WHERE cond); FILTER stays usable as a name.
		pos := p.next().pos
		p.next()
		p.next()
		if f.Quoted || !aggregateNames[f.Name] {
			return nil, p.errorf(pos, "FILTER (WHERE ...) applies only to the aggregate functions COUNT, SUM, AVG, MIN and MAX, not %s", f.Name)
		}
		var err error
		if f.Filter, err = p.parseExpr(); err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if t := p.peek(); isKw(t, "OVER") {
			return nil, p.errorf(t.pos, "FILTER (WHERE ...) with OVER is not supported")
		}
	}
	if p.isKw("OVER") {
		var err error
		if f.Over, err = p.parseWindowSpec(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (p *parser) parseWindowSpec() (*WindowSpec, error) {
	w := &WindowSpec{Pos: p.next().pos}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var err error
	if p.acceptKw("PARTITION") {
		if _, err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if w.PartitionBy, err = p.parseExprList(); err != nil {
			return nil, err
		}
	}
	if p.isKw("ORDER") {
		if w.OrderBy, err = p.parseOrderBy(); err != nil {
			return nil, err
		}
	}
	if t := p.peek(); isKw(t, "ROWS") || isKw(t, "RANGE") {
		p.next()
		f := &WindowFrame{Unit: FrameUnit(t.kw), Pos: t.pos}
		between := p.acceptKw("BETWEEN")
		if f.Start, err = p.parseFrameBound(); err != nil {
			return nil, err
		}
		if between {
			if _, err := p.expectKw("AND"); err != nil {
				return nil, err
			}
			if f.End, err = p.parseFrameBound(); err != nil {
				return nil, err
			}
		}
		w.Frame = f
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return w, nil
}

func (p *parser) parseFrameBound() (*FrameBound, error) {
	t := p.peek()
	b := &FrameBound{Pos: t.pos}
	switch {
	case isKw(t, "UNBOUNDED"):
		p.next()
		switch {
		case p.acceptKw("PRECEDING"):
			b.Kind = UnboundedPreceding
		case p.acceptKw("FOLLOWING"):
			b.Kind = UnboundedFollowing
		default:
			return nil, p.errExpected("PRECEDING or FOLLOWING")
		}
	case isKw(t, "CURRENT"):
		p.next()
		if _, err := p.expectKw("ROW"); err != nil {
			return nil, err
		}
		b.Kind = CurrentRow
	default:
		var err error
		if b.Offset, err = p.parseConcat(); err != nil {
			return nil, err
		}
		switch {
		case p.acceptKw("PRECEDING"):
			b.Kind = Preceding
		case p.acceptKw("FOLLOWING"):
			b.Kind = Following
		default:
			return nil, p.errExpected("PRECEDING or FOLLOWING")
		}
	}
	return b, nil
}

func (p *parser) parseCase() (Expr, error) {
	c := &CaseExpr{Pos: p.next().pos}
	var err error
	if p.isKw("END") {
		return nil, p.errExpected("'WHEN'")
	}
	if !p.isKw("WHEN") {
		if c.Operand, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	for p.isKw("WHEN") {
		w := &WhenClause{Pos: p.next().pos}
		if w.Cond, err = p.parseExpr(); err != nil {
			return nil, err
		}
		if _, err := p.expectKw("THEN"); err != nil {
			return nil, err
		}
		if w.Result, err = p.parseExpr(); err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		return nil, p.errExpected("'WHEN'")
	}
	if p.acceptKw("ELSE") {
		if c.Else, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("END"); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *parser) parseCast(try bool) (Expr, error) {
	c := &CastExpr{Try: try, Pos: p.next().pos}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var err error
	if c.X, err = p.parseExpr(); err != nil {
		return nil, err
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if c.Type, err = p.parseType(); err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return c, nil
}

var extractUnits = setOf("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOW", "DOY",
	"HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "NANOSECOND",
	"EPOCH", "ISODOW", "ISOYEAR", "DECADE", "CENTURY", "MILLENNIUM")

func (p *parser) parseExtract() (Expr, error) {
	e := &ExtractExpr{Pos: p.next().pos}
	p.next() // (
	u := p.peek()
	if u.kind != tokIdent || reserved[u.kw] {
		return nil, p.errExpected("time unit")
	}
	if !extractUnits[u.kw] {
		return nil, p.errorf(u.pos, "unknown time unit '%s'", u.text)
	}
	p.next()
	e.Unit, e.UnitPos = u.kw, u.pos
	if _, err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	var err error
	if e.X, err = p.parseExpr(); err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return e, nil
}

// parsePosition parses POSITION(a IN b); a binds tighter than IN.
func (p *parser) parsePosition() (Expr, error) {
	f := &FuncCall{Name: "POSITION", Pos: p.next().pos}
	p.next() // (
	a, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectKw("IN"); err != nil {
		return nil, err
	}
	b, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	f.Args = []Expr{a, b}
	return f, nil
}

// parseSubstring parses SUBSTRING(s FROM a [FOR b]) and SUBSTRING(s, a[, b]).
func (p *parser) parseSubstring() (Expr, error) {
	f := &FuncCall{Name: "SUBSTRING", Pos: p.next().pos}
	p.next() // (
	s, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	f.Args = []Expr{s}
	if p.acceptKw("FROM") {
		a, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		f.Args = append(f.Args, a)
		if p.acceptKw("FOR") {
			b, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, b)
		}
	} else {
		if !p.isOp(",") {
			return nil, p.errExpected("FROM or ','")
		}
		for p.acceptOp(",") {
			a, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			f.Args = append(f.Args, a)
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return f, nil
}

// parseTrim parses TRIM([BOTH|LEADING|TRAILING] [chars] FROM s) and TRIM(s).
func (p *parser) parseTrim() (Expr, error) {
	e := &TrimExpr{Mode: "BOTH", Pos: p.next().pos}
	p.next() // (
	t := p.peek()
	hasMode := isKw(t, "BOTH") || isKw(t, "LEADING") || isKw(t, "TRAILING")
	if hasMode {
		p.next()
		e.Mode = t.kw
	}
	var err error
	if !p.acceptKw("FROM") {
		var x Expr
		if x, err = p.parseExpr(); err != nil {
			return nil, err
		}
		switch {
		case p.acceptKw("FROM"):
			e.Chars = x
		case hasMode:
			return nil, p.errExpected("'FROM'")
		default:
			e.X = x
		}
	}
	if e.X == nil {
		if e.X, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return e, nil
}

// intervalUnits maps accepted spellings to the normalized unit and its
// length.
var intervalUnits = map[string]struct {
	unit string
	d    time.Duration
}{
	"MILLISECOND": {"MILLISECOND", time.Millisecond}, "MILLISECONDS": {"MILLISECOND", time.Millisecond},
	"SECOND": {"SECOND", time.Second}, "SECONDS": {"SECOND", time.Second},
	"MINUTE": {"MINUTE", time.Minute}, "MINUTES": {"MINUTE", time.Minute},
	"HOUR": {"HOUR", time.Hour}, "HOURS": {"HOUR", time.Hour},
	"DAY": {"DAY", 24 * time.Hour}, "DAYS": {"DAY", 24 * time.Hour},
}

var unsupportedIntervalUnits = setOf("YEAR", "YEARS", "MONTH", "MONTHS", "WEEK", "WEEKS",
	"QUARTER", "MICROSECOND", "NANOSECOND")

// parseInterval parses INTERVAL '10' SECOND or INTERVAL '10 seconds'.
func (p *parser) parseInterval() (Expr, error) {
	lit := &IntervalLit{Pos: p.next().pos}
	val, vpos, err := p.parseStringLit("quoted interval value such as '10'")
	if err != nil {
		return nil, err
	}
	num, unitText, unitPos := val, "", vpos
	if u := p.peek(); u.kind == tokIdent && (intervalUnits[u.kw].unit != "" || unsupportedIntervalUnits[u.kw]) {
		p.next()
		unitText, unitPos = u.text, u.pos
	} else if f := strings.Fields(val); len(f) == 2 {
		num, unitText = f[0], f[1]
	} else {
		return nil, p.errExpected("interval unit (SECOND, MINUTE, HOUR, DAY or MILLISECOND)")
	}
	u, ok := intervalUnits[asciiUpper(unitText)]
	if !ok {
		return nil, p.errorf(unitPos, "unsupported interval unit '%s' (use MILLISECOND, SECOND, MINUTE, HOUR or DAY)", unitText)
	}
	d, ok := parseIntervalValue(num, u.d)
	if !ok {
		return nil, p.errorf(vpos, "invalid interval value '%s' (want a number such as '10' or '1.5')", val)
	}
	lit.Value, lit.Unit, lit.Duration = num, u.unit, d
	return lit, nil
}

// parseIntervalValue parses [+-]digits[.digits] and multiplies it by unit
// exactly, truncating below a nanosecond; ok is false on bad syntax or
// overflow.
func parseIntervalValue(s string, unit time.Duration) (time.Duration, bool) {
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" {
		return 0, false
	}
	intPart, frac, hasDot := strings.Cut(digits, ".")
	if intPart == "" || hasDot && frac == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	r.Mul(r, new(big.Rat).SetInt64(int64(unit)))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsInt64() || n.Int64() == math.MinInt64 {
		return 0, false
	}
	return time.Duration(n.Int64()), true
}
