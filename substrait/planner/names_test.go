package planner_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/file"
	"github.com/clink-dev/clink/connectors/print"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// Operator names are unique in a job: a repeat gets _2, _3 as checkpoint
// part files number them, so a stateful operator keeps its state's name.
func TestUniqueNames(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, nil, 0o644)
	reg := connectors.NewRegistry()
	reg.Register(file.Connector{})
	reg.Register(print.Connector{})
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	env := planner.Env{Connectors: reg, Funcs: funcs, Runtime: connectors.Runtime{BatchSize: 16, Mem: memory.NewGoAllocator(), Parallelism: 1}}
	src := "CREATE TABLE r (id STRING, ts BIGINT, v DOUBLE) WITH ('connector' = 'file', 'path' = '" + in + "', 'event_time_column' = 'ts');\n" +
		"CREATE TABLE a (id STRING, n BIGINT) WITH ('connector' = 'file', 'path' = '" + filepath.Join(dir, "a") + "');\n" +
		"CREATE TABLE b (id STRING, m DOUBLE) WITH ('connector' = 'file', 'path' = '" + filepath.Join(dir, "b") + "');\n" +
		"INSERT INTO a SELECT id, COUNT(*) FROM r GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), id;\n" +
		"INSERT INTO b SELECT UPPER(id), MAX(v) + 1 FROM r WHERE v > 0 GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), id"
	p, err := sql.Compile(src, reg)
	if err != nil {
		t.Fatal(err)
	}
	job, err := planner.Build(p, env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var walk func(n *engine.Node)
	walk = func(n *engine.Node) {
		names = append(names, n.Names...)
		for _, in := range n.Inputs {
			walk(in)
		}
	}
	for _, pl := range job.Pipelines {
		walk(pl.Root)
		pl.Sink.Close()
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("name %s repeats in %v", n, names)
		}
		seen[n] = true
	}
	for _, want := range []string{"window_aggregate", "window_aggregate_2", "rename", "rename_2"} {
		if !slices.Contains(names, want) {
			t.Errorf("no operator %s in %v", want, names)
		}
	}
	t.Log(names)
}
