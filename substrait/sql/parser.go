package sql

import (
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting of expressions, queries and FROM items so
// that hostile input yields an error instead of exhausting the stack.
const maxDepth = 500

// maxOperators bounds the binary operators of one statement (expr.go).
const maxOperators = 20_000

// reserved words cannot be used as unquoted identifiers.
var reserved = setOf(
	"ALL", "AND", "AS", "ASC", "BETWEEN", "BOTH", "BY", "CASE", "CAST", "CROSS",
	"CURRENT", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "DESC",
	"DISTINCT", "ELSE", "END", "ESCAPE", "EXCEPT", "EXISTS", "FALSE", "FOR",
	"FROM", "FULL", "GROUP", "HAVING", "IN", "INNER", "INTERSECT", "INTERVAL",
	"IS", "JOIN", "LEADING", "LEFT", "LIKE", "LIMIT", "LOCALTIME", "LOCALTIMESTAMP",
	"NATURAL", "NOT", "NULL", "ON", "OR", "ORDER", "OUTER", "OVER",
	"PARTITION", "RIGHT", "SELECT", "TABLE", "THEN", "TRAILING", "TRUE", "UNION", "USING",
	"VALUES", "WHEN", "WHERE", "WITH",
)

// structural reserved words are never meant as names, so errors about them
// do not suggest quoting.
var structural = setOf("ALL", "AND", "AS", "BETWEEN", "BY", "CASE", "CAST", "DISTINCT",
	"ELSE", "EXCEPT", "FALSE", "FROM", "HAVING", "IN", "INTERSECT", "INTERVAL", "IS",
	"JOIN", "LIKE", "NOT", "NULL", "ON", "OR", "SELECT", "THEN", "TRUE", "UNION",
	"USING", "WHEN", "WHERE", "WITH")

// contextual words are identifiers the parser reads as keywords in some
// places (UNBOUNDED PRECEDING, TIMESTAMP '...'); the printer quotes
// identifiers spelled like them.
var contextual = setOf("UNBOUNDED", "TIMESTAMP", "DATE")

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
	ops   int // binary operators in the current statement
}

// Parse parses a script of ';'-separated statements. The error, if any, is
// an *Error.
func Parse(src string) (*Script, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	s := &Script{Src: src}
	for {
		for p.acceptOp(";") {
		}
		if p.peek().kind == tokEOF {
			break
		}
		p.ops = 0
		st, err := p.parseStatement()
		if err != nil {
			return nil, err
		}
		s.Statements = append(s.Statements, st)
		if p.peek().kind != tokEOF && !p.isOp(";") {
			return nil, p.errExpected("';'")
		}
	}
	if len(s.Statements) == 0 {
		return nil, Errorf(src, Pos{Line: 1, Col: 1}, "empty script")
	}
	return s, nil
}

// ParseExpr parses a single scalar expression. The error, if any, is an
// *Error.
func ParseExpr(src string) (Expr, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	if p.peek().kind == tokEOF {
		return nil, p.errorf(p.peek().pos, "empty expression")
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tokEOF {
		return nil, p.errorf(p.peek().pos, "unexpected %s after expression", describe(p.peek()))
	}
	return e, nil
}

func newParser(src string) (*parser, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	return &parser{src: src, toks: toks}, nil
}

// ---- token helpers ----

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func isKw(t token, kw string) bool { return t.kind == tokIdent && t.kw == kw }
func isOp(t token, op string) bool { return t.kind == tokOp && t.text == op }

func (p *parser) isKw(kw string) bool { return isKw(p.peek(), kw) }
func (p *parser) isOp(op string) bool { return isOp(p.peek(), op) }

func (p *parser) acceptKw(kw string) bool {
	if p.isKw(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptOp(op string) bool {
	if p.isOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKw(kws ...string) (token, error) {
	for _, kw := range kws {
		if !p.isKw(kw) {
			return token{}, p.errExpected("'" + kw + "'")
		}
		p.i++
	}
	return p.toks[p.i-len(kws)], nil
}

func (p *parser) expectOp(op string) (token, error) {
	if !p.isOp(op) {
		return token{}, p.errExpected("'" + op + "'")
	}
	return p.next(), nil
}

func (p *parser) errorf(pos Pos, format string, args ...any) *Error {
	return Errorf(p.src, pos, format, args...)
}

// errExpected reports that the current token is not what. what is a noun
// phrase ("expression") or a quoted token ("')'").
func (p *parser) errExpected(what string) *Error {
	t := p.peek()
	if t.kind == tokEOF {
		return p.errorf(t.pos, "unexpected end of input, expected %s", what)
	}
	if t.kind == tokIdent && reserved[t.kw] && !structural[t.kw] && !strings.HasPrefix(what, "'") {
		return p.errorf(t.pos, "expected %s but found reserved keyword '%s' (quote it as `%s` to use it as a name)",
			what, t.text, t.text)
	}
	return p.errorf(t.pos, "expected %s but found %s", what, describe(t))
}

// describe names a token for an error message.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return "string literal " + truncate(t.text)
	}
	return "'" + truncate(t.text) + "'"
}

func truncate(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max]) + "..."
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf(p.peek().pos, "nesting too deep (more than %d levels)", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

// startsQuery reports whether t can begin a query in parentheses.
func startsQuery(t token) bool {
	return isKw(t, "SELECT") || isKw(t, "WITH") || isKw(t, "VALUES")
}

// ---- names ----

// parseIdent parses an identifier; what names it in errors.
func (p *parser) parseIdent(what string) (Ident, error) {
	t := p.peek()
	switch {
	case t.kind == tokQuoted:
		p.next()
		return Ident{Name: t.val, Quoted: true, Pos: t.pos}, nil
	case t.kind == tokIdent && !reserved[t.kw]:
		p.next()
		return Ident{Name: strings.ToLower(t.text), Pos: t.pos}, nil
	}
	return Ident{}, p.errExpected(what)
}

// isIdentToken reports whether t can be parsed by parseIdent.
func isIdentToken(t token) bool {
	return t.kind == tokQuoted || t.kind == tokIdent && !reserved[t.kw]
}

func (p *parser) parseIdentList(what string) ([]Ident, error) {
	var ids []Ident
	for {
		id, err := p.parseIdent(what)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		if !p.acceptOp(",") {
			return ids, nil
		}
	}
}

// parseParenIdents parses "(a, b, ...)".
func (p *parser) parseParenIdents(what string) ([]Ident, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	ids, err := p.parseIdentList(what)
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return ids, nil
}

func (p *parser) parseObjectName(what string) (ObjectName, error) {
	id, err := p.parseIdent(what)
	if err != nil {
		return ObjectName{}, err
	}
	n := ObjectName{Parts: []Ident{id}, Pos: id.Pos}
	for p.isOp(".") {
		dot := p.next()
		if len(n.Parts) == 3 {
			return ObjectName{}, p.errorf(dot.pos, "%s has more than three parts", what)
		}
		id, err := p.parseIdent(what)
		if err != nil {
			return ObjectName{}, err
		}
		n.Parts = append(n.Parts, id)
	}
	return n, nil
}

// parseAlias parses an optional [AS] alias.
func (p *parser) parseAlias() (*Ident, error) {
	if p.acceptKw("AS") {
		id, err := p.parseIdent("alias")
		return &id, err
	}
	if isIdentToken(p.peek()) {
		id, _ := p.parseIdent("alias")
		return &id, nil
	}
	return nil, nil
}

// parseStringLit parses a string literal; what names it in errors.
func (p *parser) parseStringLit(what string) (string, Pos, error) {
	t := p.peek()
	if t.kind != tokString {
		return "", Pos{}, p.errExpected(what)
	}
	p.next()
	return t.val, t.pos, nil
}

// ---- statements ----

func (p *parser) parseStatement() (Statement, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch {
	case startsQuery(t) || isOp(t, "("):
		return p.parseQuery()
	case isKw(t, "INSERT"):
		return p.parseInsert()
	case isKw(t, "CREATE"):
		return p.parseCreate()
	case isKw(t, "DROP"):
		return p.parseDrop()
	case isKw(t, "SET"):
		return p.parseSet()
	case isKw(t, "EXPLAIN"):
		p.next()
		if p.acceptKw("PLAN") {
			if _, err := p.expectKw("FOR"); err != nil {
				return nil, err
			}
		}
		st, err := p.parseStatement()
		if err != nil {
			return nil, err
		}
		return &Explain{Stmt: st, Pos: t.pos}, nil
	case t.kind == tokIdent:
		return nil, p.errorf(t.pos, "unsupported statement '%s'", asciiUpper(t.text))
	}
	return nil, p.errExpected("statement")
}

func (p *parser) unsupported(start token) error {
	t := p.peek()
	if t.kind == tokIdent {
		return p.errorf(start.pos, "unsupported statement '%s %s'", asciiUpper(start.text), asciiUpper(t.text))
	}
	return p.errExpected("TABLE or VIEW")
}

func (p *parser) parseInsert() (Statement, error) {
	ins := &Insert{Pos: p.next().pos}
	if _, err := p.expectKw("INTO"); err != nil {
		return nil, err
	}
	var err error
	if ins.Table, err = p.parseObjectName("table name"); err != nil {
		return nil, err
	}
	if p.isOp("(") && !startsQuery(p.peekAt(1)) && !isOp(p.peekAt(1), "(") {
		if ins.Columns, err = p.parseParenIdents("column name"); err != nil {
			return nil, err
		}
	}
	if ins.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	return ins, nil
}

func (p *parser) parseCreate() (Statement, error) {
	create := p.next()
	temporary := p.acceptKw("TEMPORARY")
	switch {
	case p.acceptKw("TABLE"):
		return p.parseCreateTable(create.pos, temporary)
	case p.acceptKw("VIEW"):
		return p.parseCreateView(create.pos, temporary)
	}
	return nil, p.unsupported(create)
}

// parseIfExists parses an optional IF [NOT] EXISTS.
func (p *parser) parseIfExists(not bool) (bool, error) {
	if !p.acceptKw("IF") {
		return false, nil
	}
	if not {
		if _, err := p.expectKw("NOT"); err != nil {
			return false, err
		}
	}
	_, err := p.expectKw("EXISTS")
	return err == nil, err
}

func (p *parser) parseCreateTable(pos Pos, temporary bool) (Statement, error) {
	ct := &CreateTable{Pos: pos, Temporary: temporary}
	var err error
	if ct.IfNotExists, err = p.parseIfExists(true); err != nil {
		return nil, err
	}
	if ct.Name, err = p.parseObjectName("table name"); err != nil {
		return nil, err
	}
	if t := p.peek(); isKw(t, "AS") || isKw(t, "WITH") || isKw(t, "LIKE") {
		return nil, p.errorf(t.pos, "CREATE TABLE ... %s is not supported; declare the columns", asciiUpper(t.text))
	}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case isKw(t, "WATERMARK") && isKw(p.peekAt(1), "FOR"):
			if ct.Watermark != nil {
				return nil, p.errorf(t.pos, "only one WATERMARK is allowed")
			}
			if ct.Watermark, err = p.parseWatermark(); err != nil {
				return nil, err
			}
		case isKw(t, "PRIMARY") && isKw(p.peekAt(1), "KEY") || isKw(t, "CONSTRAINT") && isIdentToken(p.peekAt(1)) && isKw(p.peekAt(2), "PRIMARY"):
			pk, err := p.parsePrimaryKey(nil)
			if err != nil {
				return nil, err
			}
			if err := p.setPrimaryKey(ct, pk); err != nil {
				return nil, err
			}
		default:
			if err := p.parseColumnDef(ct); err != nil {
				return nil, err
			}
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if p.acceptKw("WITH") {
		if ct.Options, err = p.parseOptions(); err != nil {
			return nil, err
		}
	}
	return ct, nil
}

func (p *parser) setPrimaryKey(ct *CreateTable, pk *PrimaryKey) error {
	if ct.PrimaryKey != nil {
		return p.errorf(pk.Pos, "only one PRIMARY KEY is allowed")
	}
	ct.PrimaryKey = pk
	return nil
}

func (p *parser) parseColumnDef(ct *CreateTable) error {
	name, err := p.parseIdent("column name")
	if err != nil {
		return err
	}
	if t := p.peek(); isKw(t, "AS") {
		return p.errorf(t.pos, "computed columns are not supported")
	}
	col := &ColumnDef{Name: name, Pos: name.Pos}
	if col.Type, err = p.parseType(); err != nil {
		return err
	}
	for {
		t := p.peek()
		switch {
		case isKw(t, "METADATA") || isKw(t, "VIRTUAL"):
			return p.errorf(t.pos, "metadata columns are not supported")
		case isKw(t, "NOT"):
			p.next()
			if _, err := p.expectKw("NULL"); err != nil {
				return err
			}
			col.NotNull = true
		case isKw(t, "NULL"):
			p.next()
		case isKw(t, "PRIMARY"):
			pk, err := p.parsePrimaryKey(&name)
			if err != nil {
				return err
			}
			if err := p.setPrimaryKey(ct, pk); err != nil {
				return err
			}
		default:
			ct.Columns = append(ct.Columns, col)
			return nil
		}
	}
}

func (p *parser) parseWatermark() (*Watermark, error) {
	w := &Watermark{Pos: p.next().pos}
	p.next() // FOR
	var err error
	if w.Column, err = p.parseIdent("column name"); err != nil {
		return nil, err
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if w.Expr, err = p.parseExpr(); err != nil {
		return nil, err
	}
	return w, nil
}

// parsePrimaryKey parses [CONSTRAINT name] PRIMARY KEY [(cols)] NOT
// ENFORCED; the column list is absent for a column constraint (col != nil).
func (p *parser) parsePrimaryKey(col *Ident) (*PrimaryKey, error) {
	pk := &PrimaryKey{Pos: p.peek().pos}
	if p.acceptKw("CONSTRAINT") {
		name, err := p.parseIdent("constraint name")
		if err != nil {
			return nil, err
		}
		pk.Name = &name
	}
	if _, err := p.expectKw("PRIMARY", "KEY"); err != nil {
		return nil, err
	}
	if col != nil {
		pk.Columns = []Ident{*col}
	} else {
		var err error
		if pk.Columns, err = p.parseParenIdents("column name"); err != nil {
			return nil, err
		}
	}
	if !p.isKw("NOT") || !isKw(p.peekAt(1), "ENFORCED") {
		return nil, p.errorf(p.peek().pos, "PRIMARY KEY must be declared NOT ENFORCED (Flink does not own the data, so it cannot enforce the key)")
	}
	p.next()
	p.next()
	return pk, nil
}

func (p *parser) parseOptions() ([]*Option, error) {
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	var opts []*Option
	seen := map[string]bool{}
	for {
		key, pos, err := p.parseOptionKey("option key")
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, p.errorf(pos, "duplicate option '%s'", key)
		}
		seen[key] = true
		val, vpos, err := p.parseOptionValue(key)
		if err != nil {
			return nil, err
		}
		opts = append(opts, &Option{Key: key, Value: val, Pos: pos, ValuePos: vpos})
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return opts, nil
}

// parseOptionKey parses an option or configuration key: a 'string', or a
// bare key written as a dotted or dashed path of identifiers and numbers
// (scan.startup.mode, sink.transactional-id-prefix, table). A bare key is
// any identifier, reserved words included (nothing else can stand where a
// key does), and its parts are joined exactly as written, so no space may
// separate them. A bare key keeps its case, like a quoted one.
func (p *parser) parseOptionKey(what string) (string, Pos, error) {
	t := p.peek()
	if t.kind == tokString {
		p.next()
		return t.val, t.pos, nil
	}
	if t.kind != tokIdent {
		return "", Pos{}, p.errExpected(what)
	}
	p.next()
	end := t.pos.Offset + len(t.text)
	for {
		n := p.peek()
		adjacent := n.pos.Offset == end
		switch {
		case adjacent && n.kind == tokNumber && strings.HasPrefix(n.text, "."):
			// fields.0 lexes as fields and .0.
			p.next()
			end += len(n.text)
			continue
		case isOp(n, ".") || isOp(n, "-"):
			if !adjacent {
				return "", Pos{}, p.spacedKey(what, t.pos, n.pos)
			}
			p.next()
			end += len(n.text)
			part := p.peek()
			if part.kind != tokIdent && part.kind != tokInt && part.kind != tokNumber || strings.HasPrefix(part.text, ".") {
				return "", Pos{}, p.errExpected("rest of " + what + " " + p.src[t.pos.Offset:end])
			}
			if part.pos.Offset != end {
				return "", Pos{}, p.spacedKey(what, t.pos, part.pos)
			}
			p.next()
			end += len(part.text)
			continue
		}
		return p.src[t.pos.Offset:end], t.pos, nil
	}
}

// spacedKey reports a bare key whose parts are separated by spaces, at the
// part after the first space, with the key written without them as the hint.
func (p *parser) spacedKey(what string, start, at Pos) *Error {
	end := len(p.src)
	for i := 0; ; i++ {
		if n := p.peekAt(i); n.kind == tokEOF || isOp(n, "=") || isOp(n, ",") || isOp(n, ")") || n.pos.Line != start.Line {
			end = n.pos.Offset
			break
		}
	}
	written := strings.TrimSpace(p.src[start.Offset:max(end, start.Offset)])
	return p.errorf(at, "%s %s must not contain spaces: write %s", what, written, strings.Join(strings.Fields(written), ""))
}

// parseOptionValue parses "= 'value'".
func (p *parser) parseOptionValue(key string) (string, Pos, error) {
	if _, err := p.expectOp("="); err != nil {
		return "", Pos{}, err
	}
	t := p.peek()
	switch t.kind {
	case tokString:
	case tokInt, tokNumber, tokIdent, tokQuoted:
		v := t.text
		if t.kind == tokQuoted {
			v = t.val
		}
		return "", Pos{}, p.errorf(t.pos, "value of '%s' must be a string literal, found %s (write %s)",
			key, describe(t), quoteString(truncate(v)))
	default:
		return "", Pos{}, p.errExpected("string literal")
	}
	p.next()
	return t.val, t.pos, nil
}

func (p *parser) parseCreateView(pos Pos, temporary bool) (Statement, error) {
	cv := &CreateView{Pos: pos, Temporary: temporary}
	var err error
	if cv.IfNotExists, err = p.parseIfExists(true); err != nil {
		return nil, err
	}
	if cv.Name, err = p.parseObjectName("view name"); err != nil {
		return nil, err
	}
	if p.isOp("(") {
		if cv.Columns, err = p.parseParenIdents("column name"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if cv.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	return cv, nil
}

func (p *parser) parseDrop() (Statement, error) {
	drop := p.next()
	dt := &DropTable{Pos: drop.pos, Temporary: p.acceptKw("TEMPORARY")}
	if !p.acceptKw("TABLE") {
		return nil, p.unsupported(drop)
	}
	var err error
	if dt.IfExists, err = p.parseIfExists(false); err != nil {
		return nil, err
	}
	if dt.Name, err = p.parseObjectName("table name"); err != nil {
		return nil, err
	}
	return dt, nil
}

func (p *parser) parseSet() (Statement, error) {
	s := &Set{Pos: p.next().pos}
	var err error
	if s.Key, _, err = p.parseOptionKey("configuration key"); err != nil {
		return nil, err
	}
	if s.Value, s.ValuePos, err = p.parseOptionValue(s.Key); err != nil {
		return nil, err
	}
	return s, nil
}
