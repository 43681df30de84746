package sql

import (
	"errors"
	"strings"
	"testing"
)

// errorTests give the complete Error() text: message, source line, caret.
var errorTests = []struct{ src, want string }{
	{"SELECT a,\n  b\nFROM t WHERE COUNT(a FROM t", `
line 3:22: expected ')' but found 'FROM'
FROM t WHERE COUNT(a FROM t
                     ^`},
	{"SELECT 'abc", `
line 1:8: unterminated string literal
SELECT 'abc
       ^`},
	{"SELECT `abc", `
line 1:8: unterminated quoted identifier
SELECT ` + "`abc" + `
       ^`},
	{"SELECT \"\"", `
line 1:8: empty quoted identifier
SELECT ""
       ^`},
	{"SELECT a /* oops\n", `
line 1:10: unterminated comment
SELECT a /* oops
         ^`},
	{"CREATE TABLE t (\n  id BIGGINT\n)", `
line 2:6: unknown type 'BIGGINT' (did you mean BIGINT?)
  id BIGGINT
     ^`},
	{"CREATE TABLE t (a varchr(3))", `
line 1:19: unknown type 'varchr' (did you mean VARCHAR?)
CREATE TABLE t (a varchr(3))
                  ^`},
	{"CREATE TABLE t (a FOO)", `
line 1:19: unknown type 'FOO'
CREATE TABLE t (a FOO)
                  ^`},
	{"CREATE TABLE t (a ARRAY<INT>)", `
line 1:19: unsupported type 'ARRAY'
CREATE TABLE t (a ARRAY<INT>)
                  ^`},
	{"SELECT a +\n\n", `
line 1:11: unexpected end of input, expected expression
SELECT a +
          ^`},
	{"SELECT a FROM", `
line 1:14: unexpected end of input, expected table name
SELECT a FROM
             ^`},
	{"  \n-- nothing\n", `
line 1:1: empty script
  
^`},
	{";", `
line 1:1: empty script
;
^`},
	{"SELECT 99999999999999999999", `
line 1:8: integer literal out of range: 99999999999999999999
SELECT 99999999999999999999
       ^`},
	{"SELECT -9223372036854775809", `
line 1:8: integer literal out of range: -9223372036854775809
SELECT -9223372036854775809
       ^`},
	{"SELECT 1e999", `
line 1:8: numeric literal out of range: 1e999
SELECT 1e999
       ^`},
	{"SELECT 1abc, 2e", `
line 1:8: invalid numeric literal '1abc'
SELECT 1abc, 2e
       ^`},
	{"SELECT a, FROM t", `
line 1:11: expected expression but found 'FROM'
SELECT a, FROM t
          ^`},
	{"SELECT order FROM t", "\nline 1:8: expected expression but found reserved keyword 'order' (quote it as `order` to use it as a name)\nSELECT order FROM t\n       ^"},
	{"UPDATE t SET a = 1", `
line 1:1: unsupported statement 'UPDATE'
UPDATE t SET a = 1
^`},
	{"SELECT 1;\ncreate function f as 'x'", `
line 2:1: unsupported statement 'CREATE FUNCTION'
create function f as 'x'
^`},
	{"DROP VIEW v", `
line 1:1: unsupported statement 'DROP VIEW'
DROP VIEW v
^`},
	{"42", `
line 1:1: expected statement but found '42'
42
^`},
	{"CREATE TABLE t (a INT, b AS a + 1)", `
line 1:26: computed columns are not supported
CREATE TABLE t (a INT, b AS a + 1)
                         ^`},
	{"CREATE TABLE t (ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')", `
line 1:37: metadata columns are not supported
CREATE TABLE t (ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')
                                    ^`},
	{"CREATE TABLE t (a INT, PRIMARY KEY (a))", `
line 1:39: PRIMARY KEY must be declared NOT ENFORCED (Flink does not own the data, so it cannot enforce the key)
CREATE TABLE t (a INT, PRIMARY KEY (a))
                                      ^`},
	{"CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED)", `
line 1:49: only one PRIMARY KEY is allowed
CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED, PRIMARY KEY (a) NOT ENFORCED)
                                                ^`},
	{"CREATE TABLE t (a INT) WITH ('rows' = 10)", `
line 1:39: value of 'rows' must be a string literal, found '10' (write '10')
CREATE TABLE t (a INT) WITH ('rows' = 10)
                                      ^`},
	{"CREATE TABLE t (a INT) WITH ('x' = 'a', 'x' = 'b')", `
line 1:41: duplicate option 'x'
CREATE TABLE t (a INT) WITH ('x' = 'a', 'x' = 'b')
                                        ^`},
	{"CREATE TABLE t (a VARCHAR(0))", `
line 1:27: VARCHAR length must be between 1 and 2147483647
CREATE TABLE t (a VARCHAR(0))
                          ^`},
	{"CREATE TABLE t (a DECIMAL(10, 11))", `
line 1:31: DECIMAL scale must be between 0 and 10
CREATE TABLE t (a DECIMAL(10, 11))
                              ^`},
	{"CREATE TABLE t (a TIMESTAMP(10))", `
line 1:29: TIMESTAMP precision must be between 0 and 9
CREATE TABLE t (a TIMESTAMP(10))
                            ^`},
	{"CREATE TABLE t (a INT(3))", `
line 1:22: type INT takes no parameters
CREATE TABLE t (a INT(3))
                     ^`},
	{"CREATE TABLE t AS SELECT 1", `
line 1:16: CREATE TABLE ... AS is not supported; declare the columns
CREATE TABLE t AS SELECT 1
               ^`},
	{"SELECT INTERVAL '10' MONTH", `
line 1:22: unsupported interval unit 'MONTH' (use MILLISECOND, SECOND, MINUTE, HOUR or DAY)
SELECT INTERVAL '10' MONTH
                     ^`},
	{"SELECT INTERVAL '1x' SECOND", `
line 1:17: invalid interval value '1x' (want a number such as '10' or '1.5')
SELECT INTERVAL '1x' SECOND
                ^`},
	{"SELECT INTERVAL 10 SECOND", `
line 1:17: expected quoted interval value such as '10' but found '10'
SELECT INTERVAL 10 SECOND
                ^`},
	{"SELECT INTERVAL '10' + 1", `
line 1:22: expected interval unit (SECOND, MINUTE, HOUR, DAY or MILLISECOND) but found '+'
SELECT INTERVAL '10' + 1
                     ^`},
	{"SELECT * FROM t1 JOIN t2 WHERE x", `
line 1:26: expected ON or USING but found 'WHERE'
SELECT * FROM t1 JOIN t2 WHERE x
                         ^`},
	{"SELECT * FROM t NATURAL JOIN u", `
line 1:17: NATURAL JOIN is not supported; use JOIN ... USING (...)
SELECT * FROM t NATURAL JOIN u
                ^`},
	{"SELECT CASE END", `
line 1:13: expected 'WHEN' but found 'END'
SELECT CASE END
            ^`},
	{"SELECT EXTRACT(FORTNIGHT FROM ts)", `
line 1:16: unknown time unit 'FORTNIGHT'
SELECT EXTRACT(FORTNIGHT FROM ts)
               ^`},
	{"SELECT a b c FROM t", `
line 1:12: expected ';' but found 'c'
SELECT a b c FROM t
           ^`},
	{"SELECT a.b.c FROM t", `
line 1:11: column reference a.b.… has too many parts; use table.column
SELECT a.b.c FROM t
          ^`},
	{"SELECT a IS 5", `
line 1:13: expected NULL, TRUE, FALSE or DISTINCT FROM but found '5'
SELECT a IS 5
            ^`},
	{"SELECT * FROM TABLE(TUMBLE(t, DESCRIPTOR(ts)))", `
line 1:28: expected 'TABLE' but found 't'
SELECT * FROM TABLE(TUMBLE(t, DESCRIPTOR(ts)))
                           ^`},
	{"SELECT * FROM TABLE(t)", `
line 1:21: expected table function call such as TUMBLE(...) but found 't'
SELECT * FROM TABLE(t)
                    ^`},
	{"SELECT TRIM(LEADING 'x' s)", `
line 1:25: expected 'FROM' but found 's'
SELECT TRIM(LEADING 'x' s)
                        ^`},
	{"SELECT SUM(x) OVER (ROWS 1)", `
line 1:27: expected PRECEDING or FOLLOWING but found ')'
SELECT SUM(x) OVER (ROWS 1)
                          ^`},
	{"SELECT a FROM t ORDER BY a NULLS", `
line 1:33: unexpected end of input, expected FIRST or LAST
SELECT a FROM t ORDER BY a NULLS
                                ^`},
	{"SET table.exec.mini-batch . enabled = 'true'", `
line 1:27: configuration key table.exec.mini-batch . enabled must not contain spaces: write table.exec.mini-batch.enabled
SET table.exec.mini-batch . enabled = 'true'
                          ^`},
	{"CREATE TABLE t (a INT) WITH (scan. mode = 'x')", `
line 1:36: option key scan. mode must not contain spaces: write scan.mode
CREATE TABLE t (a INT) WITH (scan. mode = 'x')
                                   ^`},
	{"CREATE TABLE t (a INT) WITH (sink.parallelism- = 'x')", `
line 1:48: expected rest of option key sink.parallelism- but found '='
CREATE TABLE t (a INT) WITH (sink.parallelism- = 'x')
                                               ^`},
	{"CREATE TABLE t (a INT) WITH (scan.mode 'x')", `
line 1:40: expected '=' but found string literal 'x'
CREATE TABLE t (a INT) WITH (scan.mode 'x')
                                       ^`},
	{"CREATE TABLE t (a INT) WITH (\"table\" = 'x')", `
line 1:30: expected option key but found '"table"'
CREATE TABLE t (a INT) WITH ("table" = 'x')
                             ^`},
	// The caret counts runes and copies tabs.
	{"SELECT\tgrüße,\t€ FROM t", `
line 1:15: unexpected character '€'
SELECT	grüße,	€ FROM t
      	      	^`},
	{"SELECT a @ b", `
line 1:10: unexpected character '@'
SELECT a @ b
         ^`},
	{"SELECT \x00", `
line 1:8: unexpected character '\x00'
SELECT ` + "\x00" + `
       ^`},
	{"SELECT \xff", `
line 1:8: invalid UTF-8 byte 0xff
SELECT ` + "\xff" + `
       ^`},
	{"SELECT 1\r\nFROM\r\n", `
line 2:5: unexpected end of input, expected table name
FROM
    ^`},
}

func TestErrors(t *testing.T) {
	for _, tc := range errorTests {
		_, err := Parse(tc.src)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", tc.src)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error is %T, want *Error", tc.src, err)
			continue
		}
		if want := strings.TrimPrefix(tc.want, "\n"); err.Error() != want {
			t.Errorf("Parse(%q) error:\n%s\nwant:\n%s", tc.src, err, want)
		}
	}
}

func TestParseExprErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", "line 1:1: empty expression"},
		{"a b", "line 1:3: unexpected 'b' after expression\na b\n  ^"},
		{"(a", "line 1:3: unexpected end of input, expected ')'\n(a\n  ^"},
		{"f(a,)", "line 1:5: expected expression but found ')'\nf(a,)\n    ^"},
	}
	for _, tc := range tests {
		_, err := ParseExpr(tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseExpr(%q) error:\n%v\nwant:\n%s", tc.src, err, tc.want)
		}
	}
}

func TestErrorf(t *testing.T) {
	src := "SELECT a\nFROM t\nWHERE\tnope > 1"
	err := Errorf(src, Pos{Offset: 22, Line: 3, Col: 7}, "column %q not found", "nope")
	want := "line 3:7: column \"nope\" not found\nWHERE\tnope > 1\n     \t^"
	if err.Error() != want {
		t.Errorf("got:\n%s\nwant:\n%s", err, want)
	}
	// Without source, or with a position past the source, only the header
	// is printed.
	if got := Errorf("", Pos{Line: 2, Col: 3}, "boom").Error(); got != "line 2:3: boom" {
		t.Errorf("got %q", got)
	}
	if got := Errorf("x", Pos{Line: 9, Col: 1}, "boom").Error(); got != "line 9:1: boom" {
		t.Errorf("got %q", got)
	}
}

func TestDepthLimit(t *testing.T) {
	for _, src := range []string{
		"SELECT " + strings.Repeat("(", 100000) + "1",
		"SELECT " + strings.Repeat("- ", 100000) + "a",
		"SELECT " + strings.Repeat("NOT ", 100000) + "a",
		"SELECT * FROM " + strings.Repeat("(", 100000) + "t",
		strings.Repeat("EXPLAIN ", 100000) + "SELECT 1",
		strings.Repeat("(", 100000) + "SELECT 1",
	} {
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), "nesting too deep") {
			t.Errorf("deep input: got %.80v", err)
		}
	}
}
