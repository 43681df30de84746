package planner

import (
	"testing"

	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/substrait/sql"
)

// TestNeedsThroughAggregate: a join above an aggregate (Nexmark q7's
// shape: a table joined with an aggregate of itself) still prunes the
// columns nothing reads, which needs the aggregate's arity.
func TestNeedsThroughAggregate(t *testing.T) {
	src := `CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR)
WITH ('connector' = 'nexmark', 'table' = 'bid', 'event_time_column' = 'dateTime');
CREATE TABLE out (auction BIGINT, price BIGINT, extra VARCHAR) WITH ('connector' = 'blackhole');
INSERT INTO out
SELECT B.auction, B.price, B.extra
FROM bid AS B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS dateTime
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) AS B1
  ON B.price = B1.maxprice
 AND B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;`
	plan, err := sql.Compile(src, builtin.Registry())
	if err != nil {
		t.Fatal(err)
	}
	rel := plan.GetRelations()[0].GetRoot().GetInput()
	n := needs{}
	n.walk(rel.GetWrite().GetInput(), allCols())
	if len(n) != 1 {
		t.Fatalf("%d readings, want 1", len(n))
	}
	for _, s := range n {
		want := map[int]bool{0: true, 2: true, 5: true, 6: true} // auction, price, dateTime, extra
		if s.all || len(s.cols) != len(want) {
			t.Fatalf("columns read: all=%v %v, want %v", s.all, s.cols, want)
		}
		for c := range want {
			if !s.cols[c] {
				t.Fatalf("columns read: %v, want %v", s.cols, want)
			}
		}
	}
}
