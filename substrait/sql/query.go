package sql

// parseQuery parses [WITH ...] body [ORDER BY ...] [LIMIT n].
func (p *parser) parseQuery() (*Query, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	q := &Query{Pos: p.peek().pos}
	if p.acceptKw("WITH") {
		for {
			c, err := p.parseCTE()
			if err != nil {
				return nil, err
			}
			q.With = append(q.With, c)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	var err error
	if q.Body, err = p.parseSetExpr(); err != nil {
		return nil, err
	}
	if p.isKw("ORDER") {
		if q.OrderBy, err = p.parseOrderBy(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("LIMIT") {
		if q.Limit, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	return q, nil
}

func (p *parser) parseCTE() (*CTE, error) {
	name, err := p.parseIdent("name of WITH query")
	if err != nil {
		return nil, err
	}
	c := &CTE{Name: name, Pos: name.Pos}
	if p.isOp("(") {
		if c.Columns, err = p.parseParenIdents("column name"); err != nil {
			return nil, err
		}
	}
	if _, err := p.expectKw("AS"); err != nil {
		return nil, err
	}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	if c.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return c, nil
}

// parseSetExpr parses UNION/EXCEPT chains of parseIntersect operands.
func (p *parser) parseSetExpr() (QueryExpr, error) {
	left, err := p.parseIntersect()
	if err != nil {
		return nil, err
	}
	for p.isKw("UNION") || p.isKw("EXCEPT") {
		op := p.next()
		if left, err = p.parseSetOpRight(left, op, p.parseIntersect); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *parser) parseIntersect() (QueryExpr, error) {
	left, err := p.parseSetOperand()
	if err != nil {
		return nil, err
	}
	for p.isKw("INTERSECT") {
		op := p.next()
		if left, err = p.parseSetOpRight(left, op, p.parseSetOperand); err != nil {
			return nil, err
		}
	}
	return left, nil
}

func (p *parser) parseSetOpRight(left QueryExpr, op token, operand func() (QueryExpr, error)) (QueryExpr, error) {
	all := p.acceptKw("ALL")
	if !all {
		p.acceptKw("DISTINCT")
	}
	right, err := operand()
	if err != nil {
		return nil, err
	}
	return &SetOp{Op: SetOpKind(op.kw), All: all, Left: left, Right: right, Pos: left.Position(), OpPos: op.pos}, nil
}

func (p *parser) parseSetOperand() (QueryExpr, error) {
	t := p.peek()
	switch {
	case isKw(t, "SELECT"):
		return p.parseSelect()
	case isKw(t, "VALUES"):
		return p.parseValues()
	case isOp(t, "("):
		p.next()
		q, err := p.parseQuery()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		// Parentheses around a plain body carry no meaning; drop them so
		// the binder sees (SELECT ...) UNION (SELECT ...) as two Selects.
		if len(q.With) == 0 && len(q.OrderBy) == 0 && q.Limit == nil {
			return q.Body, nil
		}
		return q, nil
	}
	return nil, p.errExpected("SELECT")
}

func (p *parser) parseValues() (QueryExpr, error) {
	v := &Values{Pos: p.next().pos}
	for {
		t, err := p.expectOp("(")
		if err != nil {
			return nil, err
		}
		row := &ValuesRow{Pos: t.pos}
		if row.Exprs, err = p.parseExprList(); err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		v.Rows = append(v.Rows, row)
		if !p.acceptOp(",") {
			return v, nil
		}
	}
}

func (p *parser) parseSelect() (QueryExpr, error) {
	s := &Select{Pos: p.next().pos}
	if !p.acceptKw("ALL") {
		s.Distinct = p.acceptKw("DISTINCT")
	}
	for {
		it, err := p.parseSelectItem()
		if err != nil {
			return nil, err
		}
		s.Items = append(s.Items, it)
		if !p.acceptOp(",") {
			break
		}
	}
	var err error
	if p.acceptKw("FROM") {
		if s.From, err = p.parseFrom(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("WHERE") {
		if s.Where, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("GROUP") {
		if _, err := p.expectKw("BY"); err != nil {
			return nil, err
		}
		if s.GroupBy, err = p.parseExprList(); err != nil {
			return nil, err
		}
	}
	if p.acceptKw("HAVING") {
		if s.Having, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (p *parser) parseSelectItem() (*SelectItem, error) {
	t := p.peek()
	if p.acceptOp("*") {
		return &SelectItem{Star: true, Pos: t.pos}, nil
	}
	if isIdentToken(t) && isOp(p.peekAt(1), ".") && isOp(p.peekAt(2), "*") {
		q, _ := p.parseIdent("table name")
		p.next()
		p.next()
		return &SelectItem{Star: true, Qualifier: &q, Pos: t.pos}, nil
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	it := &SelectItem{Expr: e, Pos: t.pos}
	if it.Alias, err = p.parseAlias(); err != nil {
		return nil, err
	}
	return it, nil
}

func (p *parser) parseOrderBy() ([]*OrderItem, error) {
	if _, err := p.expectKw("ORDER", "BY"); err != nil {
		return nil, err
	}
	var items []*OrderItem
	for {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		o := &OrderItem{Expr: e, Pos: e.Position()}
		if !p.acceptKw("ASC") {
			o.Desc = p.acceptKw("DESC")
		}
		if p.acceptKw("NULLS") {
			switch {
			case p.acceptKw("FIRST"):
				o.Nulls = NullsFirst
			case p.acceptKw("LAST"):
				o.Nulls = NullsLast
			default:
				return nil, p.errExpected("FIRST or LAST")
			}
		}
		items = append(items, o)
		if !p.acceptOp(",") {
			return items, nil
		}
	}
}

// ---- FROM ----

// parseFrom parses comma-separated join chains; the comma binds loosest.
func (p *parser) parseFrom() (TableExpr, error) {
	left, err := p.parseJoinChain()
	if err != nil {
		return nil, err
	}
	for p.isOp(",") {
		comma := p.next()
		right, err := p.parseJoinChain()
		if err != nil {
			return nil, err
		}
		left = &Join{Kind: JoinComma, Left: left, Right: right, Pos: left.Position(), OpPos: comma.pos}
	}
	return left, nil
}

func (p *parser) parseJoinChain() (TableExpr, error) {
	left, err := p.parseTablePrimary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		var kind JoinKind
		switch {
		case isKw(t, "JOIN"):
			kind = JoinInner
		case isKw(t, "INNER"), isKw(t, "CROSS"):
			p.next()
			kind = JoinKind(t.kw)
		case isKw(t, "LEFT"), isKw(t, "RIGHT"), isKw(t, "FULL"):
			p.next()
			p.acceptKw("OUTER")
			kind = JoinKind(t.kw)
		case isKw(t, "NATURAL"):
			return nil, p.errorf(t.pos, "NATURAL JOIN is not supported; use JOIN ... USING (...)")
		default:
			return left, nil
		}
		if _, err := p.expectKw("JOIN"); err != nil {
			return nil, err
		}
		right, err := p.parseTablePrimary()
		if err != nil {
			return nil, err
		}
		j := &Join{Kind: kind, Left: left, Right: right, Pos: left.Position(), OpPos: t.pos}
		if kind != JoinCross {
			switch {
			case p.acceptKw("ON"):
				if j.On, err = p.parseExpr(); err != nil {
					return nil, err
				}
			case p.acceptKw("USING"):
				if j.Using, err = p.parseParenIdents("column name"); err != nil {
					return nil, err
				}
			default:
				return nil, p.errExpected("ON or USING")
			}
		}
		left = j
	}
}

func (p *parser) parseTablePrimary() (TableExpr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	t := p.peek()
	switch {
	case isOp(t, "("):
		if next := p.peekAt(1); startsQuery(next) || isOp(next, "(") {
			return p.parseDerivedTable()
		}
		p.next()
		te, err := p.parseFrom()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return te, nil
	case isKw(t, "TABLE"):
		return p.parseTableFunc()
	case (isKw(t, "LATERAL") || isKw(t, "UNNEST")) && (isKw(p.peekAt(1), "TABLE") || isOp(p.peekAt(1), "(")):
		return nil, p.errorf(t.pos, "%s is not supported", asciiUpper(t.text))
	}
	name, err := p.parseObjectName("table name")
	if err != nil {
		return nil, err
	}
	tn := &TableName{Name: name, Pos: name.Pos}
	if p.acceptKw("FOR") {
		if _, err := p.expectKw("SYSTEM_TIME", "AS", "OF"); err != nil {
			return nil, err
		}
		if tn.AsOf, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if tn.Alias, err = p.parseAlias(); err != nil {
		return nil, err
	}
	return tn, nil
}

func (p *parser) parseDerivedTable() (TableExpr, error) {
	d := &DerivedTable{Pos: p.next().pos}
	var err error
	if d.Query, err = p.parseQuery(); err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if d.Alias, err = p.parseAlias(); err != nil {
		return nil, err
	}
	if d.Alias != nil && p.isOp("(") {
		if d.Columns, err = p.parseParenIdents("column name"); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// parseTableFunc parses TABLE(NAME(TABLE t, [DESCRIPTOR(cols),] args...)).
func (p *parser) parseTableFunc() (TableExpr, error) {
	tf := &TableFunc{Pos: p.next().pos}
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	name := p.peek()
	if name.kind != tokIdent || reserved[name.kw] || !isOp(p.peekAt(1), "(") {
		return nil, p.errExpected("table function call such as TUMBLE(...)")
	}
	p.next()
	p.next()
	tf.Name = asciiUpper(name.text)
	if _, err := p.expectKw("TABLE"); err != nil {
		return nil, err
	}
	var err error
	if tf.Table, err = p.parseObjectName("table name"); err != nil {
		return nil, err
	}
	for p.acceptOp(",") {
		if t := p.peek(); isKw(t, "DESCRIPTOR") && isOp(p.peekAt(1), "(") {
			if tf.Descriptor != nil {
				return nil, p.errorf(t.pos, "%s has more than one DESCRIPTOR argument", tf.Name)
			}
			p.next()
			if tf.Descriptor, err = p.parseParenIdents("column name"); err != nil {
				return nil, err
			}
			continue
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		tf.Args = append(tf.Args, e)
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if tf.Alias, err = p.parseAlias(); err != nil {
		return nil, err
	}
	return tf, nil
}
