// Package nexmark is the Nexmark benchmark suite: the queries (Flink's
// Nexmark SQL adapted to Clink's SQL, one file each), the DDL of the three
// tables over the generator or over Kafka, a hand-written Go loop per
// query that computes the same result from the same input (the limit on
// this machine, and the independent check of the engine's output in the
// tests), and the harness behind `clink bench nexmark`.
package nexmark

import (
	"embed"
	"fmt"
	"sort"
	"strings"

	gen "github.com/clink-dev/clink/connectors/nexmark"
)

//go:embed *.sql
var files embed.FS

// Query is one Nexmark query and what the suite knows about it.
type Query struct {
	Name string
	// SQL is the query's file: the sink table (blackhole) and the INSERT.
	SQL string
	// Tables are the tables the query reads.
	Tables []gen.Kind
	// Columns are the output columns; Key, for an updating result, the
	// columns that identify a row (nil: insert-only).
	Columns, Key []string
	// Stateful queries keep state between events (their state bytes per
	// entry are measured, unless NoState says why not).
	Stateful bool
	NoState  string
	// SelfJoin: the query joins its table with itself (it runs at
	// parallelism 1, as every join; the engine reads the table once).
	SelfJoin bool
	// Adapted says how the query differs from Flink's ("" = as Flink's).
	Adapted string
	// Latency says how a result row's latency is taken (nil: not
	// measured, for the reason in NoLatency).
	Latency   *Latency
	NoLatency string
	// Target is the goal in events per CPU-second via Kafka (0: none);
	// ClinkCPP and Flink are the published figures (0: none).
	Target, ClinkCPP, Flink float64
	// New returns the query's hand-written loop writing to out.
	New func(out *Out) Handler
}

// Latency defines when a result row could first be produced: the value
// of column Col (epoch ms of event time) plus Offset (and the watermark
// lag when Windowed). With paced input
// event time is wall-clock time, so the row's latency is its arrival time
// minus that. SQL, when set, replaces the query's INSERT for the latency
// run (to carry a time column).
type Latency struct {
	SQL, Col string
	Offset   int64
	// Windowed results wait for the watermark: Lag is added too.
	Windowed bool
}

// Lag is the watermark lag of every table (Flink's Nexmark: 4 s).
const Lag = 4000

func sqlOf(name string) string {
	b, err := files.ReadFile(name + ".sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// dailyCols are the statistics columns of q15 and q16.
var dailyCols = []string{"total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
	"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
	"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"}

var (
	bidT     = []gen.Kind{gen.KindBid}
	bidCols  = []string{"auction", "bidder", "price", "dateTime", "extra"}
	registry = map[string]*Query{}
)

func init() {
	for _, q := range []*Query{
		{Name: "q0", Tables: bidT, Columns: bidCols, Target: 1.7e6, ClinkCPP: 857676, Flink: 179327,
			Latency: &Latency{Col: "dateTime"}, New: newQ0},
		{Name: "q1", Tables: bidT, Columns: bidCols, ClinkCPP: 403644,
			Latency: &Latency{Col: "dateTime"}, New: newQ1},
		{Name: "q2", Tables: bidT, Columns: []string{"auction", "price"}, ClinkCPP: 741563,
			Latency: &Latency{Col: "dateTime", SQL: `CREATE TABLE nexmark_q2l (auction BIGINT, price BIGINT, dateTime BIGINT) WITH ('connector' = 'print');
INSERT INTO nexmark_q2l SELECT auction, price, dateTime FROM bid WHERE MOD(auction, 123) = 0;`}, New: newQ2},
		{Name: "q3", Tables: []gen.Kind{gen.KindAuction, gen.KindPerson}, Columns: []string{"name", "city", "state", "id"}, Stateful: true,
			Adapted:   "filters written below the join (Clink does not push predicates through joins)",
			NoLatency: "the result carries no event time", New: newQ3},
		{Name: "q4", Tables: []gen.Kind{gen.KindAuction, gen.KindBid}, Columns: []string{"id", "final"}, Key: []string{"id"}, Stateful: true,
			Adapted:   "interval join bounded by 20 s; AVG cast to BIGINT (Flink's AVG of a BIGINT truncates, Clink's is DOUBLE)",
			NoLatency: "updating result without event time", New: newQ4},
		{Name: "q5", Tables: bidT, SelfJoin: true, Columns: []string{"auction", "num"}, Stateful: true, Target: 220e3, ClinkCPP: 109072,
			Adapted: "MaxBids as a 2 s tumbling window over the hopping windows' ends, joined on it (Flink's unwindowed MAX cannot be joined)",
			Latency: &Latency{Windowed: true, Col: "endtime", Offset: 2000, SQL: `CREATE TABLE nexmark_q5l (auction BIGINT, num BIGINT, endtime BIGINT) WITH ('connector' = 'print');
INSERT INTO nexmark_q5l SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.endtime FROM auction_bids AS AuctionBids
JOIN (SELECT MAX(num) AS maxn, window_start AS endtime, window_end AS fired FROM auction_bids GROUP BY TUMBLE(endtime, INTERVAL '2' SECOND)) AS MaxBids
ON AuctionBids.endtime = MaxBids.endtime AND AuctionBids.endtime BETWEEN MaxBids.fired - INTERVAL '2' SECOND AND MaxBids.fired - INTERVAL '2' SECOND AND AuctionBids.num >= MaxBids.maxn;`},
			New: newQ5},
		{Name: "q7", Tables: bidT, SelfJoin: true, Columns: []string{"auction", "price", "bidder", "dateTime", "extra"}, Stateful: true, Target: 1.3e6, ClinkCPP: 669953,
			Adapted: "time bounds in ON (an interval join)",
			Latency: &Latency{Windowed: true, Col: "windowEnd", SQL: `CREATE TABLE nexmark_q7l (auction BIGINT, price BIGINT, windowEnd BIGINT) WITH ('connector' = 'print');
INSERT INTO nexmark_q7l SELECT B.auction, B.price, B1.dateTime FROM bid AS B
JOIN (SELECT MAX(price) AS maxprice, window_end AS dateTime FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND)) GROUP BY window_start, window_end) AS B1
ON B.price = B1.maxprice AND B.dateTime BETWEEN B1.dateTime - INTERVAL '10' SECOND AND B1.dateTime;`},
			New: newQ7},
		{Name: "q8", Tables: []gen.Kind{gen.KindPerson, gen.KindAuction}, Columns: []string{"id", "name", "starttime"}, Stateful: true,
			Latency: &Latency{Windowed: true, Col: "starttime", Offset: 10000}, New: newQ8},
		{Name: "q11", Tables: bidT, Columns: []string{"bidder", "bid_count", "starttime", "endtime"}, Stateful: true,
			Latency: &Latency{Windowed: true, Col: "endtime"}, New: newQ11},
		{Name: "q14", Tables: bidT, Columns: []string{"auction", "bidder", "price", "bidTimeType", "dateTime", "extra", "c_counts"},
			Adapted: "the UDF count_char(extra, 'c') as CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')); HOUR(dateTime) as EXTRACT(HOUR FROM TO_TIMESTAMP_LTZ(dateTime, 3))",
			Latency: &Latency{Col: "dateTime"}, New: newQ14},
		{Name: "q18", Tables: bidT, Columns: []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra"}, Key: []string{"auction", "bidder"}, Stateful: true,
			NoLatency: "updating result: a row's change, not its event time, is the news", New: newQ18},
		{Name: "q19", Tables: bidT, Columns: []string{"auction", "bidder", "price", "channel", "url", "dateTime", "extra", "rank_number"}, Key: []string{"auction", "rank_number"}, Stateful: true,
			NoLatency: "updating result: a row's change, not its event time, is the news", New: newQ19},
		{Name: "q22", Tables: bidT, Columns: []string{"auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"},
			Adapted:   "SPLIT_INDEX(url, '/', i) (0-based) as SPLIT_PART(url, '/', i + 1)",
			NoLatency: "the result carries no event time", New: newQ22},
		{Name: "q12", Tables: bidT, Columns: []string{"bidder", "bid_count", "window_start", "window_end"}, Stateful: true, Target: 370e3, ClinkCPP: 183344,
			Adapted: "event-time windows on dateTime (Flink: processing time)",
			Latency: &Latency{Windowed: true, Col: "window_end"}, New: newQ12},
		{Name: "q15", Tables: bidT, Columns: append([]string{"day"}, dailyCols...), Key: []string{"day"}, Stateful: true,
			Adapted:   "the day is DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), 'yyyy-MM-dd') (dateTime is BIGINT epoch ms; days in UTC)",
			NoLatency: "updating result: a row's change, not its event time, is the news", NoState: "a few groups holding the COUNT(DISTINCT) sets of a day: every checkpoint writes them whole (no incremental checkpoints), which at the state run's interval takes minutes", New: newQ15},
		{Name: "q16", Tables: bidT, Columns: append([]string{"channel", "day", "minute"}, dailyCols...), Key: []string{"channel", "day"}, Stateful: true,
			Adapted:   "the day and minute are DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), ...) (dateTime is BIGINT epoch ms; UTC)",
			NoLatency: "updating result: a row's change, not its event time, is the news", NoState: "a few groups holding the COUNT(DISTINCT) sets of a day: every checkpoint writes them whole (no incremental checkpoints), which at the state run's interval takes minutes", New: newQ16},
		{Name: "q17", Tables: bidT, Columns: []string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "min_price", "max_price", "avg_price", "sum_price"},
			Key: []string{"auction", "day"}, Stateful: true,
			Adapted:   "the day is DATE_FORMAT(TO_TIMESTAMP_LTZ(dateTime, 3), 'yyyy-MM-dd') (UTC); AVG(price) (a BIGINT in Flink) as CAST(AVG(price) AS BIGINT)",
			NoLatency: "updating result: a row's change, not its event time, is the news", New: newQ17},
		{Name: "q21", Tables: bidT, Columns: []string{"auction", "bidder", "price", "channel", "channel_id"},
			NoLatency: "the result carries no event time", New: newQ21},
	} {
		q.SQL = sqlOf(q.Name)
		registry[q.Name] = q
	}
}

// Queries returns every query, in order (q0, q1, ..., q12).
func Queries() []*Query {
	var out []*Query
	for _, q := range registry {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i].Name) < num(out[j].Name) })
	return out
}

func num(name string) int {
	var n int
	fmt.Sscanf(name, "q%d", &n)
	return n
}

// Lookup finds a query by name ("q5").
func Lookup(name string) (*Query, error) {
	if q, ok := registry[strings.ToLower(name)]; ok {
		return q, nil
	}
	var names []string
	for _, q := range Queries() {
		names = append(names, q.Name)
	}
	return nil, fmt.Errorf("no query %q (the suite has %s)", name, strings.Join(names, ", "))
}

// Reads reports whether the query reads table k.
func (q *Query) Reads(k gen.Kind) bool {
	for _, t := range q.Tables {
		if t == k {
			return true
		}
	}
	return false
}

// Events is the number of rows the query reads from a stream of n events:
// the events of its tables. Throughput is events of the tables read per
// second.
func (q *Query) Events(n int64) int64 {
	var sum int64
	for _, k := range q.Tables {
		sum += gen.CountOfKind(n, k)
	}
	return sum
}

// Source says where the three tables come from.
type Source struct {
	// Brokers, when set, reads the tables from Kafka topics (one per
	// table, named by Topics or by the table) holding the JSON records
	// of `clink bench produce`, bounded at the end offsets.
	Brokers string
	Topics  map[gen.Kind]string
	// Otherwise the generator: Events in total (0: unbounded), Seed,
	// Rate (events per second of event time; 0: the default), and with
	// Pace each event no earlier than its event time on the wall clock.
	Events   int64
	Seed     int64
	Rate     int64
	Pace     bool
	BaseTime int64 // 0: the connector's default
}

// DDL declares the tables the query reads.
func (s Source) DDL(q *Query) string {
	var b strings.Builder
	for _, k := range gen.Kinds {
		if !q.Reads(k) {
			continue
		}
		fmt.Fprintf(&b, "CREATE TABLE %s (%s) WITH (\n  ", k, gen.Columns(k))
		if s.Brokers != "" {
			topic := s.Topics[k]
			if topic == "" {
				topic = k.String()
			}
			fmt.Fprintf(&b, "'connector' = 'kafka', 'brokers' = '%s', 'topic' = '%s', 'format' = 'json', 'scan_bounded' = 'latest'", s.Brokers, topic)
		} else {
			fmt.Fprintf(&b, "'connector' = 'nexmark', 'table' = '%s', 'seed' = '%d'", k, s.Seed)
			if s.Events > 0 {
				fmt.Fprintf(&b, ", 'events' = '%d'", s.Events)
			}
			if s.Rate > 0 {
				fmt.Fprintf(&b, ", 'events_per_second' = '%d'", s.Rate)
			}
			if s.Pace {
				b.WriteString(", 'pace' = 'true'")
			}
			if s.BaseTime != 0 {
				fmt.Fprintf(&b, ", 'base_time_ms' = '%d'", s.BaseTime)
			}
		}
		fmt.Fprintf(&b, ",\n  'event_time_column' = 'dateTime', 'watermark_lag_ms' = '%d');\n", Lag)
	}
	return b.String()
}

// Script is the whole job: the tables' DDL and the query; sink replaces
// the blackhole connector ("print" to see the rows).
func (s Source) Script(q *Query, sink string) string {
	body := q.SQL
	if sink != "" && sink != "blackhole" {
		body = strings.ReplaceAll(body, "'connector' = 'blackhole'", "'connector' = '"+sink+"'")
	}
	return s.DDL(q) + "\n" + body
}

// LatencyScript is the job of the latency run: the query (or its latency
// variant) into the print sink.
func (s Source) LatencyScript(q *Query) string {
	if q.Latency == nil || q.Latency.SQL == "" {
		return s.Script(q, "print")
	}
	// Keep the query's views (q5), replace its sink and INSERT.
	var keep []string
	for _, stmt := range strings.Split(q.SQL, ";") {
		if strings.Contains(stmt, "CREATE VIEW") || strings.Contains(stmt, "SET '") {
			keep = append(keep, strings.TrimSpace(stmt)+";")
		}
	}
	return s.DDL(q) + "\n" + strings.Join(keep, "\n") + "\n" + q.Latency.SQL
}
