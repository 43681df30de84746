// Package sql parses Clink's SQL dialect (Flink SQL) into an AST.
//
// It does syntax only: names are not resolved and types are not checked;
// that is the binder's job. Every node records the position of its first
// token (and binary operators the position of the operator), so the binder
// can report semantic errors with Errorf in the same format as syntax
// errors.
//
// Normalization done by the parser:
//   - An unquoted identifier is lower-cased into Ident.Name (Quoted false);
//     a quoted one (`x` or "x") keeps its case (Quoted true).
//   - Keywords, unquoted function names, type names and time units are
//     upper-cased (ASCII letters only).
//   - Type aliases are mapped to one base type (see TypeName).
//   - '!=' becomes '<>'; '-' directly before a numeric literal is folded
//     into the literal, so -9223372036854775808 is representable.
//   - Parentheses are not kept; String re-inserts those the tree needs.
package sql

import "time"

// Node is implemented by every AST node.
type Node interface {
	// Position is the position of the node's first token.
	Position() Pos
	// String re-prints the node as SQL. The output is deterministic and
	// parses back to an equal tree (positions aside).
	String() string
}

// Statement is a top-level statement of a Script.
type Statement interface {
	Node
	statementNode()
}

// Expr is a scalar expression.
type Expr interface {
	Node
	exprNode()
}

// TableExpr is an item of a FROM clause.
type TableExpr interface {
	Node
	tableExprNode()
}

// QueryExpr is the body of a query: *Select, *SetOp, *Values, or a
// parenthesized *Query that has its own WITH, ORDER BY or LIMIT.
type QueryExpr interface {
	Node
	queryExprNode()
}

// Script is a parsed sequence of statements.
type Script struct {
	Statements []Statement
	Src        string // the parsed source, for Errorf
}

// Ident is an identifier. Name is lower-cased unless Quoted.
type Ident struct {
	Name   string
	Quoted bool
	Pos    Pos
}

// ObjectName is a possibly qualified catalog object name: t, db.t or
// catalog.db.t (at most three parts).
type ObjectName struct {
	Parts []Ident
	Pos   Pos
}

// TypeName is a normalized SQL type. Base is one of BIGINT, INT, SMALLINT,
// TINYINT, DOUBLE, FLOAT, VARCHAR, BOOLEAN, TIMESTAMP, TIMESTAMP_LTZ,
// DECIMAL, DATE. Aliases are folded: INT8→BIGINT, INTEGER→INT, DOUBLE
// PRECISION/FLOAT8→DOUBLE, REAL→FLOAT (FLOAT is 4 bytes, as in Flink),
// STRING/TEXT/CHAR(n)/VARCHAR(n)→VARCHAR, BOOL→BOOLEAN, NUMERIC/DEC→DECIMAL,
// TIMESTAMP(p) WITH LOCAL TIME ZONE→TIMESTAMP_LTZ.
//
// HasPrecision reports whether a length/precision was written: VARCHAR(n)
// and CHAR(n) set Precision=n, TIMESTAMP(p) and TIMESTAMP_LTZ(p) set
// Precision=p, DECIMAL(p[,s]) sets Precision=p, Scale=s (0 if omitted).
// STRING, TEXT, bare VARCHAR and bare CHAR leave HasPrecision false; the
// binder picks the default.
type TypeName struct {
	Base         string
	Precision    int
	Scale        int
	HasPrecision bool
	Pos          Pos
}

// Type bases.
const (
	TypeBigint       = "BIGINT"
	TypeInt          = "INT"
	TypeSmallint     = "SMALLINT"
	TypeTinyint      = "TINYINT"
	TypeDouble       = "DOUBLE"
	TypeFloat        = "FLOAT"
	TypeVarchar      = "VARCHAR"
	TypeBoolean      = "BOOLEAN"
	TypeTimestamp    = "TIMESTAMP"
	TypeTimestampLTZ = "TIMESTAMP_LTZ"
	TypeDecimal      = "DECIMAL"
	TypeDate         = "DATE"
)

// ---- Statements ----

// Query is a full query: [WITH ...] body [ORDER BY ...] [LIMIT n]. As a
// Statement it is a SELECT statement.
type Query struct {
	With    []*CTE
	Body    QueryExpr
	OrderBy []*OrderItem
	Limit   Expr // nil if absent
	Pos     Pos
}

// CTE is one common table expression: name [(columns)] AS (query).
type CTE struct {
	Name    Ident
	Columns []Ident
	Query   *Query
	Pos     Pos
}

// Insert is INSERT INTO table [(columns)] query.
type Insert struct {
	Table   ObjectName
	Columns []Ident // nil: all columns in table order
	Query   *Query
	Pos     Pos
}

// CreateTable is CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name (...) WITH (...).
type CreateTable struct {
	Name        ObjectName
	Temporary   bool
	IfNotExists bool
	Columns     []*ColumnDef
	Watermark   *Watermark  // nil if absent
	PrimaryKey  *PrimaryKey // nil if absent; also set by a column-level PRIMARY KEY
	Options     []*Option   // in source order; keys are unique
	Pos         Pos
}

// ColumnDef is a physical column: name type [NOT NULL].
type ColumnDef struct {
	Name    Ident
	Type    TypeName
	NotNull bool
	Pos     Pos
}

// Watermark is WATERMARK FOR column AS expr.
type Watermark struct {
	Column Ident
	Expr   Expr
	Pos    Pos
}

// PrimaryKey is [CONSTRAINT name] PRIMARY KEY (columns) NOT ENFORCED.
type PrimaryKey struct {
	Name    *Ident // CONSTRAINT name, nil if absent
	Columns []Ident
	Pos     Pos
}

// Option is one 'key' = 'value' pair of a WITH clause. A bare identifier
// key is kept as written (not lower-cased).
type Option struct {
	Key      string
	Value    string
	Pos      Pos // of the key
	ValuePos Pos
}

// CreateView is CREATE [TEMPORARY] VIEW [IF NOT EXISTS] name [(columns)] AS query.
type CreateView struct {
	Name        ObjectName
	Temporary   bool
	IfNotExists bool
	Columns     []Ident
	Query       *Query
	Pos         Pos
}

// DropTable is DROP [TEMPORARY] TABLE [IF EXISTS] name.
type DropTable struct {
	Name      ObjectName
	Temporary bool
	IfExists  bool
	Pos       Pos
}

// Set is SET 'key' = 'value'. A bare identifier key is kept as written.
type Set struct {
	Key      string
	Value    string
	Pos      Pos
	ValuePos Pos
}

// Explain is EXPLAIN [PLAN FOR] statement.
type Explain struct {
	Stmt Statement
	Pos  Pos
}

// ---- Query bodies ----

// Select is one SELECT block.
type Select struct {
	Distinct bool
	Items    []*SelectItem
	From     TableExpr // nil if there is no FROM
	Where    Expr      // nil if absent
	GroupBy  []Expr
	Having   Expr // nil if absent
	Pos      Pos
}

// SelectItem is *, t.*, or expr [AS alias].
type SelectItem struct {
	Star      bool   // * or t.*
	Qualifier *Ident // t in t.*; nil otherwise
	Expr      Expr   // nil if Star
	Alias     *Ident // nil if absent
	Pos       Pos
}

// SetOpKind is the operator of a SetOp.
type SetOpKind string

// Set operators.
const (
	Union     SetOpKind = "UNION"
	Intersect SetOpKind = "INTERSECT"
	Except    SetOpKind = "EXCEPT"
)

// SetOp is left UNION|INTERSECT|EXCEPT [ALL] right. INTERSECT binds tighter
// than UNION and EXCEPT; all are left-associative.
type SetOp struct {
	Op          SetOpKind
	All         bool
	Left, Right QueryExpr
	Pos         Pos // of Left
	OpPos       Pos
}

// Values is VALUES (row), (row), ...
type Values struct {
	Rows []*ValuesRow
	Pos  Pos
}

// ValuesRow is one parenthesized row of a Values.
type ValuesRow struct {
	Exprs []Expr
	Pos   Pos
}

// OrderItem is expr [ASC|DESC] [NULLS FIRST|LAST].
type OrderItem struct {
	Expr  Expr
	Desc  bool
	Nulls NullsOrder
	Pos   Pos
}

// NullsOrder is an explicit NULLS FIRST/LAST, or NullsDefault.
type NullsOrder uint8

// Null orderings.
const (
	NullsDefault NullsOrder = iota
	NullsFirst
	NullsLast
)

// ---- FROM items ----

// TableName is a reference to a catalog table, view or CTE.
type TableName struct {
	Name  ObjectName
	AsOf  Expr // FOR SYSTEM_TIME AS OF expr (temporal join); nil if absent
	Alias *Ident
	Pos   Pos
}

// DerivedTable is (query) [AS] alias [(columns)].
type DerivedTable struct {
	Query   *Query
	Alias   *Ident
	Columns []Ident // column aliases; nil if absent
	Pos     Pos     // of '('
}

// JoinKind is the kind of a Join.
type JoinKind string

// Join kinds. JoinComma is the implicit cross join of "FROM a, b".
const (
	JoinInner JoinKind = "INNER"
	JoinLeft  JoinKind = "LEFT"
	JoinRight JoinKind = "RIGHT"
	JoinFull  JoinKind = "FULL"
	JoinCross JoinKind = "CROSS"
	JoinComma JoinKind = ","
)

// Join is left [kind] JOIN right [ON cond | USING (columns)]. Inner and
// outer joins have exactly one of On and Using; cross and comma joins have
// neither.
type Join struct {
	Kind        JoinKind
	Left, Right TableExpr
	On          Expr
	Using       []Ident
	Pos         Pos // of Left
	OpPos       Pos // of the first join keyword, or of ','
}

// TableFunc is a window table-valued function:
//
//	TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) [AS alias]
//
// The TABLE argument must come first. Args are the remaining arguments
// other than DESCRIPTOR, in order (for HOP: slide, size).
type TableFunc struct {
	Name       string // upper-cased: TUMBLE, HOP, CUMULATE, SESSION, ...
	Table      ObjectName
	Descriptor []Ident // columns of DESCRIPTOR(...); nil if absent
	Args       []Expr
	Alias      *Ident
	Pos        Pos // of the outer TABLE keyword
}

// ---- Expressions ----

// ColumnRef is a column reference: column or table.column.
type ColumnRef struct {
	Table  *Ident // nil if unqualified
	Column Ident
	Pos    Pos
}

// IntLit is an integer literal that fits in int64.
type IntLit struct {
	Value int64
	Text  string // as written, with a folded '-' sign
	Pos   Pos
}

// NumberLit is a decimal (1.5, .5) or approximate (1e3) numeric literal.
// In Flink the first is DECIMAL and the second DOUBLE; Exponent tells them
// apart. Value is the nearest float64; use Text for exact decimals.
type NumberLit struct {
	Value    float64
	Text     string // as written, with a folded '-' sign
	Exponent bool
	Pos      Pos
}

// StringLit is a character string literal (unescaped).
type StringLit struct {
	Value string
	Pos   Pos
}

// BoolLit is TRUE or FALSE.
type BoolLit struct {
	Value bool
	Pos   Pos
}

// NullLit is NULL.
type NullLit struct {
	Pos Pos
}

// IntervalLit is INTERVAL '10' SECOND, or INTERVAL '10 seconds'.
type IntervalLit struct {
	Value    string // the number as written, e.g. "10", "-1.5"
	Unit     string // MILLISECOND, SECOND, MINUTE, HOUR or DAY (plural folded)
	Duration time.Duration
	Pos      Pos
}

// TypedLit is TIMESTAMP '...' or DATE '...'. Value is not validated.
type TypedLit struct {
	Type  TypeName
	Value string
	Pos   Pos
}

// BinaryOp is the operator of a BinaryExpr.
type BinaryOp string

// Binary operators.
const (
	OpOr                BinaryOp = "OR"
	OpAnd               BinaryOp = "AND"
	OpEq                BinaryOp = "="
	OpNe                BinaryOp = "<>" // also written !=
	OpLt                BinaryOp = "<"
	OpLe                BinaryOp = "<="
	OpGt                BinaryOp = ">"
	OpGe                BinaryOp = ">="
	OpIsDistinctFrom    BinaryOp = "IS DISTINCT FROM"
	OpIsNotDistinctFrom BinaryOp = "IS NOT DISTINCT FROM"
	OpConcat            BinaryOp = "||"
	OpAdd               BinaryOp = "+"
	OpSub               BinaryOp = "-"
	OpMul               BinaryOp = "*"
	OpDiv               BinaryOp = "/"
	OpMod               BinaryOp = "%"
)

// BinaryExpr is Left Op Right.
type BinaryExpr struct {
	Op          BinaryOp
	Left, Right Expr
	Pos         Pos // of Left
	OpPos       Pos
}

// UnaryOp is the operator of a UnaryExpr.
type UnaryOp string

// Unary operators.
const (
	OpNot  UnaryOp = "NOT"
	OpNeg  UnaryOp = "-"
	OpPlus UnaryOp = "+"
)

// UnaryExpr is Op X.
type UnaryExpr struct {
	Op  UnaryOp
	X   Expr
	Pos Pos // of the operator
}

// IsKind is what an IsExpr tests for.
type IsKind uint8

// IS predicates.
const (
	IsNull IsKind = iota
	IsTrue
	IsFalse
)

// IsExpr is X IS [NOT] NULL|TRUE|FALSE.
type IsExpr struct {
	X     Expr
	Not   bool
	Kind  IsKind
	Pos   Pos // of X
	OpPos Pos // of IS
}

// BetweenExpr is X [NOT] BETWEEN Low AND High.
type BetweenExpr struct {
	X, Low, High Expr
	Not          bool
	Pos          Pos // of X
	OpPos        Pos // of NOT or BETWEEN
}

// InExpr is X [NOT] IN (list) or X [NOT] IN (query); exactly one of List
// and Query is set.
type InExpr struct {
	X     Expr
	Not   bool
	List  []Expr
	Query *Query
	Pos   Pos // of X
	OpPos Pos // of NOT or IN
}

// LikeExpr is X [NOT] LIKE Pattern [ESCAPE Escape].
type LikeExpr struct {
	X, Pattern Expr
	Escape     Expr // nil if absent
	Not        bool
	Pos        Pos // of X
	OpPos      Pos // of NOT or LIKE
}

// FuncCall is a function call, aggregate or window function. Name is
// upper-cased unless Quoted. POSITION(a IN b) is FuncCall{Name: "POSITION",
// Args: [a, b]}; SUBSTRING(s FROM a FOR b) is FuncCall{Name: "SUBSTRING",
// Args: [s, a, b]}. CURRENT_TIMESTAMP, CURRENT_DATE, CURRENT_TIME,
// LOCALTIME and LOCALTIMESTAMP are calls without arguments.
type FuncCall struct {
	Name     string
	Quoted   bool
	Args     []Expr
	Star     bool        // COUNT(*)
	Distinct bool        // COUNT(DISTINCT x)
	Filter   Expr        // agg(...) FILTER (WHERE Filter); nil if absent
	Over     *WindowSpec // nil unless a window function call
	Pos      Pos
}

// WindowSpec is OVER ([PARTITION BY ...] [ORDER BY ...] [frame]).
type WindowSpec struct {
	PartitionBy []Expr
	OrderBy     []*OrderItem
	Frame       *WindowFrame // nil if absent
	Pos         Pos          // of OVER
}

// FrameUnit is ROWS or RANGE.
type FrameUnit string

// Frame units.
const (
	FrameRows  FrameUnit = "ROWS"
	FrameRange FrameUnit = "RANGE"
)

// WindowFrame is ROWS|RANGE Start, or ROWS|RANGE BETWEEN Start AND End.
type WindowFrame struct {
	Unit  FrameUnit
	Start *FrameBound
	End   *FrameBound // nil without BETWEEN
	Pos   Pos
}

// BoundKind is the kind of a FrameBound.
type BoundKind uint8

// Frame bound kinds.
const (
	UnboundedPreceding BoundKind = iota
	Preceding                    // Offset PRECEDING
	CurrentRow
	Following // Offset FOLLOWING
	UnboundedFollowing
)

// FrameBound is one end of a WindowFrame.
type FrameBound struct {
	Kind   BoundKind
	Offset Expr // set for Preceding and Following only
	Pos    Pos
}

// CastExpr is CAST(X AS Type), or TRY_CAST when Try.
type CastExpr struct {
	X    Expr
	Type TypeName
	Try  bool
	Pos  Pos
}

// CaseExpr is CASE [Operand] WHEN ... THEN ... [ELSE Else] END.
type CaseExpr struct {
	Operand Expr // nil for a searched CASE
	Whens   []*WhenClause
	Else    Expr // nil if absent
	Pos     Pos
}

// WhenClause is WHEN Cond THEN Result. With a CASE operand, Cond is the
// value compared to it.
type WhenClause struct {
	Cond, Result Expr
	Pos          Pos
}

// ExtractExpr is EXTRACT(Unit FROM X).
type ExtractExpr struct {
	Unit    string // upper-cased: YEAR, MONTH, DAY, HOUR, EPOCH, ...
	UnitPos Pos
	X       Expr
	Pos     Pos
}

// TrimExpr is TRIM([BOTH|LEADING|TRAILING] [Chars] FROM X) or TRIM(X).
type TrimExpr struct {
	Mode  string // BOTH (the default), LEADING or TRAILING
	Chars Expr   // nil: spaces
	X     Expr
	Pos   Pos
}

// SubqueryExpr is a scalar subquery (query).
type SubqueryExpr struct {
	Query *Query
	Pos   Pos // of '('
}

// ExistsExpr is EXISTS (query).
type ExistsExpr struct {
	Query *Query
	Pos   Pos
}

// ---- Position methods and interface markers ----

func (n Ident) Position() Pos      { return n.Pos }
func (n ObjectName) Position() Pos { return n.Pos }
func (n TypeName) Position() Pos   { return n.Pos }

func (n *Query) Position() Pos        { return n.Pos }
func (n *CTE) Position() Pos          { return n.Pos }
func (n *Insert) Position() Pos       { return n.Pos }
func (n *CreateTable) Position() Pos  { return n.Pos }
func (n *ColumnDef) Position() Pos    { return n.Pos }
func (n *Watermark) Position() Pos    { return n.Pos }
func (n *PrimaryKey) Position() Pos   { return n.Pos }
func (n *Option) Position() Pos       { return n.Pos }
func (n *CreateView) Position() Pos   { return n.Pos }
func (n *DropTable) Position() Pos    { return n.Pos }
func (n *Set) Position() Pos          { return n.Pos }
func (n *Explain) Position() Pos      { return n.Pos }
func (n *Select) Position() Pos       { return n.Pos }
func (n *SelectItem) Position() Pos   { return n.Pos }
func (n *SetOp) Position() Pos        { return n.Pos }
func (n *Values) Position() Pos       { return n.Pos }
func (n *ValuesRow) Position() Pos    { return n.Pos }
func (n *OrderItem) Position() Pos    { return n.Pos }
func (n *TableName) Position() Pos    { return n.Pos }
func (n *DerivedTable) Position() Pos { return n.Pos }
func (n *Join) Position() Pos         { return n.Pos }
func (n *TableFunc) Position() Pos    { return n.Pos }
func (n *ColumnRef) Position() Pos    { return n.Pos }
func (n *IntLit) Position() Pos       { return n.Pos }
func (n *NumberLit) Position() Pos    { return n.Pos }
func (n *StringLit) Position() Pos    { return n.Pos }
func (n *BoolLit) Position() Pos      { return n.Pos }
func (n *NullLit) Position() Pos      { return n.Pos }
func (n *IntervalLit) Position() Pos  { return n.Pos }
func (n *TypedLit) Position() Pos     { return n.Pos }
func (n *BinaryExpr) Position() Pos   { return n.Pos }
func (n *UnaryExpr) Position() Pos    { return n.Pos }
func (n *IsExpr) Position() Pos       { return n.Pos }
func (n *BetweenExpr) Position() Pos  { return n.Pos }
func (n *InExpr) Position() Pos       { return n.Pos }
func (n *LikeExpr) Position() Pos     { return n.Pos }
func (n *FuncCall) Position() Pos     { return n.Pos }
func (n *WindowSpec) Position() Pos   { return n.Pos }
func (n *WindowFrame) Position() Pos  { return n.Pos }
func (n *FrameBound) Position() Pos   { return n.Pos }
func (n *CastExpr) Position() Pos     { return n.Pos }
func (n *CaseExpr) Position() Pos     { return n.Pos }
func (n *WhenClause) Position() Pos   { return n.Pos }
func (n *ExtractExpr) Position() Pos  { return n.Pos }
func (n *TrimExpr) Position() Pos     { return n.Pos }
func (n *SubqueryExpr) Position() Pos { return n.Pos }
func (n *ExistsExpr) Position() Pos   { return n.Pos }

func (*Query) statementNode()       {}
func (*Insert) statementNode()      {}
func (*CreateTable) statementNode() {}
func (*CreateView) statementNode()  {}
func (*DropTable) statementNode()   {}
func (*Set) statementNode()         {}
func (*Explain) statementNode()     {}

func (*Query) queryExprNode()  {}
func (*Select) queryExprNode() {}
func (*SetOp) queryExprNode()  {}
func (*Values) queryExprNode() {}

func (*TableName) tableExprNode()    {}
func (*DerivedTable) tableExprNode() {}
func (*Join) tableExprNode()         {}
func (*TableFunc) tableExprNode()    {}

func (*ColumnRef) exprNode()    {}
func (*IntLit) exprNode()       {}
func (*NumberLit) exprNode()    {}
func (*StringLit) exprNode()    {}
func (*BoolLit) exprNode()      {}
func (*NullLit) exprNode()      {}
func (*IntervalLit) exprNode()  {}
func (*TypedLit) exprNode()     {}
func (*BinaryExpr) exprNode()   {}
func (*UnaryExpr) exprNode()    {}
func (*IsExpr) exprNode()       {}
func (*BetweenExpr) exprNode()  {}
func (*InExpr) exprNode()       {}
func (*LikeExpr) exprNode()     {}
func (*FuncCall) exprNode()     {}
func (*CastExpr) exprNode()     {}
func (*CaseExpr) exprNode()     {}
func (*ExtractExpr) exprNode()  {}
func (*TrimExpr) exprNode()     {}
func (*SubqueryExpr) exprNode() {}
func (*ExistsExpr) exprNode()   {}

// String returns NULL, TRUE or FALSE.
func (k IsKind) String() string {
	switch k {
	case IsTrue:
		return "TRUE"
	case IsFalse:
		return "FALSE"
	}
	return "NULL"
}
