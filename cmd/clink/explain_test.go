package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// explain and a cluster client run the planner's I/O-free checks, and
// refuse a job with the words an embedded run uses. Port 1 is closed: no
// check may need the server.
func TestExplainValidates(t *testing.T) {
	bin := build(t)
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, nil, 0o644)
	sqlWith := func(sinkOpts string) string {
		return "CREATE TABLE r (id STRING, temp_c DOUBLE) WITH ('connector' = 'file', 'path' = '" + in + "');\n" +
			"CREATE TABLE out (id STRING, temp_c DOUBLE) WITH (connector = 'clickhouse', port = '1', table = 'sensor_window_stats'" + sinkOpts + ");\n" +
			"INSERT INTO out SELECT id, temp_c FROM r"
	}
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	for _, c := range []struct{ opts, want string }{
		{", delivery_guarantee = 'exactly_once'", "error: sink 'out': connector 'clickhouse' cannot deliver exactly once"},
		{", batch_rows = '0'", "error: option 'batch_rows': 0 is out of range (1 to 10000000)"},
	} {
		q := sqlWith(c.opts)
		_, embedded, err := run("run", "-e", q)
		if err == nil || !strings.HasPrefix(embedded, c.want) {
			t.Fatalf("run %s: %v\n%s", c.opts, err, embedded)
		}
		_, explained, err := run("explain", "-e", q)
		if err == nil || explained != embedded {
			t.Errorf("explain %s: %v\n%s\nwant\n%s", c.opts, err, explained, embedded)
		}
		_, submitted, err := run("run", "--coordinator", "127.0.0.1:1", "-e", q)
		if err == nil || submitted != embedded {
			t.Errorf("submit %s: %v\n%s\nwant\n%s", c.opts, err, submitted, embedded)
		}
	}
	// Kafka: option combinations, refused before any broker is asked
	// (port 1 is closed).
	kafkaWith := func(sinkOpts string) string {
		return "CREATE TABLE r (id STRING, temp_c DOUBLE) WITH ('connector' = 'file', 'path' = '" + in + "');\n" +
			"CREATE TABLE out (id STRING, temp_c DOUBLE) WITH (connector = 'kafka', brokers = '127.0.0.1:1', topic = 'alerts'" + sinkOpts + ");\n" +
			"INSERT INTO out SELECT id, temp_c FROM r"
	}
	for _, c := range []struct{ opts, want string }{
		{", transactional_id_prefix = 'job-1'", "error: kafka sink 'out': option 'transactional_id_prefix' needs delivery_guarantee 'exactly_once'"},
		{", security_protocol = 'SASL_SSL', sasl_password = 'env://CLINK_TEST_UNSET'", "error: kafka sink 'out': security_protocol 'SASL_SSL' needs option 'sasl_username'"},
		{", key_column = 'nope'", "error: kafka sink 'out': key_column 'nope' is not a column of out"},
	} {
		q := kafkaWith(c.opts)
		_, embedded, err := run("run", "-e", q)
		if err == nil || !strings.HasPrefix(embedded, c.want) {
			t.Fatalf("run %s: %v\n%s", c.opts, err, embedded)
		}
		_, explained, err := run("explain", "-e", q)
		if err == nil || explained != embedded {
			t.Errorf("explain %s: %v\n%s\nwant\n%s", c.opts, err, explained, embedded)
		}
	}
	if out, stderr, err := run("explain", "-e", kafkaWith(", delivery_guarantee = 'exactly_once', transactional_id_prefix = 'job-1'")); err != nil || !strings.Contains(out, "Write out") {
		t.Errorf("valid kafka plan: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err := run("explain", "-e", sqlWith(""))
	if err != nil || !strings.Contains(out, "Write out") {
		t.Errorf("valid plan: %v\n%s%s", err, out, stderr)
	}
}
