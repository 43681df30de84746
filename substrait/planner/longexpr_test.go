package planner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// TestLongExpressionPlans: a valid 10,000-term expression over a GROUP BY
// compiles and plans in reasonable time. The bound is generous (5 s) because
// the machine that runs the tests is shared and noisy.
func TestLongExpressionPlans(t *testing.T) {
	reg := builtin.Registry()
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	env := planner.Env{Connectors: reg, Funcs: funcs, Runtime: connectors.Runtime{BatchSize: 16, Mem: memory.NewGoAllocator(), Parallelism: 1}}
	src := "CREATE TABLE s (a BIGINT, ts BIGINT) WITH ('connector' = 'file', 'path' = '/nonexistent/in', 'event_time_column' = 'ts');\n" +
		"CREATE TABLE k (a BIGINT, n BIGINT) WITH ('connector' = 'file', 'path' = '/nonexistent/out');\n" +
		"INSERT INTO k SELECT " + strings.Repeat("a + ", 9_999) + "a, COUNT(*) FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, a"
	start := time.Now()
	p, err := sql.Compile(src, reg)
	if err != nil {
		t.Fatalf("%.300v", err)
	}
	compiled := time.Since(start)
	// The plan's bytes nest three messages per term: protobuf's default
	// recursion limit (10,000) refuses them when read back; a cluster
	// submission reads them with substrait.UnmarshalPlan.
	data, err := proto.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(data, p.ProtoReflect().New().Interface()); err == nil {
		t.Log("the default recursion limit reads a 10,000-term plan")
	}
	if err := substrait.UnmarshalPlan(data, new(pb.Plan)); err != nil {
		t.Fatal(err)
	}
	// The SQL front end's limit, 20,000 operators, reads back too.
	big, err := sql.Compile(strings.Replace(src, strings.Repeat("a + ", 9_999), strings.Repeat("a + ", 19_990), 1), reg)
	if err != nil {
		t.Fatalf("%.300v", err)
	}
	if data, err = proto.Marshal(big); err != nil {
		t.Fatal(err)
	}
	if err := substrait.UnmarshalPlan(data, new(pb.Plan)); err != nil {
		t.Fatalf("a 19,990-operator plan: %v", err)
	}
	if err := planner.Validate(p, env); err != nil {
		t.Fatalf("%.300v", err)
	}
	took := time.Since(start)
	t.Logf("10,000 terms: compiled in %v, planned in %v", compiled, took-compiled)
	if took > 5*time.Second {
		t.Errorf("10,000 terms took %v", took)
	}
}
