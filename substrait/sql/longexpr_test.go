package sql_test

import (
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/substrait/sql"
)

// longGroupBy is `SELECT a + b + a + b ... FROM t GROUP BY a` with n
// terms: b is no group key, so binding fails "must appear in GROUP BY".
// With valid every term is a, and it binds.
func longGroupBy(n int, valid bool) string {
	var s strings.Builder
	s.WriteString("CREATE TABLE t (a BIGINT, b BIGINT) WITH ('connector'='file','path'='x');\nSELECT ")
	for i := range n {
		if i > 0 {
			s.WriteString(" + ")
		}
		if i%2 == 1 && !valid {
			s.WriteString("b")
		} else {
			s.WriteString("a")
		}
	}
	s.WriteString(" AS s FROM t GROUP BY a")
	return s.String()
}

// TestGroupByErrorLongExpression: the binder matched every sub-expression
// of a select item against the group keys by rendering it, quadratic in
// the expression's length (here 4,000 terms took 0.7-1.1 s, 27 s on the
// testers' machine; 10,000 terms 3.9 s). Fingerprints make it linear:
// 10,000 terms take under 100 ms. The bound is generous (2 s) because the machine
// that runs the tests is shared and noisy.
func TestGroupByErrorLongExpression(t *testing.T) {
	for _, valid := range []bool{false, true} {
		src := longGroupBy(10_000, valid)
		start := time.Now()
		_, err := sql.Compile(src, builtin.Registry())
		took := time.Since(start)
		if valid && err != nil {
			t.Fatalf("valid 10,000-term expression: %.300v", err)
		}
		if !valid && (err == nil || !strings.Contains(err.Error(), "line 2:12: column b must appear in GROUP BY")) {
			t.Fatalf("10,000 terms: %.300v", err)
		}
		if took > 2*time.Second {
			t.Errorf("10,000 terms (valid %v) took %v", valid, took)
		}
		t.Logf("10,000 terms, valid %v: %v", valid, took)
	}
}

// TestGroupKeyExpressionsMatch: group keys that are expressions are still
// found inside select items and HAVING by their text, also when the same
// text is written with other parentheses or spacing.
func TestGroupKeyExpressionsMatch(t *testing.T) {
	head := "CREATE TABLE t (a BIGINT, b BIGINT, s STRING) WITH ('connector'='file','path'='x');\n"
	for _, q := range []string{
		"SELECT (a + 1) * 2, COUNT(*) FROM t GROUP BY a + 1",
		"SELECT (a+1) * 2 + SUM(b) FROM t GROUP BY (a + 1) HAVING a + 1 > 3",
		"SELECT -(a * b), UPPER(s) || 'x' FROM t GROUP BY a * b, UPPER(s)",
		"SELECT - - a FROM t GROUP BY - - a",
		"SELECT CASE WHEN a > 1 THEN 'x' ELSE s END, MAX(b) FROM t GROUP BY CASE WHEN a > 1 THEN 'x' ELSE s END",
	} {
		if _, err := sql.Compile(head+q, builtin.Registry()); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		"SELECT (a + 2) * 2 FROM t GROUP BY a + 1",
		"SELECT a * b + 1 FROM t GROUP BY a * (b + 1)",
	} {
		if _, err := sql.Compile(head+q, builtin.Registry()); err == nil || !strings.Contains(err.Error(), "must appear in GROUP BY") {
			t.Errorf("%s: %v, want a GROUP BY error", q, err)
		}
	}
}

// BenchmarkGroupByErrorLongExpression binds a 10,000-term expression that
// fails "must appear in GROUP BY".
func BenchmarkGroupByErrorLongExpression(b *testing.B) {
	src := longGroupBy(10_000, false)
	reg := builtin.Registry()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := sql.Compile(src, reg); err == nil {
			b.Fatal("no error")
		}
	}
}

// TestExpressionTooLong: a megabyte of "a + a + ..." (a million terms)
// is an error naming the limit, quickly, not a stack overflow that ends
// the process (the binder walks the tree recursively: 100,000 terms used
// 256 MB of stack).
func TestExpressionTooLong(t *testing.T) {
	src := "CREATE TABLE t (a BIGINT) WITH ('connector'='file','path'='x');\nSELECT " + strings.Repeat("a + ", 1_000_000) + "a FROM t"
	start := time.Now()
	_, err := sql.Compile(src, builtin.Registry())
	if err == nil || !strings.Contains(err.Error(), "expression too long: more than 20000 operators in one statement") || !strings.HasPrefix(err.Error(), "line 2:80010:") {
		t.Fatalf("%.300v", err)
	}
	took := time.Since(start)
	t.Logf("1,000,000 terms: %v", took)
	if took > 3*time.Second { // generous: a shared machine
		t.Errorf("took %v", took)
	}
	// The limit is per statement: two statements of 15,000 operators each
	// are fine.
	q := "SELECT " + strings.Repeat("a + ", 15_000) + "a FROM t"
	if _, err := sql.Compile("CREATE TABLE t (a BIGINT) WITH ('connector'='file','path'='x');\n"+q+";\n"+q, builtin.Registry()); err != nil {
		t.Fatalf("%.300v", err)
	}
}
