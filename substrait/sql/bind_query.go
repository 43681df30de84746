package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
)

// column is one output column of a relation as the binder sees it.
type column struct {
	name      string
	qualifier string // table name or alias
	typ       arrow.DataType
	pos       Pos
	eventTime bool // the table's event-time attribute
	// lateness is the table's allowed_lateness_ms for its event-time column.
	lateness int64
	window   bool // window_start/window_end of a window TVF
	// hidden columns are not part of SELECT * (the rank a ROW_NUMBER item
	// computes before the select list names it).
	hidden bool
	// rowNumber is the window relation computing this ROW_NUMBER column.
	rowNumber *pb.ConsistentPartitionWindowRel
}

// scope is the columns of a relation, in field order.
type scope struct {
	cols []column
	// tvf is the window of a window table-valued function in FROM.
	tvf *windowCall
	// updating: the relation is a changelog (an unwindowed aggregate).
	updating bool
	// unbounded: some source under the relation never ends.
	unbounded bool
}

func (s *scope) names() []string {
	out := make([]string, len(s.cols))
	for i, c := range s.cols {
		out[i] = c.name
	}
	return out
}

// bound is a bound expression: its Substrait form and its type.
type bound struct {
	pb  *pb.Expression
	typ arrow.DataType
	// col is the input column for a plain column reference, else -1.
	col int
}

// windowCall is TUMBLE/HOP/SESSION/CUMULATE bound to a time column.
type windowCall struct {
	kind                string
	timeCol             int
	size, slide, offset int64
	pos                 Pos
}

// named is a query bound by name: a CTE or a view.
type named struct {
	name    string
	columns []Ident
	query   *Query
	visible int // CTEs visible to its body: b.ctes[:visible]
}

func (b *binder) query(q *Query) (*pb.Rel, *scope, error) {
	if len(q.With) > 0 {
		depth := len(b.ctes)
		defer func() { b.ctes = b.ctes[:depth] }()
		for _, c := range q.With {
			for _, prev := range b.ctes[depth:] {
				if strings.EqualFold(prev.name, c.Name.Name) {
					return nil, nil, b.errf(c.Name.Pos, "WITH names %s twice", c.Name.Name)
				}
			}
			b.ctes = append(b.ctes, &named{name: c.Name.Name, columns: c.Columns, query: c.Query, visible: len(b.ctes)})
		}
	}
	if len(q.OrderBy) > 0 {
		return nil, nil, b.errf(q.OrderBy[0].Pos, "ORDER BY is not supported on a stream")
	}
	if q.Limit != nil {
		return nil, nil, b.errf(q.Limit.Position(), "LIMIT is not supported on a stream")
	}
	return b.queryExpr(q.Body)
}

// queryExpr binds a query body: a SELECT, a parenthesized query, or UNION
// [ALL] of two bodies.
func (b *binder) queryExpr(qe QueryExpr) (*pb.Rel, *scope, error) {
	switch x := qe.(type) {
	case *Select:
		return b.selectStmt(x)
	case *Query:
		return b.query(x)
	case *Values:
		return b.valuesRows(x)
	case *SetOp:
		if x.Op != Union {
			return nil, nil, b.errf(x.OpPos, "%s is not supported yet", describeQuery(x))
		}
		return b.union(x)
	}
	return nil, nil, b.errf(qe.Position(), "%s is not supported yet", describeQuery(qe))
}

// union binds UNION ALL (both inputs pass through, in arrival order) and
// UNION (the same, then distinct). Columns pair by position and take their
// common type; names come from the left input. A column stays an event-time
// attribute when it is one on both sides.
func (b *binder) union(x *SetOp) (*pb.Rel, *scope, error) {
	lrel, lsc, err := b.queryExpr(x.Left)
	if err != nil {
		return nil, nil, err
	}
	rrel, rsc, err := b.queryExpr(x.Right)
	if err != nil {
		return nil, nil, err
	}
	if len(lsc.cols) != len(rsc.cols) {
		return nil, nil, b.errf(x.OpPos, "UNION inputs have %d and %d columns", len(lsc.cols), len(rsc.cols))
	}
	out := &scope{updating: lsc.updating || rsc.updating, unbounded: lsc.unbounded || rsc.unbounded}
	var lcast, rcast []*pb.Expression
	castL, castR := false, false
	for i, lc := range lsc.cols {
		rc := rsc.cols[i]
		t, ok := common(lc.typ, rc.typ)
		if !ok || t.ID() == arrow.NULL {
			return nil, nil, b.errf(x.OpPos, "UNION column %d is %s on the left and %s on the right", i+1, kernels.SQLTypeName(lc.typ), kernels.SQLTypeName(rc.typ))
		}
		le := b.cast(bound{pb: substrait.FieldRef(i), typ: lc.typ}, t)
		re := b.cast(bound{pb: substrait.FieldRef(i), typ: rc.typ}, t)
		castL = castL || !arrow.TypeEqual(lc.typ, t)
		castR = castR || !arrow.TypeEqual(rc.typ, t)
		lcast, rcast = append(lcast, le.pb), append(rcast, re.pb)
		out.cols = append(out.cols, column{name: lc.name, typ: t, pos: lc.pos, eventTime: lc.eventTime && rc.eventTime})
	}
	if castL {
		lrel = project(lrel, len(lsc.cols), lcast)
	}
	if castR {
		rrel = project(rrel, len(rsc.cols), rcast)
	}
	rel := &pb.Rel{RelType: &pb.Rel_Set{Set: &pb.SetRel{Common: substrait.Direct(), Inputs: []*pb.Rel{lrel, rrel}, Op: pb.SetRel_SET_OP_UNION_ALL}}}
	if x.All {
		return rel, out, nil
	}
	return b.distinctRel(rel, out, x.Pos)
}

func describeQuery(q QueryExpr) string {
	switch x := q.(type) {
	case *SetOp:
		if x.All {
			return string(x.Op) + " ALL"
		}
		return string(x.Op)
	case *Values:
		return "VALUES"
	}
	return "this query form"
}

func (b *binder) from(t TableExpr) (*pb.Rel, *scope, error) {
	switch x := t.(type) {
	case nil:
		return nil, nil, fmt.Errorf("no FROM")
	case *TableName:
		if x.AsOf != nil {
			return nil, nil, b.errf(x.AsOf.Position(), "FOR SYSTEM_TIME AS OF is not supported")
		}
		alias := ""
		if x.Alias != nil {
			alias = x.Alias.Name
		}
		return b.tableRef(x.Name, alias, x.Pos)
	case *TableFunc:
		return b.windowTVF(x)
	case *DerivedTable:
		q := ""
		if x.Alias != nil {
			q = x.Alias.Name
		}
		return b.derived(x.Query, q, x.Columns, x.Pos)
	case *Join:
		return b.join(x)
	}
	return nil, nil, b.errf(t.Position(), "unsupported FROM item")
}

// windowTVF binds TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), ...)): the table's
// columns plus window_start and window_end, which GROUP BY must name.
func (b *binder) windowTVF(x *TableFunc) (*pb.Rel, *scope, error) {
	alias := ""
	if x.Alias != nil {
		alias = x.Alias.Name
	}
	rel, sc, err := b.tableRef(x.Table, alias, x.Pos)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range sc.cols {
		if c.window {
			return nil, nil, b.errf(x.Pos, "%s over a table that already has window_start/window_end is not supported", x.Name)
		}
	}
	if len(x.Descriptor) != 1 {
		return nil, nil, b.errf(x.Pos, "%s needs DESCRIPTOR(time_column) naming one column", x.Name)
	}
	args := append([]Expr{&ColumnRef{Column: x.Descriptor[0], Pos: x.Descriptor[0].Pos}}, x.Args...)
	w, err := b.windowArgs(x.Name, args, x.Pos, sc)
	if err != nil {
		return nil, nil, err
	}
	sc.tvf = w
	sc.cols = append(sc.cols,
		column{name: "window_start", typ: arrow.PrimitiveTypes.Int64, pos: x.Pos, window: true},
		column{name: "window_end", typ: arrow.PrimitiveTypes.Int64, pos: x.Pos, window: true})
	return rel, sc, nil
}

// tableRef binds a name in FROM: a CTE, a view or a catalog table.
func (b *binder) tableRef(name ObjectName, alias string, pos Pos) (*pb.Rel, *scope, error) {
	if n := b.namedQuery(name); n != nil {
		q := n.name
		if alias != "" {
			q = alias
		}
		return b.bindNamed(n, q, pos)
	}
	tab, err := b.lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if b.reads != nil {
		b.reads[strings.ToLower(tab.Name)] = true
	}
	rel, err := b.read(tab)
	if err != nil {
		return nil, nil, err
	}
	q := tab.Name
	if alias != "" {
		q = alias
	}
	sc := &scope{unbounded: true}
	if f, err := b.reg.Lookup(tab.Options["connector"]); err == nil {
		if bd, ok := f.(connectors.Boundedness); ok {
			sc.unbounded = !bd.Bounded(tab.Options)
		}
	}
	lateness, _ := strconv.ParseInt(tab.Options["allowed_lateness_ms"], 10, 64)
	for _, f := range tab.Schema.Fields() {
		c := column{name: f.Name, qualifier: q, typ: f.Type, pos: pos, eventTime: f.Name == tab.EventTime}
		if c.eventTime {
			c.lateness = lateness
		}
		sc.cols = append(sc.cols, c)
	}
	return rel, sc, nil
}

// namedQuery finds a CTE (innermost first) or a view by name.
func (b *binder) namedQuery(n ObjectName) *named {
	if len(n.Parts) == 1 {
		for i := len(b.ctes) - 1; i >= 0; i-- {
			if b.ctes[i].name == n.Parts[0].Name || (!n.Parts[0].Quoted && strings.EqualFold(b.ctes[i].name, n.Parts[0].Name)) {
				return b.ctes[i]
			}
		}
	}
	return b.views[strings.ToLower(n.String())]
}

// bindNamed binds a CTE or view reference: its query, seeing only the CTEs
// that were visible where it was defined.
func (b *binder) bindNamed(n *named, qualifier string, pos Pos) (*pb.Rel, *scope, error) {
	saved := b.ctes
	b.ctes = b.ctes[:n.visible:n.visible]
	defer func() { b.ctes = saved }()
	return b.derived(n.query, qualifier, n.columns, pos)
}

// derived binds a subquery used as a table. Columns keep their roles (an
// event-time column stays one) and take the alias as qualifier.
func (b *binder) derived(q *Query, qualifier string, columns []Ident, pos Pos) (*pb.Rel, *scope, error) {
	post := b.post
	b.post = nil
	defer func() { b.post = post }()
	rel, sc, err := b.query(q)
	if err != nil {
		return nil, nil, err
	}
	if columns != nil && len(columns) != len(sc.cols) {
		return nil, nil, b.errf(pos, "%d column names given for a query with %d columns", len(columns), len(sc.cols))
	}
	out := &scope{updating: sc.updating, unbounded: sc.unbounded}
	for i, c := range sc.cols {
		c.qualifier = qualifier
		c.window = false
		if columns != nil {
			c.name = b.spelled(columns[i])
		}
		out.cols = append(out.cols, c)
	}
	return rel, out, nil
}

var windowKinds = map[string]string{"TUMBLE": "TUMBLE", "HOP": "HOP", "SESSION": "SESSION", "CUMULATE": "CUMULATE"}

// windowArgs binds (time, durations...) of a window function.
func (b *binder) windowArgs(name string, args []Expr, pos Pos, sc *scope) (*windowCall, error) {
	kind := windowKinds[strings.ToUpper(name)]
	want := map[string][2]int{"TUMBLE": {2, 3}, "HOP": {3, 4}, "SESSION": {2, 2}, "CUMULATE": {3, 4}}[kind]
	if len(args) < want[0] || len(args) > want[1] {
		forms := map[string]string{
			"TUMBLE":   "TUMBLE(time, size [, offset])",
			"HOP":      "HOP(time, size, slide [, offset])",
			"SESSION":  "SESSION(time, gap)",
			"CUMULATE": "CUMULATE(time, step, size [, offset])",
		}
		return nil, b.errf(pos, "%s takes %s", kind, forms[kind])
	}
	cr, ok := args[0].(*ColumnRef)
	if !ok {
		return nil, b.errf(args[0].Position(), "the first argument of %s must be the event-time column", kind)
	}
	if sc.updating {
		return nil, b.errf(pos, "%s over an updating (changelog) input is not supported", kind)
	}
	idx, err := b.resolve(cr, sc)
	if err != nil {
		return nil, err
	}
	c := sc.cols[idx]
	if !c.eventTime {
		return nil, b.errf(cr.Pos, "%s(%s, ...) needs an event-time column: declare 'event_time_column' = '%s' (and 'watermark_lag_ms') on its table; processing-time windows are not supported", kind, cr.String(), c.name)
	}
	var d []int64
	for _, a := range args[1:] {
		ms, err := b.durationMS(a)
		if err != nil {
			return nil, err
		}
		d = append(d, ms)
	}
	w := &windowCall{kind: kind, timeCol: idx, pos: pos}
	positive := func(v int64, what string, at Expr) error {
		if v <= 0 {
			return b.errf(at.Position(), "%s %s must be positive", kind, what)
		}
		return nil
	}
	switch kind {
	case "TUMBLE":
		w.size = d[0]
		if err := positive(w.size, "size", args[1]); err != nil {
			return nil, err
		}
		if len(d) > 1 {
			w.offset = d[1]
		}
	case "HOP", "CUMULATE":
		// HOP(time, size, slide) as documented; Flink writes the slide first.
		// The larger interval is the size either way: a window shorter than
		// its slide would drop rows.
		w.size, w.slide = max(d[0], d[1]), min(d[0], d[1])
		if err := positive(w.slide, "slide/step", args[1]); err != nil {
			return nil, err
		}
		if kind == "CUMULATE" && w.size%w.slide != 0 {
			return nil, b.errf(args[2].Position(), "CUMULATE size (%d ms) must be a multiple of its step (%d ms)", w.size, w.slide)
		}
		if len(d) > 2 {
			w.offset = d[2]
		}
	case "SESSION":
		w.size = d[0]
		if err := positive(w.size, "gap", args[1]); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// resolve finds a column reference in a scope.
func (b *binder) resolve(cr *ColumnRef, sc *scope) (int, error) {
	found := -1
	for pass := 0; pass < 2 && found < 0; pass++ {
		for i, c := range sc.cols {
			if cr.Table != nil && !strings.EqualFold(c.qualifier, cr.Table.Name) {
				continue
			}
			match := c.name == cr.Column.Name
			if pass == 1 && !cr.Column.Quoted {
				match = strings.EqualFold(c.name, cr.Column.Name)
			}
			if match {
				if found >= 0 {
					return 0, b.errf(cr.Pos, "column %s is ambiguous", cr.String())
				}
				found = i
			}
		}
	}
	if found < 0 {
		var names []string
		for _, c := range sc.cols {
			names = append(names, c.name)
		}
		msg := fmt.Sprintf("column %s does not exist", cr.String())
		if s := suggest(cr.Column.Name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		return 0, b.errf(cr.Pos, "%s", msg)
	}
	return found, nil
}

func (b *binder) selectStmt(s *Select) (*pb.Rel, *scope, error) {
	if s.Distinct {
		return b.distinct(s)
	}
	var rel *pb.Rel
	var sc *scope
	var err error
	if s.From == nil {
		// SELECT without FROM reads one row of no columns.
		rel, sc, err = b.virtualTable(nil, nil, s.Pos)
	} else {
		rel, sc, err = b.from(s.From)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := b.limitTopN(s.Where, sc); err != nil {
		return nil, nil, err
	}
	if s.Where != nil {
		if hasAggregate(s.Where) {
			return nil, nil, b.errf(s.Where.Position(), "aggregate functions are not allowed in WHERE")
		}
		cond, err := b.expr(s.Where, sc)
		if err != nil {
			return nil, nil, err
		}
		if cond.typ.ID() != arrow.BOOL && cond.typ.ID() != arrow.NULL {
			return nil, nil, b.errf(s.Where.Position(), "WHERE needs a BOOLEAN condition, not %s", kernels.SQLTypeName(cond.typ))
		}
		rel = &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Common: substrait.Direct(), Input: rel, Condition: cond.pb}}}
	}
	agg := len(s.GroupBy) > 0 || s.Having != nil || sc.tvf != nil
	for _, it := range s.Items {
		if it.Expr != nil && hasAggregate(it.Expr) {
			agg = true
		}
	}
	if agg {
		return b.aggregate(s, rel, sc)
	}
	return b.projection(s.Items, rel, sc)
}

// distinct binds SELECT DISTINCT as a grouping on every output column with
// no aggregate: the first occurrence of each row passes, later ones do not,
// so the output is insert-only. Its state holds every distinct row.
func (b *binder) distinct(s *Select) (*pb.Rel, *scope, error) {
	inner := *s
	inner.Distinct = false
	if len(s.GroupBy) > 0 || s.Having != nil {
		return nil, nil, b.errf(s.Pos, "SELECT DISTINCT with GROUP BY is not supported; the grouped rows are distinct already")
	}
	rel, sc, err := b.selectStmt(&inner)
	if err != nil {
		return nil, nil, err
	}
	return b.distinctRel(rel, sc, s.Pos)
}

// distinctRel keeps the first occurrence of each row of rel.
func (b *binder) distinctRel(rel *pb.Rel, sc *scope, pos Pos) (*pb.Rel, *scope, error) {
	if sc.updating {
		return nil, nil, b.errf(pos, "DISTINCT over an updating (changelog) input is not supported")
	}
	if sc.unbounded && !b.unboundedState {
		return nil, nil, b.errf(pos, "DISTINCT over an unbounded source keeps every distinct row forever: accept unbounded state with SET 'table.exec.state.ttl' = '0'")
	}
	groups := make([]*pb.Expression, len(sc.cols))
	for i := range groups {
		groups[i] = substrait.FieldRef(i)
	}
	rel = &pb.Rel{RelType: &pb.Rel_Aggregate{Aggregate: &pb.AggregateRel{
		Common:              substrait.Direct(),
		Input:               rel,
		GroupingExpressions: groups,
		Groupings:           []*pb.AggregateRel_Grouping{{ExpressionReferences: seq(len(groups))}},
	}}}
	out := &scope{unbounded: sc.unbounded}
	for _, c := range sc.cols {
		c.eventTime = false
		out.cols = append(out.cols, c)
	}
	return rel, out, nil
}

// projection binds a non-aggregating select list.
func (b *binder) projection(items []*SelectItem, rel *pb.Rel, sc *scope) (*pb.Rel, *scope, error) {
	// A ROW_NUMBER() item adds a window relation whose rank column the
	// select list then references.
	var rnRel *pb.ConsistentPartitionWindowRel
	rnItem := -1
	for i, it := range items {
		if f, ok := it.Expr.(*FuncCall); ok && f.Over != nil {
			if rnItem >= 0 {
				return nil, nil, b.errf(f.Pos, "only one ROW_NUMBER() per SELECT is supported")
			}
			var err error
			if rel, rnRel, err = b.rowNumber(f, rel, sc); err != nil {
				return nil, nil, err
			}
			rnItem = i
		}
	}
	nIn := len(sc.cols)
	if rnRel != nil {
		sc = &scope{cols: append(append([]column{}, sc.cols...), column{name: "rn", typ: arrow.PrimitiveTypes.Int64, hidden: true}), updating: sc.updating, unbounded: sc.unbounded}
		nIn++
	}
	out := &scope{updating: sc.updating, unbounded: sc.unbounded}
	var exprs []*pb.Expression
	for i, it := range items {
		if it.Star {
			for ci, c := range sc.cols {
				if c.window || c.hidden {
					continue
				}
				if it.Qualifier != nil && !strings.EqualFold(c.qualifier, it.Qualifier.Name) {
					continue
				}
				exprs = append(exprs, substrait.FieldRef(ci))
				c.pos = it.Pos
				out.cols = append(out.cols, c)
			}
			continue
		}
		var e bound
		var err error
		if i == rnItem {
			e = bound{pb: substrait.FieldRef(nIn - 1), typ: arrow.PrimitiveTypes.Int64, col: nIn - 1}
		} else if e, err = b.expr(it.Expr, sc); err != nil {
			return nil, nil, err
		}
		if e.typ.ID() == arrow.NULL {
			return nil, nil, b.errf(it.Expr.Position(), "NULL needs a type here: write CAST(NULL AS type)")
		}
		c := column{name: b.itemName(it, i, e, sc), typ: e.typ, pos: it.Pos}
		if e.col >= 0 {
			c.eventTime = sc.cols[e.col].eventTime
			c.qualifier = sc.cols[e.col].qualifier
		}
		if i == rnItem {
			c.rowNumber = rnRel
			// Only a window Top-N (partitioned by a window's end) is
			// insert-only; otherwise the ranking is a changelog.
			out.updating = b.topNTime[rnRel] < 0
		}
		exprs = append(exprs, e.pb)
		out.cols = append(out.cols, c)
	}
	uniqueNames(out.cols)
	return project(rel, nIn, exprs), out, nil
}

// itemName is the output name of a select item: its alias as written, the
// declared name of the column it references, or Flink's EXPR$i.
func (b *binder) itemName(it *SelectItem, i int, e bound, sc *scope) string {
	if it.Alias != nil {
		return b.spelled(*it.Alias)
	}
	if cr, ok := it.Expr.(*ColumnRef); ok {
		if e.col >= 0 {
			return sc.cols[e.col].name
		}
		return b.spelled(cr.Column)
	}
	return "EXPR$" + strconv.Itoa(i)
}

// valuesRows binds VALUES (row), ...: a bounded virtual table whose columns
// take the common type of their values and are named EXPR$i, as in Flink.
func (b *binder) valuesRows(v *Values) (*pb.Rel, *scope, error) {
	if len(v.Rows) == 0 {
		return nil, nil, b.errf(v.Pos, "VALUES needs a row")
	}
	n := len(v.Rows[0].Exprs)
	rows := make([][]bound, len(v.Rows))
	types := make([]arrow.DataType, n)
	for i := range types {
		types[i] = arrow.Null
	}
	empty := &scope{}
	for r, row := range v.Rows {
		if len(row.Exprs) != n {
			return nil, nil, b.errf(row.Pos, "VALUES rows have %d and %d values", n, len(row.Exprs))
		}
		for c, e := range row.Exprs {
			x, err := b.expr(e, empty)
			if err != nil {
				return nil, nil, err
			}
			t, ok := common(types[c], x.typ)
			if !ok {
				return nil, nil, b.errf(e.Position(), "VALUES column %d mixes %s and %s", c+1, kernels.SQLTypeName(types[c]), kernels.SQLTypeName(x.typ))
			}
			types[c] = t
			rows[r] = append(rows[r], x)
		}
	}
	for c, t := range types {
		if t.ID() == arrow.NULL {
			return nil, nil, b.errf(v.Pos, "VALUES column %d holds only NULL: CAST one to a type", c+1)
		}
	}
	return b.virtualTable(rows, types, v.Pos)
}

// virtualTable builds a ReadRel over literal rows (nil rows: one row of no
// columns, for SELECT without FROM). It is bounded.
func (b *binder) virtualTable(rows [][]bound, types []arrow.DataType, pos Pos) (*pb.Rel, *scope, error) {
	fields := make([]arrow.Field, len(types))
	sc := &scope{}
	for i, t := range types {
		name := "EXPR$" + strconv.Itoa(i)
		fields[i] = arrow.Field{Name: name, Type: t, Nullable: true}
		sc.cols = append(sc.cols, column{name: name, typ: t, pos: pos})
	}
	ns, err := substrait.Schema(arrow.NewSchema(fields, nil))
	if err != nil {
		return nil, nil, b.errf(pos, "%v", err)
	}
	vt := &pb.ReadRel_VirtualTable{}
	if rows == nil {
		vt.Expressions = []*pb.Expression_Nested_Struct{{}}
	}
	for _, row := range rows {
		st := &pb.Expression_Nested_Struct{}
		for c, x := range row {
			st.Fields = append(st.Fields, b.cast(x, types[c]).pb)
		}
		vt.Expressions = append(vt.Expressions, st)
	}
	return &pb.Rel{RelType: &pb.Rel_Read{Read: &pb.ReadRel{
		Common:     substrait.Direct(),
		BaseSchema: ns,
		ReadType:   &pb.ReadRel_VirtualTable_{VirtualTable: vt},
	}}}, sc, nil
}

// uniqueNames renames repeated output columns as Flink does (k, k0, k1, ...)
// so that every output row has distinct keys.
func uniqueNames(cols []column) {
	seen := map[string]bool{}
	for i := range cols {
		name := cols[i].name
		if seen[strings.ToLower(name)] {
			for n := 0; ; n++ {
				cand := name + strconv.Itoa(n)
				if !seen[strings.ToLower(cand)] {
					name = cand
					break
				}
			}
			cols[i].name = name
		}
		seen[strings.ToLower(name)] = true
	}
}
