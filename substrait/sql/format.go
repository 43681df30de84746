package sql

import (
	"strconv"
	"strings"
)

// Printing re-creates SQL from the tree. It is deterministic and minimal:
// parentheses appear only where precedence needs them, keywords are upper
// case, INNER JOIN prints as JOIN, and an identifier is back-quoted when it
// was quoted or would not read back as the same identifier.

// Expression precedence, lowest first; these mirror the parse functions.
const (
	precLowest = iota
	precOr
	precAnd
	precNot
	precCmp // comparisons, IS, BETWEEN, IN, LIKE
	precConcat
	precAdd
	precMul
	precUnary
	precPrimary
)

func binaryPrec(op BinaryOp) int {
	switch op {
	case OpOr:
		return precOr
	case OpAnd:
		return precAnd
	case OpConcat:
		return precConcat
	case OpAdd, OpSub:
		return precAdd
	case OpMul, OpDiv, OpMod:
		return precMul
	}
	return precCmp
}

func exprPrec(e Expr) int {
	switch e := e.(type) {
	case *BinaryExpr:
		return binaryPrec(e.Op)
	case *UnaryExpr:
		if e.Op == OpNot {
			return precNot
		}
		return precUnary
	case *IsExpr, *BetweenExpr, *InExpr, *LikeExpr:
		return precCmp
	}
	return precPrimary
}

// printer writes SQL text, or with fp set only the fingerprint of the
// text it would write (fingerprint.go).
type printer struct {
	b  strings.Builder
	fp *fingerprinter
}

func (p *printer) WriteString(s string) {
	if p.fp != nil {
		p.fp.cur.writeString(s)
		return
	}
	p.b.WriteString(s)
}

func (p *printer) WriteByte(c byte) error {
	if p.fp != nil {
		p.fp.cur.writeByte(c)
		return nil
	}
	return p.b.WriteByte(c)
}

func (p *printer) String() string { return p.b.String() }

func (p *printer) expr(e Expr, min int) {
	if e == nil {
		return
	}
	if exprPrec(e) < min {
		p.WriteByte('(')
		p.expr(e, precLowest)
		p.WriteByte(')')
		return
	}
	if p.fp != nil {
		p.fp.node(e, func() { p.exprBody(e) })
		return
	}
	p.exprBody(e)
}

// exprBody prints e without the parentheses its context may need.
func (p *printer) exprBody(e Expr) {
	switch e := e.(type) {
	case *ColumnRef:
		if e.Table != nil {
			p.WriteString(e.Table.String())
			p.WriteByte('.')
		}
		p.WriteString(e.Column.String())
	case *IntLit:
		p.WriteString(e.Text)
	case *NumberLit:
		p.WriteString(e.Text)
	case *StringLit:
		p.WriteString(quoteString(e.Value))
	case *BoolLit:
		if e.Value {
			p.WriteString("TRUE")
		} else {
			p.WriteString("FALSE")
		}
	case *NullLit:
		p.WriteString("NULL")
	case *IntervalLit:
		p.WriteString("INTERVAL ")
		p.WriteString(quoteString(e.Value))
		p.WriteByte(' ')
		p.WriteString(e.Unit)
	case *TypedLit:
		p.WriteString(e.Type.String())
		p.WriteByte(' ')
		p.WriteString(quoteString(e.Value))
	case *BinaryExpr:
		prec := binaryPrec(e.Op)
		rmin := prec + 1
		if prec == precCmp {
			rmin = precConcat
		}
		p.expr(e.Left, prec)
		p.WriteByte(' ')
		p.WriteString(string(e.Op))
		p.WriteByte(' ')
		p.expr(e.Right, rmin)
	case *UnaryExpr:
		p.WriteString(string(e.Op))
		if e.Op == OpNot {
			p.WriteByte(' ')
			p.expr(e.X, precNot)
			break
		}
		// "- -1" must not print as "--1", which starts a comment, and
		// "-(1)" not as "-1", which would read back as a folded literal.
		if p.fp != nil {
			x := p.fp.measure(func() { p.expr(e.X, precUnary) })
			if e.Op == OpNeg && x.n > 0 && strings.ContainsRune("-.0123456789", rune(x.first)) {
				p.WriteByte('(')
				p.fp.cur.append(x)
				p.WriteByte(')')
			} else {
				p.fp.cur.append(x)
			}
			break
		}
		var x printer
		x.expr(e.X, precUnary)
		if xs := x.String(); e.Op == OpNeg && xs != "" && strings.ContainsRune("-.0123456789", rune(xs[0])) {
			p.WriteByte('(')
			p.WriteString(x.String())
			p.WriteByte(')')
		} else {
			p.WriteString(x.String())
		}
	case *IsExpr:
		p.expr(e.X, precCmp)
		p.WriteString(" IS ")
		if e.Not {
			p.WriteString("NOT ")
		}
		p.WriteString(e.Kind.String())
	case *BetweenExpr:
		p.expr(e.X, precCmp)
		p.not(e.Not)
		p.WriteString(" BETWEEN ")
		p.expr(e.Low, precConcat)
		p.WriteString(" AND ")
		p.expr(e.High, precConcat)
	case *InExpr:
		p.expr(e.X, precCmp)
		p.not(e.Not)
		p.WriteString(" IN (")
		if e.Query != nil {
			p.query(e.Query)
		} else {
			p.exprs(e.List)
		}
		p.WriteByte(')')
	case *LikeExpr:
		p.expr(e.X, precCmp)
		p.not(e.Not)
		p.WriteString(" LIKE ")
		p.expr(e.Pattern, precConcat)
		if e.Escape != nil {
			p.WriteString(" ESCAPE ")
			p.expr(e.Escape, precConcat)
		}
	case *FuncCall:
		p.funcCall(e)
	case *CastExpr:
		if e.Try {
			p.WriteString("TRY_")
		}
		p.WriteString("CAST(")
		p.expr(e.X, precLowest)
		p.WriteString(" AS ")
		p.WriteString(e.Type.String())
		p.WriteByte(')')
	case *CaseExpr:
		p.WriteString("CASE")
		if e.Operand != nil {
			p.WriteByte(' ')
			p.expr(e.Operand, precLowest)
		}
		for _, w := range e.Whens {
			p.whenClause(w)
		}
		if e.Else != nil {
			p.WriteString(" ELSE ")
			p.expr(e.Else, precLowest)
		}
		p.WriteString(" END")
	case *ExtractExpr:
		p.WriteString("EXTRACT(")
		p.WriteString(e.Unit)
		p.WriteString(" FROM ")
		p.expr(e.X, precLowest)
		p.WriteByte(')')
	case *TrimExpr:
		p.WriteString("TRIM(")
		if e.Mode != "BOTH" || e.Chars != nil {
			p.WriteString(e.Mode)
			p.WriteByte(' ')
			if e.Chars != nil {
				p.expr(e.Chars, precLowest)
				p.WriteByte(' ')
			}
			p.WriteString("FROM ")
		}
		p.expr(e.X, precLowest)
		p.WriteByte(')')
	case *SubqueryExpr:
		p.WriteByte('(')
		p.query(e.Query)
		p.WriteByte(')')
	case *ExistsExpr:
		p.WriteString("EXISTS (")
		p.query(e.Query)
		p.WriteByte(')')
	}
}

func (p *printer) not(not bool) {
	if not {
		p.WriteString(" NOT")
	}
}

func (p *printer) exprs(list []Expr) {
	for i, e := range list {
		if i > 0 {
			p.WriteString(", ")
		}
		p.expr(e, precLowest)
	}
}

func (p *printer) whenClause(w *WhenClause) {
	p.WriteString(" WHEN ")
	p.expr(w.Cond, precLowest)
	p.WriteString(" THEN ")
	p.expr(w.Result, precLowest)
}

// niladic functions are called without parentheses.
var niladic = map[string]bool{
	"CURRENT_TIMESTAMP": true, "CURRENT_DATE": true, "CURRENT_TIME": true,
	"LOCALTIME": true, "LOCALTIMESTAMP": true,
}

func (p *printer) funcCall(f *FuncCall) {
	if !f.Quoted && niladic[f.Name] && len(f.Args) == 0 && !f.Star {
		p.WriteString(f.Name)
		return
	}
	if f.Quoted {
		p.WriteString(Ident{Name: f.Name, Quoted: true}.String())
	} else {
		p.WriteString(f.Name)
	}
	p.WriteByte('(')
	switch {
	case !f.Quoted && f.Name == "POSITION" && len(f.Args) == 2:
		p.expr(f.Args[0], precConcat)
		p.WriteString(" IN ")
		p.expr(f.Args[1], precLowest)
	case f.Star:
		p.WriteByte('*')
	default:
		if f.Distinct {
			p.WriteString("DISTINCT ")
		}
		p.exprs(f.Args)
	}
	p.WriteByte(')')
	if f.Filter != nil {
		p.WriteString(" FILTER (WHERE ")
		p.expr(f.Filter, precLowest)
		p.WriteByte(')')
	}
	if f.Over != nil {
		p.WriteString(" OVER (")
		p.windowSpec(f.Over)
		p.WriteByte(')')
	}
}

func (p *printer) windowSpec(w *WindowSpec) {
	sep := ""
	if len(w.PartitionBy) > 0 {
		p.WriteString("PARTITION BY ")
		p.exprs(w.PartitionBy)
		sep = " "
	}
	if len(w.OrderBy) > 0 {
		p.WriteString(sep)
		p.orderBy(w.OrderBy)
		sep = " "
	}
	if f := w.Frame; f != nil {
		p.WriteString(sep)
		p.WriteString(string(f.Unit))
		p.WriteByte(' ')
		if f.End != nil {
			p.WriteString("BETWEEN ")
			p.frameBound(f.Start)
			p.WriteString(" AND ")
			p.frameBound(f.End)
		} else {
			p.frameBound(f.Start)
		}
	}
}

func (p *printer) frameBound(b *FrameBound) {
	if b == nil {
		return
	}
	switch b.Kind {
	case UnboundedPreceding:
		p.WriteString("UNBOUNDED PRECEDING")
	case UnboundedFollowing:
		p.WriteString("UNBOUNDED FOLLOWING")
	case CurrentRow:
		p.WriteString("CURRENT ROW")
	case Preceding:
		p.expr(b.Offset, precConcat)
		p.WriteString(" PRECEDING")
	case Following:
		p.expr(b.Offset, precConcat)
		p.WriteString(" FOLLOWING")
	}
}

func (p *printer) orderBy(items []*OrderItem) {
	p.WriteString("ORDER BY ")
	for i, o := range items {
		if i > 0 {
			p.WriteString(", ")
		}
		p.orderItem(o)
	}
}

func (p *printer) orderItem(o *OrderItem) {
	p.expr(o.Expr, precLowest)
	if o.Desc {
		p.WriteString(" DESC")
	}
	switch o.Nulls {
	case NullsFirst:
		p.WriteString(" NULLS FIRST")
	case NullsLast:
		p.WriteString(" NULLS LAST")
	}
}

// ---- queries ----

func (p *printer) query(q *Query) {
	if len(q.With) > 0 {
		p.WriteString("WITH ")
		for i, c := range q.With {
			if i > 0 {
				p.WriteString(", ")
			}
			p.cte(c)
		}
		p.WriteByte(' ')
	}
	p.queryExpr(q.Body, 0)
	if len(q.OrderBy) > 0 {
		p.WriteByte(' ')
		p.orderBy(q.OrderBy)
	}
	if q.Limit != nil {
		p.WriteString(" LIMIT ")
		p.expr(q.Limit, precLowest)
	}
}

func (p *printer) cte(c *CTE) {
	p.WriteString(c.Name.String())
	if len(c.Columns) > 0 {
		p.WriteString(" (")
		p.idents(c.Columns)
		p.WriteByte(')')
	}
	p.WriteString(" AS (")
	p.query(c.Query)
	p.WriteByte(')')
}

func setOpPrec(op SetOpKind) int {
	if op == Intersect {
		return 2
	}
	return 1
}

func (p *printer) queryExpr(q QueryExpr, min int) {
	switch q := q.(type) {
	case *Select:
		p.selectBlock(q)
	case *Values:
		p.WriteString("VALUES ")
		for i, r := range q.Rows {
			if i > 0 {
				p.WriteString(", ")
			}
			p.WriteByte('(')
			p.exprs(r.Exprs)
			p.WriteByte(')')
		}
	case *SetOp:
		prec := setOpPrec(q.Op)
		if prec < min {
			p.WriteByte('(')
			p.queryExpr(q, 0)
			p.WriteByte(')')
			return
		}
		p.queryExpr(q.Left, prec)
		p.WriteByte(' ')
		p.WriteString(string(q.Op))
		if q.All {
			p.WriteString(" ALL")
		}
		p.WriteByte(' ')
		p.queryExpr(q.Right, prec+1)
	case *Query:
		p.WriteByte('(')
		p.query(q)
		p.WriteByte(')')
	}
}

func (p *printer) selectBlock(s *Select) {
	p.WriteString("SELECT ")
	if s.Distinct {
		p.WriteString("DISTINCT ")
	}
	for i, it := range s.Items {
		if i > 0 {
			p.WriteString(", ")
		}
		p.selectItem(it)
	}
	if s.From != nil {
		p.WriteString(" FROM ")
		p.tableExpr(s.From)
	}
	if s.Where != nil {
		p.WriteString(" WHERE ")
		p.expr(s.Where, precLowest)
	}
	if len(s.GroupBy) > 0 {
		p.WriteString(" GROUP BY ")
		p.exprs(s.GroupBy)
	}
	if s.Having != nil {
		p.WriteString(" HAVING ")
		p.expr(s.Having, precLowest)
	}
}

func (p *printer) selectItem(it *SelectItem) {
	if it.Star {
		if it.Qualifier != nil {
			p.WriteString(it.Qualifier.String())
			p.WriteByte('.')
		}
		p.WriteByte('*')
		return
	}
	p.expr(it.Expr, precLowest)
	p.alias(it.Alias)
}

func (p *printer) alias(a *Ident) {
	if a != nil {
		p.WriteString(" AS ")
		p.WriteString(a.String())
	}
}

func (p *printer) tableExpr(t TableExpr) {
	switch t := t.(type) {
	case *TableName:
		p.WriteString(t.Name.String())
		if t.AsOf != nil {
			p.WriteString(" FOR SYSTEM_TIME AS OF ")
			p.expr(t.AsOf, precLowest)
		}
		p.alias(t.Alias)
	case *DerivedTable:
		p.WriteByte('(')
		p.query(t.Query)
		p.WriteByte(')')
		p.alias(t.Alias)
		if len(t.Columns) > 0 {
			p.WriteString(" (")
			p.idents(t.Columns)
			p.WriteByte(')')
		}
	case *TableFunc:
		p.WriteString("TABLE(")
		p.WriteString(t.Name)
		p.WriteString("(TABLE ")
		p.WriteString(t.Table.String())
		if t.Descriptor != nil {
			p.WriteString(", DESCRIPTOR(")
			p.idents(t.Descriptor)
			p.WriteByte(')')
		}
		for _, a := range t.Args {
			p.WriteString(", ")
			p.expr(a, precLowest)
		}
		p.WriteString("))")
		p.alias(t.Alias)
	case *Join:
		// Joins are left-deep; comma binds loosest. Anything else was
		// parenthesized in the source.
		l, _ := t.Left.(*Join)
		r, _ := t.Right.(*Join)
		p.tableExprParen(t.Left, l != nil && l.Kind == JoinComma && t.Kind != JoinComma)
		if t.Kind == JoinComma {
			p.WriteString(", ")
		} else {
			p.WriteByte(' ')
			if t.Kind != JoinInner {
				p.WriteString(string(t.Kind))
				p.WriteByte(' ')
			}
			p.WriteString("JOIN ")
		}
		p.tableExprParen(t.Right, r != nil && (t.Kind != JoinComma || r.Kind == JoinComma))
		if t.On != nil {
			p.WriteString(" ON ")
			p.expr(t.On, precLowest)
		}
		if t.Using != nil {
			p.WriteString(" USING (")
			p.idents(t.Using)
			p.WriteByte(')')
		}
	}
}

func (p *printer) tableExprParen(t TableExpr, paren bool) {
	if paren {
		p.WriteByte('(')
	}
	p.tableExpr(t)
	if paren {
		p.WriteByte(')')
	}
}

func (p *printer) idents(ids []Ident) {
	for i, id := range ids {
		if i > 0 {
			p.WriteString(", ")
		}
		p.WriteString(id.String())
	}
}

// ---- statements ----

func (p *printer) statement(s Statement) {
	switch s := s.(type) {
	case *Query:
		p.query(s)
	case *Insert:
		p.WriteString("INSERT INTO ")
		p.WriteString(s.Table.String())
		if s.Columns != nil {
			p.WriteString(" (")
			p.idents(s.Columns)
			p.WriteByte(')')
		}
		p.WriteByte(' ')
		p.query(s.Query)
	case *CreateTable:
		p.createTable(s)
	case *CreateView:
		p.WriteString("CREATE ")
		if s.Temporary {
			p.WriteString("TEMPORARY ")
		}
		p.WriteString("VIEW ")
		if s.IfNotExists {
			p.WriteString("IF NOT EXISTS ")
		}
		p.WriteString(s.Name.String())
		if s.Columns != nil {
			p.WriteString(" (")
			p.idents(s.Columns)
			p.WriteByte(')')
		}
		p.WriteString(" AS ")
		p.query(s.Query)
	case *DropTable:
		p.WriteString("DROP ")
		if s.Temporary {
			p.WriteString("TEMPORARY ")
		}
		p.WriteString("TABLE ")
		if s.IfExists {
			p.WriteString("IF EXISTS ")
		}
		p.WriteString(s.Name.String())
	case *Set:
		p.WriteString("SET ")
		p.WriteString(quoteString(s.Key))
		p.WriteString(" = ")
		p.WriteString(quoteString(s.Value))
	case *Explain:
		p.WriteString("EXPLAIN ")
		p.statement(s.Stmt)
	}
}

func (p *printer) createTable(s *CreateTable) {
	p.WriteString("CREATE ")
	if s.Temporary {
		p.WriteString("TEMPORARY ")
	}
	p.WriteString("TABLE ")
	if s.IfNotExists {
		p.WriteString("IF NOT EXISTS ")
	}
	p.WriteString(s.Name.String())
	p.WriteString(" (")
	sep := ""
	for _, c := range s.Columns {
		p.WriteString(sep)
		p.WriteString(c.String())
		sep = ", "
	}
	if s.Watermark != nil {
		p.WriteString(sep)
		p.WriteString(s.Watermark.String())
		sep = ", "
	}
	if s.PrimaryKey != nil {
		p.WriteString(sep)
		p.WriteString(s.PrimaryKey.String())
	}
	p.WriteByte(')')
	if len(s.Options) > 0 {
		p.WriteString(" WITH (")
		for i, o := range s.Options {
			if i > 0 {
				p.WriteString(", ")
			}
			p.WriteString(o.String())
		}
		p.WriteByte(')')
	}
}

func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// isBareIdent reports whether name, printed without quotes, reads back as
// an unquoted identifier with the same Name.
func isBareIdent(name string) bool {
	for i, r := range name {
		if i == 0 && !isIdentStart(r) || i > 0 && !isIdentPart(r) {
			return false
		}
	}
	if name == "" || strings.ToLower(name) != name {
		return false
	}
	kw := asciiUpper(name)
	return !isASCII(name) || !reserved[kw] && !contextual[kw]
}

// ---- String methods ----

func str(f func(p *printer)) string {
	var p printer
	f(&p)
	return p.String()
}

// String returns the statements separated by ";\n".
func (s *Script) String() string {
	return str(func(p *printer) {
		for i, st := range s.Statements {
			if i > 0 {
				p.WriteString(";\n")
			}
			p.statement(st)
		}
	})
}

func (n Ident) String() string {
	if !n.Quoted && isBareIdent(n.Name) {
		return n.Name
	}
	return "`" + strings.ReplaceAll(n.Name, "`", "``") + "`"
}

func (n ObjectName) String() string {
	parts := make([]string, len(n.Parts))
	for i, id := range n.Parts {
		parts[i] = id.String()
	}
	return strings.Join(parts, ".")
}

func (n TypeName) String() string {
	if !n.HasPrecision {
		return n.Base
	}
	if n.Base == TypeDecimal {
		return n.Base + "(" + strconv.Itoa(n.Precision) + ", " + strconv.Itoa(n.Scale) + ")"
	}
	return n.Base + "(" + strconv.Itoa(n.Precision) + ")"
}

func (n *Query) String() string       { return str(func(p *printer) { p.query(n) }) }
func (n *CTE) String() string         { return str(func(p *printer) { p.cte(n) }) }
func (n *Insert) String() string      { return str(func(p *printer) { p.statement(n) }) }
func (n *CreateTable) String() string { return str(func(p *printer) { p.statement(n) }) }
func (n *CreateView) String() string  { return str(func(p *printer) { p.statement(n) }) }
func (n *DropTable) String() string   { return str(func(p *printer) { p.statement(n) }) }
func (n *Set) String() string         { return str(func(p *printer) { p.statement(n) }) }
func (n *Explain) String() string     { return str(func(p *printer) { p.statement(n) }) }

func (n *ColumnDef) String() string {
	s := n.Name.String() + " " + n.Type.String()
	if n.NotNull {
		s += " NOT NULL"
	}
	return s
}

func (n *Watermark) String() string {
	return "WATERMARK FOR " + n.Column.String() + " AS " + exprString(n.Expr)
}

func (n *PrimaryKey) String() string {
	return str(func(p *printer) {
		if n.Name != nil {
			p.WriteString("CONSTRAINT ")
			p.WriteString(n.Name.String())
			p.WriteByte(' ')
		}
		p.WriteString("PRIMARY KEY (")
		p.idents(n.Columns)
		p.WriteString(") NOT ENFORCED")
	})
}

func (n *Option) String() string { return quoteString(n.Key) + " = " + quoteString(n.Value) }

func (n *Select) String() string       { return str(func(p *printer) { p.selectBlock(n) }) }
func (n *SelectItem) String() string   { return str(func(p *printer) { p.selectItem(n) }) }
func (n *SetOp) String() string        { return str(func(p *printer) { p.queryExpr(n, 0) }) }
func (n *Values) String() string       { return str(func(p *printer) { p.queryExpr(n, 0) }) }
func (n *ValuesRow) String() string    { return "(" + str(func(p *printer) { p.exprs(n.Exprs) }) + ")" }
func (n *OrderItem) String() string    { return str(func(p *printer) { p.orderItem(n) }) }
func (n *TableName) String() string    { return str(func(p *printer) { p.tableExpr(n) }) }
func (n *DerivedTable) String() string { return str(func(p *printer) { p.tableExpr(n) }) }
func (n *Join) String() string         { return str(func(p *printer) { p.tableExpr(n) }) }
func (n *TableFunc) String() string    { return str(func(p *printer) { p.tableExpr(n) }) }
func (n *WindowSpec) String() string   { return str(func(p *printer) { p.windowSpec(n) }) }
func (n *WindowFrame) String() string {
	return str(func(p *printer) { p.windowSpec(&WindowSpec{Frame: n}) })
}
func (n *FrameBound) String() string { return str(func(p *printer) { p.frameBound(n) }) }
func (n *WhenClause) String() string {
	return strings.TrimPrefix(str(func(p *printer) { p.whenClause(n) }), " ")
}

func exprString(e Expr) string { return str(func(p *printer) { p.expr(e, precLowest) }) }

func (n *ColumnRef) String() string    { return exprString(n) }
func (n *IntLit) String() string       { return exprString(n) }
func (n *NumberLit) String() string    { return exprString(n) }
func (n *StringLit) String() string    { return exprString(n) }
func (n *BoolLit) String() string      { return exprString(n) }
func (n *NullLit) String() string      { return exprString(n) }
func (n *IntervalLit) String() string  { return exprString(n) }
func (n *TypedLit) String() string     { return exprString(n) }
func (n *BinaryExpr) String() string   { return exprString(n) }
func (n *UnaryExpr) String() string    { return exprString(n) }
func (n *IsExpr) String() string       { return exprString(n) }
func (n *BetweenExpr) String() string  { return exprString(n) }
func (n *InExpr) String() string       { return exprString(n) }
func (n *LikeExpr) String() string     { return exprString(n) }
func (n *FuncCall) String() string     { return exprString(n) }
func (n *CastExpr) String() string     { return exprString(n) }
func (n *CaseExpr) String() string     { return exprString(n) }
func (n *ExtractExpr) String() string  { return exprString(n) }
func (n *TrimExpr) String() string     { return exprString(n) }
func (n *SubqueryExpr) String() string { return exprString(n) }
func (n *ExistsExpr) String() string   { return exprString(n) }
