package file_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// runFile runs SELECT sensor_id, v over a JSON file with event time ts and
// returns the printed lines, the records skipped and the error.
func runFile(t *testing.T, content string, opts string) ([]string, int64, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "CREATE TABLE r (sensor_id STRING, ts BIGINT, v BIGINT) WITH ('connector' = 'file', 'path' = '" + path + "', 'event_time_column' = 'ts'" + opts + ");\nSELECT sensor_id, v FROM r"
	reg := builtin.Registry()
	plan, err := sql.Compile(script, reg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 1024, Mem: mem, Stdout: &out, Stderr: &out}
	j, err := planner.BuildParallel(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stats, err := j.Run(ctx)
	var skipped int64
	for _, s := range stats {
		if s != nil {
			skipped += s.Total("records_skipped")
		}
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n"), skipped, err
}

// TestFileBadRecordContract: a NULL or missing event time and invalid
// UTF-8 are bad records named by file:line and field; a byte-order mark
// may open the file, but not a later line.
func TestFileBadRecordContract(t *testing.T) {
	good := "\ufeff" + `{"sensor_id":"a","ts":1000,"v":1}` + "\n" + `{"sensor_id":"b","ts":2000,"v":2}` + "\n"
	rows, _, err := runFile(t, good, "")
	if err != nil {
		t.Fatalf("a byte-order mark at the start: %v", err)
	}
	if want := []string{`{"sensor_id":"a","v":1}`, `{"sensor_id":"b","v":2}`}; strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows %q, want %q", rows, want)
	}
	for _, c := range []struct{ line, want string }{
		{`{"sensor_id":"x","v":9}`, `in.jsonl:2: field "ts": null or missing, and it must hold a value (the event-time column)`},
		{`{"sensor_id":"x","ts":null,"v":9}`, `in.jsonl:2: field "ts": null or missing, and it must hold a value (the event-time column)`},
		{"{\"sensor_id\":\"x\xfe\",\"ts\":1500,\"v\":9}", `in.jsonl:2: field "sensor_id": invalid UTF-8 in a string: byte 0xfe at column 16`},
		{"\ufeff" + `{"sensor_id":"x","ts":1500,"v":9}`, `in.jsonl:2: invalid JSON at column 1: expected an object, found a UTF-8 byte-order mark (U+FEFF)`},
	} {
		content := `{"sensor_id":"a","ts":1000,"v":1}` + "\n" + c.line + "\n" + `{"sensor_id":"b","ts":2000,"v":2}` + "\n"
		_, _, err := runFile(t, content, "")
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%q: error %v\nwant ...%s", c.line, err, c.want)
		}
		rows, skipped, err := runFile(t, content, ", 'on_error' = 'skip'")
		if err != nil || skipped != 1 || len(rows) != 2 {
			t.Errorf("%q with on_error = 'skip': rows %q, %d skipped, error %v", c.line, rows, skipped, err)
		}
	}
}
