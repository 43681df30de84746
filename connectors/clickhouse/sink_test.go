package clickhouse

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/clickhouse/chtest"
	"github.com/clink-dev/clink/vector"
)

func init() { retryBackoff = 10 * time.Millisecond }

// openSink opens a sink on the server's HTTP port for a table of schema.
func openSink(t *testing.T, srv *chtest.Server, schema *arrow.Schema, opts ...string) (*Sink, error) {
	t.Helper()
	return openSinkOn(t, srv, protoHTTP, schema, opts...)
}

// ports are the server's two ports a test runs on, by the protocol each
// speaks.
var ports = []string{protoHTTP, protoNative}

// openSinkOn opens a sink on the server's HTTP or native port, with
// protocol 'auto' unless opts set it, and checks that the sink speaks the
// port's protocol.
func openSinkOn(t *testing.T, srv *chtest.Server, port string, schema *arrow.Schema, opts ...string) (*Sink, error) {
	t.Helper()
	p := srv.HTTPPort
	if port == protoNative {
		p = srv.TCPPort
	}
	m := map[string]string{"connector": "clickhouse", "host": "127.0.0.1", "port": strconv.Itoa(p)}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := spec.Validate(m)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connector{}.NewSink(&connectors.Table{Name: "out", Schema: schema, Options: vo, EventTimeCol: -1})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	if got := s.(*Sink).protocol; got != port {
		t.Fatalf("port %d: the sink speaks %s, want %s", p, got, port)
	}
	return s.(*Sink), nil
}

var idSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// idBatch is rows from..to-1 of (id, 'row <id>').
func idBatch(mem memory.Allocator, from, to int) *vector.Batch {
	b := array.NewRecordBuilder(mem, idSchema)
	defer b.Release()
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row %d", i))
	}
	return vector.New(b.NewRecordBatch())
}

func count(t *testing.T, srv *chtest.Server, table string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimSpace(srv.MustQuery(t, "SELECT count() FROM "+table)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every Clink type into the ClickHouse types it maps to, read back with
// ClickHouse's own functions, on a server in a zone half an hour off UTC:
// a time written as text would shift.
func TestTypes(t *testing.T) {
	for _, port := range ports {
		t.Run(port, func(t *testing.T) {
			srv := chtest.StartWith(t, chtest.Config{Timezone: "Asia/Kolkata"})
			srv.MustQuery(t, `CREATE TABLE types (
				id Int64, i32 Int32, d Float64, f32 Float32, s String, b UInt8, bs String,
				ts DateTime, tsn Nullable(DateTime), tsd Date, tss String, tsms Int64,
				ws DateTime, dec Decimal(9, 2), decf Float64, decs String, n Nullable(Float64), extra String DEFAULT 'x'
			) ENGINE = MergeTree ORDER BY id`)
			ms := arrow.FixedWidthTypes.Timestamp_ms
			dec := &arrow.Decimal128Type{Precision: 9, Scale: 2}
			schema := arrow.NewSchema([]arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "i32", Type: arrow.PrimitiveTypes.Int32},
				{Name: "d", Type: arrow.PrimitiveTypes.Float64},
				{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
				{Name: "S", Type: arrow.BinaryTypes.String}, // matched case-insensitively
				{Name: "b", Type: arrow.FixedWidthTypes.Boolean},
				{Name: "bs", Type: arrow.FixedWidthTypes.Boolean},
				{Name: "ts", Type: ms},
				{Name: "tsn", Type: ms, Nullable: true},
				{Name: "tsd", Type: ms},
				{Name: "tss", Type: ms},
				{Name: "tsms", Type: ms},
				{Name: "ws", Type: arrow.PrimitiveTypes.Int64}, // epoch ms, as window_start
				{Name: "dec", Type: dec},
				{Name: "decf", Type: dec},
				{Name: "decs", Type: dec},
				{Name: "n", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
			}, nil)
			s, err := openSinkOn(t, srv, port, schema, "table", "types")
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				i32  int32
				d    float64
				f32  float32
				s    string
				b    bool
				ts   int64 // epoch ms
				dec  int64 // hundredths
				n    float64
				null bool
			}
			rows := []row{
				{1, 1.5, 0.25, "plain", true, 1772352000123, 1250, 2.5, false},
				{-7, -0.1, -3.5, "tab\tnew\nline \"q\" \\ é 😀 \x01", false, 1772352009999, -7, math.NaN(), true},
				{math.MaxInt32, 1e300, 1e-7, "", true, 0, 99999999, math.Inf(1), false},
				{math.MinInt32, math.Inf(-1), 7, "<&>", false, 4291747199999, -99999999, -0.0, false}, // 2105-12-31 23:59:59.999
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			bld := array.NewRecordBuilder(mem, schema)
			for i, r := range rows {
				bld.Field(0).(*array.Int64Builder).Append(int64(i + 1))
				bld.Field(1).(*array.Int32Builder).Append(r.i32)
				bld.Field(2).(*array.Float64Builder).Append(r.d)
				bld.Field(3).(*array.Float32Builder).Append(r.f32)
				bld.Field(4).(*array.StringBuilder).Append(r.s)
				bld.Field(5).(*array.BooleanBuilder).Append(r.b)
				bld.Field(6).(*array.BooleanBuilder).Append(r.b)
				for _, c := range []int{7, 9, 10, 11} {
					bld.Field(c).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
				}
				if r.null {
					bld.Field(8).AppendNull()
					bld.Field(16).AppendNull()
				} else {
					bld.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
					bld.Field(16).(*array.Float64Builder).Append(r.n)
				}
				bld.Field(12).(*array.Int64Builder).Append(r.ts)
				for _, c := range []int{13, 14, 15} {
					bld.Field(c).(*array.Decimal128Builder).Append(decimal128.FromI64(r.dec))
				}
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			if err := s.Write(vector.New(rec)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			got := srv.MustQuery(t, `SELECT id, i32, d, f32, s, b, bs, toUnixTimestamp(ts), toUnixTimestamp(tsn), toUInt16(tsd), tss, tsms,
				toUnixTimestamp(ws), toString(dec), decf, decs, n, extra FROM types ORDER BY id FORMAT TabSeparated`)
			var want strings.Builder
			for i, r := range rows {
				sec := r.ts / 1000
				tsn, n := strconv.FormatInt(sec, 10), tsvFloat(r.n, 64)
				if r.null {
					tsn, n = `\N`, `\N`
				}
				decText := decimalText(r.dec)
				fmt.Fprintf(&want, "%d\t%d\t%s\t%s\t%s\t%d\t%t\t%d\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\tx\n",
					i+1, r.i32, tsvFloat(r.d, 64), tsvFloat(float64(r.f32), 32), tsvEscape(r.s), b2i(r.b), r.b, sec, tsn,
					r.ts/86_400_000, time.UnixMilli(r.ts).UTC().Format("2006-01-02 15:04:05.000"), r.ts,
					sec, decText, tsvFloat(float64(r.dec)/100, 64), decText, n)
			}
			if got != want.String() {
				t.Errorf("read back:\n%s\nwant:\n%s", got, want.String())
			}
			if st := s.Stats(); st["rows_written"] != 4 || st["inserts"] != 1 {
				t.Errorf("stats %v", st)
			}
			s.Close()
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// tsvFloat is how ClickHouse 18.16 prints a float in TabSeparated.
func tsvFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	return strings.Replace(strings.Replace(s, "e+", "e", 1), "e-0", "e-", 1)
}

func tsvEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`).Replace(s)
}

// decimalText prints hundredths with two decimals.
func decimalText(h int64) string {
	sign := ""
	if h < 0 {
		sign, h = "-", -h
	}
	return fmt.Sprintf("%s%d.%02d", sign, h/100, h%100)
}

// A time DateTime cannot hold is refused, naming the column, not wrapped.
func TestDateTimeRange(t *testing.T) {
	for _, port := range ports {
		t.Run(port, func(t *testing.T) {
			srv := chtest.Start(t)
			srv.MustQuery(t, "CREATE TABLE r (ts DateTime) ENGINE = Memory")
			schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms}}, nil)
			s, err := openSinkOn(t, srv, port, schema, "table", "r")
			if err != nil {
				t.Fatal(err)
			}
			bld := array.NewRecordBuilder(memory.NewGoAllocator(), schema)
			bld.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(-1))
			err = s.Write(vector.New(bld.NewRecordBatch()))
			if err == nil || !strings.Contains(err.Error(), "column ts: 1969-12-31 23:59:59.999 (epoch ms -1) is outside ClickHouse DateTime's range") {
				t.Fatalf("error %v", err)
			}
		})
	}
}

// Rows go out batch_rows at a time; the remainder waits for Flush, a
// checkpoint, or batch_interval_ms.
func TestBatchRows(t *testing.T) {
	for _, port := range ports {
		t.Run(port, func(t *testing.T) {
			srv := chtest.Start(t)
			srv.MustQuery(t, "CREATE TABLE t (id Int64, s String) ENGINE = MergeTree ORDER BY id")
			s, err := openSinkOn(t, srv, port, idSchema, "table", "t", "batch_rows", "5", "batch_interval_ms", "600000")
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			steps := []struct {
				from, to    int
				want, calls int64
			}{
				{0, 3, 0, 0},   // 3 buffered
				{3, 6, 5, 1},   // 6: one INSERT of 5, 1 left
				{6, 20, 20, 4}, // 15: three more INSERTs of 5, none left
				{20, 22, 20, 4},
			}
			for _, st := range steps {
				if err := s.Write(idBatch(mem, st.from, st.to)); err != nil {
					t.Fatal(err)
				}
				if n := count(t, srv, "t"); n != int(st.want) || s.inserts.Load() != st.calls {
					t.Fatalf("after rows %d..%d: %d rows in ClickHouse in %d inserts, want %d in %d", st.from, st.to, n, s.inserts.Load(), st.want, st.calls)
				}
			}
			// A checkpoint inserts the partial batch.
			if err := s.SnapshotState(nil); err != nil {
				t.Fatal(err)
			}
			if n := count(t, srv, "t"); n != 22 {
				t.Fatalf("after a checkpoint: %d rows", n)
			}
			if err := s.Write(idBatch(mem, 22, 23)); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			got := srv.MustQuery(t, "SELECT count(), uniqExact(id), min(id), max(id), any(s) FROM t WHERE id = 22 OR id < 100 FORMAT TSV")
			if got != "23\t23\t0\t22\trow 0\n" && !strings.HasPrefix(got, "23\t23\t0\t22\t") {
				t.Fatalf("rows: %q", got)
			}
			if s.inserts.Load() != 6 {
				t.Errorf("%d inserts, want 6", s.inserts.Load())
			}
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// A partial batch appears batch_interval_ms after its first row without
// Flush.
func TestBatchInterval(t *testing.T) {
	for _, port := range ports {
		t.Run(port, func(t *testing.T) {
			srv := chtest.Start(t)
			srv.MustQuery(t, "CREATE TABLE t (id Int64, s String) ENGINE = MergeTree ORDER BY id")
			const interval = 300 * time.Millisecond
			s, err := openSinkOn(t, srv, port, idSchema, "table", "t", "batch_interval_ms", strconv.Itoa(int(interval.Milliseconds())))
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewGoAllocator()
			for round := 0; round < 2; round++ {
				start := time.Now()
				if err := s.Write(idBatch(mem, 10*round, 10*round+2)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(interval / 3)
				if err := s.Write(idBatch(mem, 10*round+2, 10*round+3)); err != nil {
					t.Fatal(err)
				}
				if n := count(t, srv, "t"); n != 3*round {
					t.Fatalf("round %d: %d rows before the interval", round, n)
				}
				for count(t, srv, "t") < 3*(round+1) || s.inserts.Load() < int64(round+1) {
					if time.Since(start) > 10*time.Second {
						t.Fatalf("round %d: rows did not appear", round)
					}
					time.Sleep(10 * time.Millisecond)
				}
				// One INSERT per round: the interval counts from the first row.
				if el := time.Since(start); el < interval || s.inserts.Load() != int64(round+1) {
					t.Fatalf("round %d: rows after %s in %d inserts", round, el, s.inserts.Load())
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The timer's inserts race with Write's: every row arrives once.
func TestTimerAndWrites(t *testing.T) {
	for _, port := range ports {
		t.Run(port, func(t *testing.T) {
			srv := chtest.Start(t)
			srv.MustQuery(t, "CREATE TABLE t (id Int64, s String) ENGINE = MergeTree ORDER BY id")
			s, err := openSinkOn(t, srv, port, idSchema, "table", "t", "batch_rows", "50", "batch_interval_ms", "1")
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			const n = 3000
			for i := 0; i < n; i += 3 {
				if err := s.Write(idBatch(mem, i, i+3)); err != nil {
					t.Fatal(err)
				}
				if i%300 == 0 {
					time.Sleep(2 * time.Millisecond)
				}
			}
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := srv.MustQuery(t, "SELECT count(), uniqExact(id), min(id), max(id) FROM t FORMAT TSV"); got != fmt.Sprintf("%d\t%d\t0\t%d\n", n, n, n-1) {
				t.Fatalf("rows: %q", got)
			}
			t.Logf("%d inserts", s.inserts.Load())
			if mem.CurrentAlloc() != 0 {
				t.Errorf("%d bytes still allocated", mem.CurrentAlloc())
			}
		})
	}
}

// ClickHouse's errors name the table, the server and its message.
func TestServerErrors(t *testing.T) {
	srv := chtest.Start(t)
	addr := srv.HTTPAddr

	_, err := openSink(t, srv, idSchema, "table", "missing")
	for _, want := range []string{"clickhouse sink 'out'", "default.missing at " + addr, "HTTP 404", "Code: 60", "Table default.missing doesn't exist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("missing table: error %v, want %q", err, want)
		}
	}

	srv.MustQuery(t, "CREATE DATABASE db2")
	srv.MustQuery(t, "CREATE TABLE db2.t (id Int64, other String, m String MATERIALIZED 'x') ENGINE = Memory")
	_, err = openSink(t, srv, idSchema, "database", "db2", "table", "t")
	if err == nil || err.Error() != "clickhouse sink 'out': column s is not a column of ClickHouse table db2.t at "+addr+" (it has id, other, m)" {
		t.Fatalf("missing column: %v", err)
	}
	mat := arrow.NewSchema([]arrow.Field{{Name: "m", Type: arrow.BinaryTypes.String}}, nil)
	if _, err = openSink(t, srv, mat, "database", "db2", "table", "t"); err == nil || !strings.Contains(err.Error(), "ClickHouse column m of db2.t at "+addr+" is MATERIALIZED") {
		t.Fatalf("materialized column: %v", err)
	}
	dbl := arrow.NewSchema([]arrow.Field{{Name: "other", Type: arrow.PrimitiveTypes.Float64}}, nil)
	srv.MustQuery(t, "CREATE TABLE db2.d (other DateTime) ENGINE = Memory")
	if _, err = openSink(t, srv, dbl, "database", "db2", "table", "d"); err == nil ||
		!strings.Contains(err.Error(), "column other (DOUBLE) cannot be written to ClickHouse column other (DateTime); CAST it") {
		t.Fatalf("type mismatch: %v", err)
	}

	// Wrong credentials.
	_, err = openSink(t, srv, idSchema, "table", "t", "user", chtest.User, "password", "wrong")
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "Wrong password for user clink") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("bad password: %v", err)
	}

	// The table goes away after the sink opened it.
	srv.MustQuery(t, "CREATE TABLE gone (id Int64, s String) ENGINE = Memory")
	t.Setenv("CLINK_TEST_CH_PASSWORD", chtest.Password)
	s, err := openSink(t, srv, idSchema, "table", "gone", "user", chtest.User, "password", "env://CLINK_TEST_CH_PASSWORD")
	if err != nil {
		t.Fatal(err)
	}
	srv.MustQuery(t, "DROP TABLE gone")
	if err := s.Write(idBatch(memory.NewGoAllocator(), 0, 3)); err != nil {
		t.Fatal(err)
	}
	err = s.Flush()
	want := "clickhouse sink 'out': insert of 3 rows into default.gone at " + addr + ": HTTP 404: Code: 60, e.displayText() = DB::Exception: Table default.gone doesn't exist."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("dropped table: error %v\nwant %s...", err, want)
	}
	// The sink stays failed.
	if err2 := s.Write(idBatch(memory.NewGoAllocator(), 3, 4)); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("write after a failure: %v", err2)
	}

	// A NULL into a column that is not Nullable: ClickHouse's parse error.
	srv.MustQuery(t, "CREATE TABLE notnull (id Int64, s String) ENGINE = Memory")
	s, err = openSink(t, srv, idSchema, "table", "notnull")
	if err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), idSchema)
	bld.Field(0).(*array.Int64Builder).Append(1)
	bld.Field(1).AppendNull()
	if err := s.Write(vector.New(bld.NewRecordBatch())); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err == nil || !strings.Contains(err.Error(), "into default.notnull at "+addr+": HTTP 400: Code: 26") || !strings.Contains(err.Error(), "(while read the value of key s)") {
		t.Fatalf("null: %v", err)
	}
}

// Connection failures are retried with backoff, then fail naming the
// server.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	tb, err := table(t, "port", strconv.Itoa(port), "max_retries", "2", "protocol", "http")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Connector{}.NewSink(tb)
	want := fmt.Sprintf("clickhouse sink 'sink_t': reading the columns of default.out at 127.0.0.1:%d: post: dial tcp 127.0.0.1:%d: connect: connection refused (after 3 attempts)", port, port)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}

	// 'auto' asks both protocols, once each.
	tb, err = table(t, "port", strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Connector{}.NewSink(tb)
	want = fmt.Sprintf("clickhouse sink 'sink_t': 127.0.0.1:%d answers neither ClickHouse's HTTP interface (GET /ping: dial tcp 127.0.0.1:%d: connect: connection refused) "+
		"nor its native protocol (dial tcp 127.0.0.1:%d: connect: connection refused); check 'host' and 'port' "+
		"(ClickHouse listens for HTTP on its http_port, 8123 by default, and for the native protocol on its tcp_port, 9000 by default)", port, port, port)
	if err == nil || err.Error() != want {
		t.Fatalf("error %v\nwant  %s", err, want)
	}
}

// A port where something else listens (here an HTTP server that is not
// ClickHouse) fails at NewSink naming the address and both protocols.
func TestNotClickHouse(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	tb, err := table(t, "port", port, "request_timeout_ms", "500")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Connector{}.NewSink(tb)
	for _, want := range []string{
		"clickhouse sink 'sink_t': " + addr + " answers neither ClickHouse's HTTP interface (GET /ping: HTTP 404 \"404 page not found\") nor its native protocol (",
		"check 'host' and 'port'",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v\nwant %s", err, want)
		}
	}

	// protocol = 'native' on a port that is not.
	tb, err = table(t, "port", port, "request_timeout_ms", "500", "protocol", "native")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Connector{}.NewSink(tb)
	if want := "clickhouse sink 'sink_t': " + addr + ": the native protocol's handshake failed (protocol = 'native'): "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v\nwant %s...", err, want)
	}
}

// An INSERT whose connection breaks, or that gets 503, is sent again; a
// 500 is not.
func TestRetry(t *testing.T) {
	var inserts, fail atomic.Int64
	var mu sync.Mutex
	var bodies []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get("query")
		if strings.HasPrefix(q, "DESCRIBE") {
			io.WriteString(w, "id\tInt64\t\t\t\ns\tString\t\t\t\n")
			return
		}
		if u, p, ok := r.BasicAuth(); !ok || u != "default" || p != "" {
			t.Errorf("auth %q %q", u, p)
		}
		if q != "INSERT INTO `default`.`out` (`id`, `s`) FORMAT JSONEachRow" {
			t.Errorf("query %q", q)
		}
		body, _ := io.ReadAll(r.Body)
		n := inserts.Add(1)
		switch {
		case fail.Load() == 500:
			http.Error(w, "Code: 27, e.displayText() = DB::Exception: Cannot parse input", 500)
		case n == 1:
			// Break the connection without an answer.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case n == 2:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			mu.Lock()
			bodies = append(bodies, string(body))
			mu.Unlock()
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	tb, err := table(t, "port", port, "protocol", "http") // the fake answers no /ping
	if err != nil {
		t.Fatal(err)
	}
	tb.Schema = idSchema
	sink, err := Connector{}.NewSink(tb)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	s := sink.(*Sink)
	mem := memory.NewGoAllocator()
	if err := s.Write(idBatch(mem, 0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `{"id":0,"s":"row 0"}` + "\n" + `{"id":1,"s":"row 1"}` + "\n"
	mu.Lock()
	defer mu.Unlock()
	if inserts.Load() != 3 || len(bodies) != 1 || bodies[0] != want {
		t.Fatalf("%d attempts, bodies %q", inserts.Load(), bodies)
	}
	fail.Store(500)
	if err := s.Write(idBatch(mem, 2, 3)); err != nil {
		t.Fatal(err)
	}
	err = s.Flush()
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 500 || inserts.Load() != 4 {
		t.Fatalf("500: %v after %d attempts", err, inserts.Load())
	}
}

// Over the native protocol, ClickHouse's exceptions name the table, the
// server and its message, as over HTTP; a NULL into a column that is not
// Nullable and a type the native path does not write are refused before
// anything is sent.
func TestNativeErrors(t *testing.T) {
	srv := chtest.Start(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.TCPPort))

	_, err := openSinkOn(t, srv, protoNative, idSchema, "table", "missing")
	for _, want := range []string{"clickhouse sink 'out': reading the columns of default.missing at " + addr + " (native protocol, server 18.16.1)", "code: 60", "Table default.missing doesn't exist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("missing table: error %v, want %q", err, want)
		}
	}

	for _, p := range []string{protoAuto, protoNative} {
		_, err = openSinkOn(t, srv, protoNative, idSchema, "table", "t", "user", chtest.User, "password", "wrong", "protocol", p)
		if err == nil || !strings.Contains(err.Error(), "Wrong password for user clink") || strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "neither") {
			t.Fatalf("bad password, protocol %s: %v", p, err)
		}
	}

	srv.MustQuery(t, "CREATE TABLE gone (id Int64, s String) ENGINE = Memory")
	t.Setenv("CLINK_TEST_CH_PASSWORD", chtest.Password)
	s, err := openSinkOn(t, srv, protoNative, idSchema, "table", "gone", "user", chtest.User, "password", "env://CLINK_TEST_CH_PASSWORD")
	if err != nil {
		t.Fatal(err)
	}
	srv.MustQuery(t, "DROP TABLE gone")
	if err := s.Write(idBatch(memory.NewGoAllocator(), 0, 3)); err != nil {
		t.Fatal(err)
	}
	err = s.Flush()
	want := "clickhouse sink 'out': insert of 3 rows into default.gone at " + addr + ": code: 60, message: Table default.gone doesn't exist."
	if err == nil || err.Error() != want {
		t.Fatalf("dropped table: error %v\nwant %s", err, want)
	}
	if err2 := s.Write(idBatch(memory.NewGoAllocator(), 3, 4)); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("write after a failure: %v", err2)
	}

	srv.MustQuery(t, "CREATE TABLE notnull (id Int64, s String) ENGINE = Memory")
	s, err = openSinkOn(t, srv, protoNative, idSchema, "table", "notnull")
	if err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.NewGoAllocator(), idSchema)
	bld.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	bld.Field(1).(*array.StringBuilder).Append("a")
	bld.Field(1).AppendNull()
	err = s.Write(vector.New(bld.NewRecordBatch()))
	if want := "clickhouse sink 'out' (default.notnull at " + addr + "): column s: NULL cannot be written to ClickHouse column s (String), which is not Nullable"; err == nil || err.Error() != want {
		t.Fatalf("null: %v\nwant %s", err, want)
	}
	if err := s.Flush(); err != nil || count(t, srv, "notnull") != 0 { // the batch went in whole or not at all
		t.Fatalf("after the refused batch: %v", err)
	}

	srv.MustQuery(t, "CREATE TABLE small (id Int8, s String) ENGINE = Memory")
	s, err = openSinkOn(t, srv, protoNative, idSchema, "table", "small")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(idBatch(memory.NewGoAllocator(), 127, 129)); err == nil || !strings.Contains(err.Error(), "column id: 128 is outside ClickHouse Int8's range") {
		t.Fatalf("overflow: %v", err)
	}

	dbl := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.PrimitiveTypes.Float64}}, nil)
	srv.MustQuery(t, "CREATE TABLE ints (f Int64) ENGINE = Memory")
	_, err = openSinkOn(t, srv, protoNative, dbl, "table", "ints")
	if want := "clickhouse sink 'out': column f (DOUBLE) into ClickHouse column f (Int64): the native protocol path does not write this pair; use the HTTP interface (protocol = 'http' and the server's http_port, 8123 by default)"; err == nil || err.Error() != want {
		t.Fatalf("unsupported pair: %v\nwant %s", err, want)
	}
	srv.MustQuery(t, "CREATE TABLE d (f DateTime) ENGINE = Memory")
	if _, err = openSinkOn(t, srv, protoNative, dbl, "table", "d"); err == nil || !strings.Contains(err.Error(), "column f (DOUBLE) cannot be written to ClickHouse column f (DateTime); CAST it") {
		t.Fatalf("type mismatch: %v", err)
	}
}
