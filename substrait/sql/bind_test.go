package sql_test

import (
	"os"
	"testing"

	"github.com/substrait-io/substrait-go/v8/plan"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/sql"
)

// TestPlanIsSubstrait checks that the binder's plans are real Substrait:
// substrait-go, with Clink's extension loaded, reads them back, and they
// survive protobuf bytes unchanged.
func TestPlanIsSubstrait(t *testing.T) {
	src, err := os.ReadFile("../../examples/sensors/pipeline.sql")
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{
		string(src),
		`CREATE TABLE t (k STRING, ts BIGINT, v INT) WITH ('connector'='file','path'='x','event_time_column'='ts');
		 SELECT k, window_start, window_end, COUNT(*), COUNT(v), SUM(v), AVG(v), MIN(v), MAX(v)
		 FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '5' SECOND)) GROUP BY window_start, window_end, k`,
		`CREATE TABLE t (k STRING, ts BIGINT, v DOUBLE) WITH ('connector'='file','path'='x');
		 SELECT k, v * 2 + 1 AS w, v > 3 AND k <> 'a' AS f, v IS NULL AS n, -v AS neg FROM t WHERE NOT (v < 0) OR v IS NULL`,
		`CREATE TABLE u (k STRING, ts TIMESTAMP(3), b BOOLEAN) WITH ('connector'='file','path'='x','event_time_column'='ts');
		 SELECT k, MIN(k), MAX(b), MIN(ts), window_end FROM u GROUP BY SESSION(ts, INTERVAL '1' MINUTE), k`,
		// FILTER is a CASE in the measure's argument: plain Substrait.
		`CREATE TABLE t (k STRING, ts BIGINT, v INT) WITH ('connector'='file','path'='x','event_time_column'='ts');
		 SELECT k, window_start, COUNT(*) FILTER (WHERE v > 1), COUNT(DISTINCT v) FILTER (WHERE k <> 'a'), SUM(v) FILTER (WHERE v IS NOT NULL), MAX(k) FILTER (WHERE v < 0)
		 FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, k`,
	}
	coll, err := substrait.Collection()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		p, err := sql.Compile(q, builtin.Registry())
		if err != nil {
			t.Fatal(err)
		}
		data, err := proto.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var back pb.Plan
		if err := proto.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(p, &back) {
			t.Fatal("plan changed through protobuf bytes")
		}
		if _, err := plan.FromProto(&back, coll); err != nil {
			t.Errorf("substrait-go rejects the plan of\n%s\n%v\n%s", q, err, substrait.Explain(p))
		}
	}
}
