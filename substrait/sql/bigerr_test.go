package sql_test

import (
	"strings"
	"testing"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/substrait/sql"
)

// TestErrorExcerptTruncated: a megabyte of SQL with an error gives an
// error of a few hundred bytes that still names line:column, shows the
// line around the column with ellipses and puts the caret under the
// offending token (issue #19: a 100 MB body came back as a 200 MB error,
// the SQL in the message and again in the excerpt).
func TestErrorExcerptTruncated(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	head := "CREATE TABLE t (a BIGINT) WITH ('connector'='file','path'='x');\n"
	for _, c := range []struct {
		name, src, pos, at string
	}{
		{"long identifier", head + "SELECT " + big + " FROM t", "line 2:8:", "x"},
		{"unterminated string", head + "SELECT '" + big, "line 2:8:", "'"},
		{"error at the end of a long line", head + "SELECT " + strings.Repeat("a, ", 1<<18) + " FROM t", "line 2:786441:", "F"},
		{"long token in the message", head + "SELECT a FROM t WHERE " + big + " " + big, "line 2:1048600:", "x"},
		{"end of input after a long line", head + "SELECT " + strings.Repeat("a, ", 1<<18) + "a +", "line 2:", ""},
		{"quoted identifier", head + "SELECT `" + big + "` FROM t", "line 2:8:", "`"},
		{"multibyte", head + "SELECT '" + strings.Repeat("é", 1<<19) + "' + " + strings.Repeat("ü", 1<<19) + " FROM t", "line 2:", "ü"},
	} {
		_, err := sql.Compile(c.src, builtin.Registry())
		if err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		msg := err.Error()
		if len(msg) > 2048 {
			t.Errorf("%s: %d bytes of error", c.name, len(msg))
		}
		if !strings.HasPrefix(msg, c.pos) {
			t.Errorf("%s: %.200q, want it to start with %q", c.name, msg, c.pos)
		}
		lines := strings.Split(msg, "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: %d lines: %.300q", c.name, len(lines), msg)
		}
		excerpt, caret := []rune(lines[1]), []rune(lines[2])
		if n := len(excerpt); n > 210 {
			t.Errorf("%s: excerpt of %d runes", c.name, n)
		}
		col := len(caret) - 1
		if c.at == "" { // past the end of the line
			if caret[col] != '^' || col < len(excerpt) || col > len(excerpt)+1 || len(excerpt) < 100 {
				t.Errorf("%s: caret at %d after %d runes:\n%s\n%s", c.name, col, len(excerpt), lines[1], lines[2])
			}
			continue
		}
		if caret[col] != '^' || col >= len(excerpt) || string(excerpt[col]) != c.at {
			t.Errorf("%s: caret at %d under %q, want under %q:\n%s\n%s", c.name, col, string(excerpt[min(col, len(excerpt)-1)]), c.at, lines[1], lines[2])
		}
	}
	// A short line is shown whole, as before.
	_, err := sql.Compile(head+"SELECT b FROM t", builtin.Registry())
	if want := "line 2:8: column 'b' not found"; err == nil || !strings.HasPrefix(err.Error(), "line 2:8:") || !strings.HasSuffix(err.Error(), "\nSELECT b FROM t\n       ^") {
		t.Errorf("short: %v, want %s...", err, want)
	}
}
