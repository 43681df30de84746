package sql

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// printTests map source to its canonical re-printed form ("" = unchanged).
// They cover every construct; TestPrintRoundTrip also re-parses each output.
var printTests = []struct{ src, want string }{
	// SELECT basics
	{"SELECT 1", ""},
	{"select a, b as c, d e from t", "SELECT a, b AS c, d AS e FROM t"},
	{"SELECT * FROM t", ""},
	{"SELECT t.*, u.x FROM t, u", ""},
	{"SELECT DISTINCT a FROM t", ""},
	{"SELECT ALL a FROM t", "SELECT a FROM t"},
	{"SELECT a FROM t WHERE a > 1 GROUP BY a, b HAVING COUNT(*) > 2 ORDER BY a DESC, b ASC, c NULLS FIRST LIMIT 10",
		"SELECT a FROM t WHERE a > 1 GROUP BY a, b HAVING COUNT(*) > 2 ORDER BY a DESC, b, c NULLS FIRST LIMIT 10"},
	{"SELECT a FROM t ORDER BY a DESC NULLS LAST", ""},
	{"SELECT a FROM db.t", ""},
	{"SELECT a FROM cat.db.t AS x", ""},
	// identifiers
	{"SELECT `My Col`, \"Other\", `a``b`, \"a\"\"b\", Abc FROM T", "SELECT `My Col`, `Other`, `a``b`, `a\"b`, abc FROM t"},
	{"SELECT `größe`, größe, Größe FROM t", "SELECT `größe`, größe, größe FROM t"},
	{"SELECT `select`, `timestamp`, timestamp, date FROM t", "SELECT `select`, `timestamp`, `timestamp`, `date` FROM t"},
	// set operations
	{"SELECT 1 UNION ALL SELECT 2", ""},
	{"SELECT 1 UNION SELECT 2 UNION DISTINCT SELECT 3", "SELECT 1 UNION SELECT 2 UNION SELECT 3"},
	{"SELECT 1 UNION ALL SELECT 2 INTERSECT SELECT 3", ""},
	{"(SELECT 1 UNION ALL SELECT 2) INTERSECT SELECT 3", ""},
	{"SELECT 1 EXCEPT (SELECT 2 EXCEPT SELECT 3)", ""},
	{"(SELECT 1) UNION ALL (SELECT 2)", "SELECT 1 UNION ALL SELECT 2"},
	{"(SELECT a FROM t ORDER BY a LIMIT 1) UNION ALL SELECT 2 ORDER BY 1", ""},
	{"((SELECT 1))", "SELECT 1"},
	{"VALUES (1, 'a'), (2, 'b')", ""},
	// WITH
	{"WITH a AS (SELECT 1), b (x, y) AS (SELECT 1, 2) SELECT * FROM a, b", ""},
	// FROM
	{"SELECT * FROM a JOIN b ON a.k = b.k", ""},
	{"SELECT * FROM a INNER JOIN b ON a.k = b.k", "SELECT * FROM a JOIN b ON a.k = b.k"},
	{"SELECT * FROM a LEFT OUTER JOIN b ON TRUE RIGHT JOIN c ON TRUE FULL OUTER JOIN d ON TRUE",
		"SELECT * FROM a LEFT JOIN b ON TRUE RIGHT JOIN c ON TRUE FULL JOIN d ON TRUE"},
	{"SELECT * FROM a CROSS JOIN b, c JOIN d USING (k, j)", ""},
	{"SELECT * FROM a, (b JOIN c ON x)", "SELECT * FROM a, b JOIN c ON x"},
	{"SELECT * FROM (a, b) JOIN c ON x", ""},
	{"SELECT * FROM a JOIN (b JOIN c ON x) ON y", ""},
	{"SELECT * FROM a, (b, c)", ""},
	{"SELECT * FROM (SELECT 1 AS x) s", "SELECT * FROM (SELECT 1 AS x) AS s"},
	{"SELECT * FROM (SELECT 1) AS s (x)", ""},
	{"SELECT * FROM (VALUES (1)) AS v (x)", ""},
	{"SELECT * FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.c = r.c", ""},
	{"SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end",
		"SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' MINUTE)) GROUP BY window_start, window_end"},
	{"SELECT * FROM TABLE(hop(TABLE db.bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) AS w",
		"SELECT * FROM TABLE(HOP(TABLE db.bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) AS w"},
	// expressions: operators and precedence
	{"SELECT a + b * c - d / e % f", ""},
	{"SELECT (a + b) * c, a - (b - c), (a - b) - c", "SELECT (a + b) * c, a - (b - c), a - b - c"},
	{"SELECT a || b || c, (a || b) = c", "SELECT a || b || c, a || b = c"},
	{"SELECT a OR b AND NOT c = d", ""},
	{"SELECT (a OR b) AND NOT (c OR d)", ""},
	{"SELECT NOT NOT a, NOT (a AND b)", ""},
	{"SELECT a = b, a <> b, a != b, a < b, a <= b, a > b, a >= b", "SELECT a = b, a <> b, a <> b, a < b, a <= b, a > b, a >= b"},
	{"SELECT -a, +a, - -a, -(-1), -1, - 1.5, -a * b, -(a * b)", "SELECT -a, +a, -(-a), -(-1), -1, -1.5, -a * b, -(a * b)"},
	{"SELECT a IS NULL, a IS NOT NULL, a IS TRUE, a IS NOT TRUE, a IS FALSE, a IS NOT FALSE", ""},
	{"SELECT a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b", ""},
	{"SELECT a BETWEEN 1 AND 2, a NOT BETWEEN b + 1 AND c * 2", ""},
	{"SELECT a BETWEEN 1 AND 2 AND b", ""},
	{"SELECT a IN (1, 2, 3), a NOT IN ('x'), a IN (SELECT b FROM t)", ""},
	{"SELECT a LIKE 'x%', a NOT LIKE b || '%' ESCAPE '!'", ""},
	{"SELECT (a = b) = c, a = (b = c)", "SELECT a = b = c, a = (b = c)"},
	{"SELECT (a IS NULL) IS NULL", "SELECT a IS NULL IS NULL"},
	// literals
	{"SELECT 1, 1.5, .5, 1e3, 1.5E-3, 007, 'it''s', '', TRUE, false, null", "SELECT 1, 1.5, .5, 1e3, 1.5E-3, 007, 'it''s', '', TRUE, FALSE, NULL"},
	{"SELECT -9223372036854775808, 9223372036854775807", ""},
	{"SELECT INTERVAL '10' SECOND, INTERVAL '1' minutes, INTERVAL '2' HOURS, INTERVAL '3' DAY, INTERVAL '500' MILLISECOND",
		"SELECT INTERVAL '10' SECOND, INTERVAL '1' MINUTE, INTERVAL '2' HOUR, INTERVAL '3' DAY, INTERVAL '500' MILLISECOND"},
	{"SELECT INTERVAL '10 seconds', INTERVAL '1.5 hour'", "SELECT INTERVAL '10' SECOND, INTERVAL '1.5' HOUR"},
	{"SELECT TIMESTAMP '2026-03-01 08:00:00', DATE '2026-03-01'", ""},
	// functions
	{"SELECT count(*), COUNT(DISTINCT a), Avg(temp_c), f(), g(ALL a)", "SELECT COUNT(*), COUNT(DISTINCT a), AVG(temp_c), F(), G(a)"},
	{"SELECT count(*) filter (where a > 1 and b), COUNT(DISTINCT a) FILTER (WHERE b) + 1, SUM(x) FILTER (WHERE k IN (1, 2)) AS s, COUNT(*) filter",
		"SELECT COUNT(*) FILTER (WHERE a > 1 AND b), COUNT(DISTINCT a) FILTER (WHERE b) + 1, SUM(x) FILTER (WHERE k IN (1, 2)) AS s, COUNT(*) AS filter"},
	{"SELECT `myFunc`(a), \"F\"(b, c), f.g", "SELECT `myFunc`(a), `F`(b, c), f.g"},
	{"SELECT CAST(a AS BIGINT), TRY_CAST(b AS string), cast(c as decimal(10, 2))", "SELECT CAST(a AS BIGINT), TRY_CAST(b AS VARCHAR), CAST(c AS DECIMAL(10, 2))"},
	{"SELECT CASE WHEN a > 1 THEN 'x' WHEN a > 0 THEN 'y' ELSE 'z' END, CASE a WHEN 1 THEN 2 END", ""},
	{"SELECT EXTRACT(hour FROM ts), EXTRACT(EPOCH FROM ts)", "SELECT EXTRACT(HOUR FROM ts), EXTRACT(EPOCH FROM ts)"},
	{"SELECT POSITION('a' IN s), POSITION(a || b IN c || d)", ""},
	{"SELECT SUBSTRING(s FROM 2 FOR 3), SUBSTRING(s FROM 2), SUBSTRING(s, 2, 3)", "SELECT SUBSTRING(s, 2, 3), SUBSTRING(s, 2), SUBSTRING(s, 2, 3)"},
	{"SELECT TRIM(s), TRIM(BOTH FROM s), TRIM(FROM s), TRIM(LEADING 'x' FROM s), TRIM(TRAILING FROM s), TRIM('x' FROM s)",
		"SELECT TRIM(s), TRIM(s), TRIM(s), TRIM(LEADING 'x' FROM s), TRIM(TRAILING FROM s), TRIM(BOTH 'x' FROM s)"},
	{"SELECT ROW_NUMBER() OVER (PARTITION BY a, b ORDER BY ts DESC) AS rn FROM t", ""},
	{"SELECT SUM(x) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW), COUNT(*) OVER ()", ""},
	{"SELECT SUM(x) OVER (PARTITION BY k ORDER BY ts ROWS 5 PRECEDING), SUM(y) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)", ""},
	{"SELECT SUM(x) OVER (ORDER BY ts ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING)", ""},
	{"SELECT CURRENT_TIMESTAMP, current_date, LOCALTIMESTAMP, PROCTIME()", "SELECT CURRENT_TIMESTAMP, CURRENT_DATE, LOCALTIMESTAMP, PROCTIME()"},
	{"SELECT EXISTS (SELECT 1), NOT EXISTS (SELECT 1 FROM t), (SELECT MAX(a) FROM t) + 1", ""},
	// comments and whitespace
	{"SELECT /* c1 */ a -- trailing\n FROM\tt /* multi\nline */", "SELECT a FROM t"},
	// statements
	{"CREATE TABLE t (a INT)", ""},
	{"create table if not exists db.t (a int not null, b string null, ts timestamp(3), watermark for ts as ts - interval '5' second, primary key (a) not enforced) with ('connector' = 'kafka', format = 'json')",
		"CREATE TABLE IF NOT EXISTS db.t (a INT NOT NULL, b VARCHAR, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'kafka', 'format' = 'json')"},
	{"CREATE TEMPORARY TABLE t (id BIGINT PRIMARY KEY NOT ENFORCED, v DOUBLE)", "CREATE TEMPORARY TABLE t (id BIGINT, v DOUBLE, PRIMARY KEY (id) NOT ENFORCED)"},
	{"CREATE TABLE t (a INT, b INT, CONSTRAINT pk PRIMARY KEY (a, b) NOT ENFORCED)", ""},
	{"CREATE TABLE t (watermark INT, primary INT, constraint INT)", ""},
	{"CREATE TABLE t (c TIMESTAMP(3) WITH LOCAL TIME ZONE, d TIMESTAMP WITHOUT TIME ZONE)", "CREATE TABLE t (c TIMESTAMP_LTZ(3), d TIMESTAMP)"},
	{"INSERT INTO out SELECT * FROM t", ""},
	{"INSERT INTO db.out (a, b) SELECT a, b FROM t", ""},
	{"INSERT INTO out (SELECT 1)", "INSERT INTO out SELECT 1"},
	{"INSERT INTO out VALUES (1, 'a')", ""},
	{"CREATE VIEW v AS SELECT a FROM t", ""},
	{"CREATE TEMPORARY VIEW IF NOT EXISTS v (x) AS WITH w AS (SELECT 1) SELECT * FROM w", ""},
	{"DROP TABLE t", ""},
	{"DROP TEMPORARY TABLE IF EXISTS db.t", ""},
	{"SET 'table.exec.state.ttl' = '1 h'", ""},
	{"SET parallelism = '4'", "SET 'parallelism' = '4'"},
	{"EXPLAIN SELECT 1", ""},
	{"EXPLAIN PLAN FOR INSERT INTO t SELECT 1", "EXPLAIN INSERT INTO t SELECT 1"},
	// scripts
	{"SELECT 1; SELECT 2;", "SELECT 1;\nSELECT 2"},
	{";; SELECT 1 ;; ; SELECT 2", "SELECT 1;\nSELECT 2"},
}

func TestPrint(t *testing.T) {
	for _, tc := range printTests {
		s, err := Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		want := tc.want
		if want == "" {
			want = tc.src
		}
		if got := s.String(); got != want {
			t.Errorf("Parse(%q).String()\n got %s\nwant %s", tc.src, got, want)
		}
	}
}

// TestPrintRoundTrip checks that printed SQL parses to a tree equal to the
// original (positions and literal spelling aside).
func TestPrintRoundTrip(t *testing.T) {
	for _, tc := range printTests {
		s1, err := Parse(tc.src)
		if err != nil {
			continue // reported by TestPrint
		}
		out := s1.String()
		s2, err := Parse(out)
		if err != nil {
			t.Errorf("re-parse of %q: %v", out, err)
			continue
		}
		if !reflect.DeepEqual(stripPos(s1.Statements), stripPos(s2.Statements)) {
			t.Errorf("round trip of %q changed the tree:\n%s", tc.src, out)
		}
	}
}

// stripPos returns a deep copy of v with every Pos zeroed and identifiers'
// Quoted flag cleared (the printer may quote an unquoted name such as
// `timestamp`; the name is the same).
func stripPos(v any) any {
	rv := reflect.ValueOf(v)
	out := reflect.New(rv.Type()).Elem()
	copyStrip(out, rv)
	return out.Interface()
}

var posType = reflect.TypeOf(Pos{})

func copyStrip(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Elem().Type()))
		copyStrip(dst.Elem(), src.Elem())
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		e := reflect.New(src.Elem().Type()).Elem()
		copyStrip(e, src.Elem())
		dst.Set(e)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := 0; i < src.Len(); i++ {
			copyStrip(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		if src.Type() == posType {
			return
		}
		for i := 0; i < src.NumField(); i++ {
			if src.Type() == reflect.TypeOf(Ident{}) && src.Type().Field(i).Name == "Quoted" {
				continue
			}
			copyStrip(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

// parens prints an expression with every operator application
// parenthesized, to check the shape the parser built.
func parens(e Expr) string {
	switch e := e.(type) {
	case *BinaryExpr:
		return fmt.Sprintf("(%s %s %s)", parens(e.Left), e.Op, parens(e.Right))
	case *UnaryExpr:
		return fmt.Sprintf("(%s %s)", e.Op, parens(e.X))
	case *IsExpr:
		not := ""
		if e.Not {
			not = "NOT "
		}
		return fmt.Sprintf("(%s IS %s%s)", parens(e.X), not, e.Kind)
	case *BetweenExpr:
		return fmt.Sprintf("(%s BETWEEN %s AND %s)", parens(e.X), parens(e.Low), parens(e.High))
	case *LikeExpr:
		return fmt.Sprintf("(%s LIKE %s)", parens(e.X), parens(e.Pattern))
	case *InExpr:
		var list []string
		for _, x := range e.List {
			list = append(list, parens(x))
		}
		return fmt.Sprintf("(%s IN [%s])", parens(e.X), strings.Join(list, " "))
	}
	return e.String()
}

func TestExprShape(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a OR b AND c", "(a OR (b AND c))"},
		{"a AND b OR c", "((a AND b) OR c)"},
		{"NOT a AND b", "((NOT a) AND b)"},
		{"NOT a = b", "(NOT (a = b))"},
		{"a = b AND c <> d", "((a = b) AND (c <> d))"},
		{"a || b = c || d", "((a || b) = (c || d))"},
		{"a + b || c", "((a + b) || c)"},
		{"a + b * c", "(a + (b * c))"},
		{"a - b - c", "((a - b) - c)"},
		{"a / b % c * d", "(((a / b) % c) * d)"},
		{"-a * b", "((- a) * b)"},
		{"-1 * b", "(-1 * b)"},
		{"- - a", "(- (- a))"},
		{"+-a", "(+ (- a))"},
		{"a < b < c", "((a < b) < c)"},
		{"a + 1 IS NOT NULL AND b", "(((a + 1) IS NOT NULL) AND b)"},
		{"a BETWEEN b + 1 AND c OR d", "((a BETWEEN (b + 1) AND c) OR d)"},
		{"a NOT IN (1, b + 2) = FALSE", "((a IN [1 (b + 2)]) = FALSE)"},
		{"a LIKE b || 'x' AND c", "((a LIKE (b || 'x')) AND c)"},
		{"a = (b OR c)", "(a = (b OR c))"},
		{"ts - INTERVAL '3' SECOND", "(ts - INTERVAL '3' SECOND)"},
	}
	for _, tc := range tests {
		e, err := ParseExpr(tc.src)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", tc.src, err)
			continue
		}
		if got := parens(e); got != tc.want {
			t.Errorf("ParseExpr(%q) = %s, want %s", tc.src, got, tc.want)
		}
	}
}

func mustParse(t *testing.T, src string) *Script {
	t.Helper()
	s, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return s
}

func mustExpr(t *testing.T, src string) Expr {
	t.Helper()
	e, err := ParseExpr(src)
	if err != nil {
		t.Fatalf("ParseExpr(%q): %v", src, err)
	}
	return e
}

// nodePositions lists "Type@line:col" for every node Inspect visits.
func nodePositions(n Node) string {
	var out []string
	Inspect(n, func(n Node) bool {
		out = append(out, fmt.Sprintf("%s@%s", strings.TrimPrefix(fmt.Sprintf("%T", n), "*sql."), n.Position()))
		return true
	})
	return strings.Join(out, " ")
}

func TestPositions(t *testing.T) {
	src := "SELECT a,\n\tCOUNT(*) AS n\nFROM t JOIN\n  u ON t.k = u.k\nWHERE größe >= -1"
	s := mustParse(t, src)
	want := "Query@1:1 Select@1:1 SelectItem@1:8 ColumnRef@1:8 SelectItem@2:2 FuncCall@2:2 " +
		"Join@3:6 TableName@3:6 TableName@4:3 BinaryExpr@4:8 ColumnRef@4:8 ColumnRef@4:14 " +
		"BinaryExpr@5:7 ColumnRef@5:7 IntLit@5:16"
	if got := nodePositions(s.Statements[0]); got != want {
		t.Errorf("positions:\n got %s\nwant %s", got, want)
	}
	sel := s.Statements[0].(*Query).Body.(*Select)
	j := sel.From.(*Join)
	if j.OpPos.String() != "3:8" || j.On.(*BinaryExpr).OpPos.String() != "4:12" {
		t.Errorf("join OpPos %s, ON OpPos %s", j.OpPos, j.On.(*BinaryExpr).OpPos)
	}
	w := sel.Where.(*BinaryExpr)
	if w.OpPos != (Pos{Offset: strings.Index(src, ">="), Line: 5, Col: 13}) {
		t.Errorf("WHERE OpPos = %+v", w.OpPos)
	}
	if a := sel.Items[1].Alias; a.Pos.String() != "2:14" || a.Name != "n" {
		t.Errorf("alias = %+v", a)
	}
	if tn := j.Right.(*TableName); tn.Name.Parts[0].Pos.String() != "4:3" {
		t.Errorf("table name pos = %s", tn.Name.Pos)
	}

	s = mustParse(t, "SELECT 1;\nCREATE TABLE t (\n  a INT,\n  ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts\n) WITH ('k' = 'v')")
	ct := s.Statements[1].(*CreateTable)
	got := fmt.Sprint(ct.Pos, ct.Name.Pos, ct.Columns[0].Pos, ct.Columns[0].Type.Pos, ct.Columns[1].Type.Pos,
		ct.Watermark.Pos, ct.Watermark.Column.Pos, ct.Options[0].Pos, ct.Options[0].ValuePos)
	if want := "2:1 2:14 3:3 3:5 4:6 5:3 5:17 6:9 6:15"; got != want {
		t.Errorf("CREATE TABLE positions = %s, want %s", got, want)
	}

	e := mustExpr(t, "x IS NOT NULL AND y NOT BETWEEN 1 AND 2 OR - 5 IN (1)")
	want = "BinaryExpr@1:1 BinaryExpr@1:1 IsExpr@1:1 ColumnRef@1:1 BetweenExpr@1:19 ColumnRef@1:19 " +
		"IntLit@1:33 IntLit@1:39 InExpr@1:44 IntLit@1:44 IntLit@1:52"
	if got := nodePositions(e); got != want {
		t.Errorf("positions:\n got %s\nwant %s", got, want)
	}
	or := e.(*BinaryExpr)
	and := or.Left.(*BinaryExpr)
	if or.OpPos.String() != "1:41" || and.OpPos.String() != "1:15" ||
		and.Left.(*IsExpr).OpPos.String() != "1:3" || and.Right.(*BetweenExpr).OpPos.String() != "1:21" ||
		or.Right.(*InExpr).OpPos.String() != "1:48" {
		t.Errorf("operator positions wrong: %s %s", or.OpPos, and.OpPos)
	}
	if lit := or.Right.(*InExpr).X.(*IntLit); lit.Value != -5 || lit.Text != "-5" {
		t.Errorf("folded literal = %+v", lit)
	}
}

func TestIdentifiers(t *testing.T) {
	sel := mustParse(t, "SELECT Foo, `Foo`, \"Foo\", T.Bar, `a``b`, ÄÖ FROM t").Statements[0].(*Query).Body.(*Select)
	want := []Ident{
		{Name: "foo"}, {Name: "Foo", Quoted: true}, {Name: "Foo", Quoted: true},
		{Name: "bar"}, {Name: "a`b", Quoted: true}, {Name: "äö"},
	}
	for i, w := range want {
		got := sel.Items[i].Expr.(*ColumnRef).Column
		got.Pos = Pos{}
		if got != w {
			t.Errorf("item %d: got %+v, want %+v", i, got, w)
		}
	}
	if q := sel.Items[3].Expr.(*ColumnRef).Table; q == nil || q.Name != "t" {
		t.Errorf("qualifier = %+v", q)
	}
}

func TestTypes(t *testing.T) {
	tests := []struct {
		src  string
		want TypeName
	}{
		{"BIGINT", TypeName{Base: "BIGINT"}},
		{"int8", TypeName{Base: "BIGINT"}},
		{"INT", TypeName{Base: "INT"}},
		{"INTEGER", TypeName{Base: "INT"}},
		{"SMALLINT", TypeName{Base: "SMALLINT"}},
		{"TINYINT", TypeName{Base: "TINYINT"}},
		{"DOUBLE", TypeName{Base: "DOUBLE"}},
		{"DOUBLE PRECISION", TypeName{Base: "DOUBLE"}},
		{"FLOAT8", TypeName{Base: "DOUBLE"}},
		{"FLOAT", TypeName{Base: "FLOAT"}},
		{"REAL", TypeName{Base: "FLOAT"}},
		{"VARCHAR", TypeName{Base: "VARCHAR"}},
		{"VARCHAR(20)", TypeName{Base: "VARCHAR", Precision: 20, HasPrecision: true}},
		{"STRING", TypeName{Base: "VARCHAR"}},
		{"TEXT", TypeName{Base: "VARCHAR"}},
		{"CHAR(3)", TypeName{Base: "VARCHAR", Precision: 3, HasPrecision: true}},
		{"BOOLEAN", TypeName{Base: "BOOLEAN"}},
		{"BOOL", TypeName{Base: "BOOLEAN"}},
		{"TIMESTAMP", TypeName{Base: "TIMESTAMP"}},
		{"TIMESTAMP(3)", TypeName{Base: "TIMESTAMP", Precision: 3, HasPrecision: true}},
		{"TIMESTAMP_LTZ(3)", TypeName{Base: "TIMESTAMP_LTZ", Precision: 3, HasPrecision: true}},
		{"TIMESTAMP(6) WITH LOCAL TIME ZONE", TypeName{Base: "TIMESTAMP_LTZ", Precision: 6, HasPrecision: true}},
		{"DECIMAL(10, 2)", TypeName{Base: "DECIMAL", Precision: 10, Scale: 2, HasPrecision: true}},
		{"NUMERIC(5)", TypeName{Base: "DECIMAL", Precision: 5, HasPrecision: true}},
		{"DECIMAL", TypeName{Base: "DECIMAL"}},
		{"DATE", TypeName{Base: "DATE"}},
	}
	for _, tc := range tests {
		e := mustExpr(t, "CAST(x AS "+tc.src+")").(*CastExpr)
		tc.want.Pos = Pos{Offset: 10, Line: 1, Col: 11}
		if e.Type != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.src, e.Type, tc.want)
		}
	}
}

func TestLiterals(t *testing.T) {
	sel := mustParse(t, "SELECT 42, -7, 1.5, 2e3, 'x''y', TRUE, NULL, INTERVAL '90' SECOND, INTERVAL '-1.5' MINUTE, INTERVAL '250 milliseconds', INTERVAL '2' DAYS, TIMESTAMP '2026-03-01 08:00:00'").
		Statements[0].(*Query).Body.(*Select)
	e := func(i int) Expr { return sel.Items[i].Expr }
	if l := e(0).(*IntLit); l.Value != 42 || l.Text != "42" {
		t.Errorf("42 = %+v", l)
	}
	if l := e(1).(*IntLit); l.Value != -7 || l.Pos.Col != 12 {
		t.Errorf("-7 = %+v", l)
	}
	if l := e(2).(*NumberLit); l.Value != 1.5 || l.Exponent {
		t.Errorf("1.5 = %+v", l)
	}
	if l := e(3).(*NumberLit); l.Value != 2000 || !l.Exponent || l.Text != "2e3" {
		t.Errorf("2e3 = %+v", l)
	}
	if l := e(4).(*StringLit); l.Value != "x'y" {
		t.Errorf("string = %+v", l)
	}
	if l := e(5).(*BoolLit); !l.Value {
		t.Errorf("bool = %+v", l)
	}
	if _, ok := e(6).(*NullLit); !ok {
		t.Errorf("null = %T", e(6))
	}
	durations := []time.Duration{90 * time.Second, -90 * time.Second, 250 * time.Millisecond, 48 * time.Hour}
	for i, d := range durations {
		if l := e(7 + i).(*IntervalLit); l.Duration != d {
			t.Errorf("interval %d = %+v, want %v", i, l, d)
		}
	}
	if l := e(11).(*TypedLit); l.Type.Base != "TIMESTAMP" || l.Value != "2026-03-01 08:00:00" || l.Type.Pos != l.Pos {
		t.Errorf("typed = %+v", l)
	}
}

func TestStatements(t *testing.T) {
	s := mustParse(t, `
		CREATE TABLE IF NOT EXISTS sensors (
			id BIGINT NOT NULL,
			temp_c DOUBLE,
			ts TIMESTAMP(3),
			WATERMARK FOR ts AS ts - INTERVAL '3' SECOND,
			PRIMARY KEY (id) NOT ENFORCED
		) WITH ('connector' = 'file', 'path' = '/tmp/in.json', format = 'json');
		INSERT INTO out (id, avg_t)
		SELECT id, AVG(temp_c) FROM TABLE(TUMBLE(TABLE sensors, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY id;
		SET 'parallelism.default' = '2';
		EXPLAIN SELECT 1`)
	if len(s.Statements) != 4 {
		t.Fatalf("got %d statements", len(s.Statements))
	}
	ct := s.Statements[0].(*CreateTable)
	if !ct.IfNotExists || ct.Name.String() != "sensors" || len(ct.Columns) != 3 || !ct.Columns[0].NotNull ||
		ct.Columns[1].NotNull || ct.Columns[2].Type.Precision != 3 {
		t.Errorf("create table = %s", ct)
	}
	if ct.Watermark.Column.Name != "ts" || ct.Watermark.Expr.String() != "ts - INTERVAL '3' SECOND" {
		t.Errorf("watermark = %s", ct.Watermark)
	}
	if len(ct.PrimaryKey.Columns) != 1 || ct.PrimaryKey.Columns[0].Name != "id" {
		t.Errorf("primary key = %s", ct.PrimaryKey)
	}
	var opts []string
	for _, o := range ct.Options {
		opts = append(opts, o.Key+"="+o.Value)
	}
	if got := strings.Join(opts, ","); got != "connector=file,path=/tmp/in.json,format=json" {
		t.Errorf("options = %s", got)
	}
	ins := s.Statements[1].(*Insert)
	if ins.Table.String() != "out" || len(ins.Columns) != 2 {
		t.Errorf("insert = %s", ins)
	}
	tf := ins.Query.Body.(*Select).From.(*TableFunc)
	if tf.Name != "TUMBLE" || tf.Table.String() != "sensors" || len(tf.Descriptor) != 1 ||
		tf.Descriptor[0].Name != "ts" || len(tf.Args) != 1 || tf.Args[0].(*IntervalLit).Duration != 10*time.Second {
		t.Errorf("tvf = %s", tf)
	}
	if fc := ins.Query.Body.(*Select).Items[1].Expr.(*FuncCall); fc.Name != "AVG" || fc.String() != "AVG(temp_c)" {
		t.Errorf("call = %+v", fc)
	}
	if st := s.Statements[2].(*Set); st.Key != "parallelism.default" || st.Value != "2" {
		t.Errorf("set = %+v", st)
	}
	if ex := s.Statements[3].(*Explain); ex.Stmt.String() != "SELECT 1" {
		t.Errorf("explain = %s", ex)
	}
}

// Bare option and configuration keys are any identifier, reserved words
// included, or a dotted/dashed path joined exactly as written.
func TestBareOptionKeys(t *testing.T) {
	ct := mustParse(t, `CREATE TABLE t (a INT) WITH (
		table = 'a', format = 'b', key = 'c', value = 'd', PRIMARY = 'e',
		scan.startup.mode = 'f', properties.bootstrap.servers = 'g',
		sink.transactional-id-prefix = 'h', json.ignore-parse-errors = 'i',
		properties.transaction.timeout.ms = 'j', fields.0.kind = 'k', a-1 = 'l',
		'quoted key' = 'm')`).Statements[0].(*CreateTable)
	var keys []string
	for _, o := range ct.Options {
		keys = append(keys, o.Key)
	}
	want := "table,format,key,value,PRIMARY,scan.startup.mode,properties.bootstrap.servers," +
		"sink.transactional-id-prefix,json.ignore-parse-errors,properties.transaction.timeout.ms,fields.0.kind,a-1,quoted key"
	if got := strings.Join(keys, ","); got != want {
		t.Errorf("keys = %s\nwant   %s", got, want)
	}
	if p := ct.Options[5].Pos; p.Line != 3 || p.Col != 3 {
		t.Errorf("scan.startup.mode at %d:%d, want 3:3", p.Line, p.Col)
	}
	for src, key := range map[string]string{
		"SET execution.checkpointing.interval = '5s'": "execution.checkpointing.interval",
		"SET table.exec.mini-batch.enabled = 'true'":  "table.exec.mini-batch.enabled",
		"SET 'parallelism.default' = '2'":             "parallelism.default",
	} {
		if st := mustParse(t, src).Statements[0].(*Set); st.Key != key {
			t.Errorf("%s: key = %q, want %q", src, st.Key, key)
		}
	}
	if _, err := Parse("CREATE TABLE t (a INT) WITH (a.b = 'x', 'a.b' = 'y')"); err == nil ||
		!strings.Contains(err.Error(), "duplicate option 'a.b'") {
		t.Errorf("bare and quoted spellings of one key: err = %v", err)
	}
}

func TestQueryShapes(t *testing.T) {
	q := mustParse(t, "SELECT 1 UNION ALL SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4").Statements[0].(*Query)
	except := q.Body.(*SetOp)
	union := except.Left.(*SetOp)
	if except.Op != Except || except.All || union.Op != Union || !union.All || union.Right.(*SetOp).Op != Intersect {
		t.Errorf("set op shape: %s", q)
	}
	q = mustParse(t, "SELECT * FROM a, b LEFT JOIN c USING (k) CROSS JOIN d").Statements[0].(*Query)
	comma := q.Body.(*Select).From.(*Join)
	cross := comma.Right.(*Join)
	left := cross.Left.(*Join)
	if comma.Kind != JoinComma || cross.Kind != JoinCross || left.Kind != JoinLeft || left.Using[0].Name != "k" ||
		cross.On != nil || comma.OpPos.Col != 16 {
		t.Errorf("join shape: %s", q)
	}
	cte := mustParse(t, "WITH x (a) AS (SELECT 1) SELECT a FROM x").Statements[0].(*Query).With[0]
	if cte.Name.Name != "x" || cte.Columns[0].Name != "a" || cte.Pos.Col != 6 {
		t.Errorf("cte = %+v", cte)
	}
	w := mustExpr(t, "SUM(x) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)").(*FuncCall).Over
	if len(w.PartitionBy) != 1 || len(w.OrderBy) != 1 || w.Frame.Unit != FrameRows ||
		w.Frame.Start.Kind != Preceding || w.Frame.Start.Offset.String() != "2" || w.Frame.End.Kind != CurrentRow {
		t.Errorf("window = %s", w)
	}
}
