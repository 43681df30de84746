// Package clickhouse is the ClickHouse sink: rows are batched and inserted
// over ClickHouse's HTTP interface as `INSERT INTO db.table (columns...)
// FORMAT JSONEachRow` (net/http), or over its native protocol with the
// ClickHouse Go client, as the port answers at submission. Each value is written in the
// form the target column's type accepts (the sink reads the table's columns
// when it opens), so that, e.g., a TIMESTAMP(3) lands in a DateTime column
// whatever the server's time zone. The guarantee is at-least-once: buffered
// rows are inserted at every checkpoint and at the end of input, and a
// restarted job inserts the rows after its checkpoint again.
package clickhouse

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'clickhouse' connector.
type Connector struct{}

var _ connectors.SinkFactory = Connector{}

// deliveryGuarantee is the shared option with this sink's default.
var deliveryGuarantee = func() connectors.Option {
	o := connectors.DeliveryGuaranteeOption
	o.Default = "at_least_once"
	o.Example = "at_least_once"
	o.Description = "'at_least_once' (and 'none'): buffered rows are inserted at every checkpoint and at the end of input, and a restarted job inserts the rows after its checkpoint again (use a ReplacingMergeTree table to collapse them); 'exactly_once' is refused (an INSERT, over HTTP or the native protocol, cannot be staged and committed with a checkpoint)"
	return o
}()

var spec = &connectors.Spec{
	Name: "clickhouse",
	Description: "Inserts rows into a ClickHouse table over its HTTP interface (`INSERT ... FORMAT JSONEachRow`, batched) or its native protocol (port 9000, with the ClickHouse Go client), whichever the port speaks, at least once: buffered rows go out at every checkpoint. " +
		"Each value is written in the form its ClickHouse column's type accepts (TIMESTAMP into DateTime as epoch seconds, BOOLEAN into UInt8 as 0/1, ...). Changelogs are refused. See docs/clickhouse.md.",
	Guarantee: "Sink: **at-least-once**: batches are flushed at every checkpoint, and after a restore the rows since the last checkpoint are inserted again (a ReplacingMergeTree ordered by the key collapses the copies); `delivery_guarantee = 'exactly_once'` is refused at planning.",
	Sink:      true,
	Options: []connectors.Option{
		{Name: "connector", Type: connectors.String, Required: true, Description: "the connector name", Example: "clickhouse"},
		{Name: "format", Type: connectors.Enum, Values: []string{"json"}, Default: "json", Description: "rows go out as JSONEachRow", Example: "json"},
		deliveryGuarantee,
		{Name: "host", Type: connectors.String, Default: "127.0.0.1", Description: "the ClickHouse server's host name or address", Example: "clickhouse-1"},
		{Name: "port", Type: connectors.Int, Default: "8123", Description: "the server's HTTP port (its http_port, 8123 by default) or its native protocol port (its tcp_port, 9000 by default); with protocol = 'auto' the sink asks the port at submission which of the two it speaks (GET /ping, then the native handshake) and fails naming host:port when it answers neither", Example: "8123"},
		{Name: "protocol", Type: connectors.Enum, Values: []string{protoAuto, protoHTTP, protoNative}, Default: protoAuto, Description: "how rows are inserted: 'http' (`INSERT ... FORMAT JSONEachRow` over the HTTP interface), 'native' (ClickHouse's native TCP protocol with the ClickHouse Go client, LZ4-compressed blocks), or 'auto': whichever the port speaks. Both write the same values with the same batching and guarantee; the native path writes String, FixedString, Enum (from strings), Int/UInt 8 to 64, Float32/64, Decimal, Date, DateTime and their Nullable forms, and refuses other column types at submission (use 'http' for them)", Example: "native"},
		{Name: "database", Type: connectors.String, Default: "default", Description: "the database of the table", Example: "metrics"},
		{Name: "table", Type: connectors.String, Required: true, Description: "the ClickHouse table written; it must exist and have a column of each of the Clink table's column names", Example: "sensor_windows"},
		{Name: "user", Type: connectors.String, Default: "default", Description: "the ClickHouse user (HTTP basic authentication)", Example: "clink"},
		{Name: "password", Type: connectors.String, Secret: true, Description: "the user's password; give it as `env://VAR` to read it from the environment (a literal value is stored in the plan). Never logged", Example: "env://CLICKHOUSE_PASSWORD"},
		{Name: "batch_rows", Type: connectors.Int, Default: "10000", Description: "rows per INSERT: a batch is sent when it holds this many rows", Example: "50000"},
		{Name: "batch_interval_ms", Type: connectors.Int, Default: "1000", Description: "a partly filled batch is sent at most this long after its first row", Example: "5000"},
		{Name: "request_timeout_ms", Type: connectors.Int, Default: "60000", Description: "how long one HTTP request or native INSERT may take", Example: "120000"},
		{Name: "max_retries", Type: connectors.Int, Default: "4", Description: "how often a request that failed to connect or lost its connection (or got HTTP 502/503/504; over the native protocol, any failure but an exception of the server) is retried, after 0.25 s doubling up to 5 s; an INSERT retried after its connection broke may have been applied, so it may insert its rows twice (at least once)", Example: "10"},
	},
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// config is a table's validated options.
type config struct {
	addr     string // host:port
	protocol string // auto, http or native
	database string
	table    string
	user     string
	password string
	rows     int
	interval time.Duration
	timeout  time.Duration
	retries  int
}

// qualified is the table as ClickHouse SQL names it.
func (c *config) qualified() string { return quoteIdent(c.database) + "." + quoteIdent(c.table) }

// String names the table and server in errors: db.table at host:port.
func (c *config) String() string { return c.database + "." + c.table + " at " + c.addr }

// newConfig checks the options; the password's value never appears in an
// error.
func newConfig(o connectors.Options) (*config, error) {
	c := &config{database: o["database"], table: o["table"], user: o["user"], protocol: o["protocol"]}
	host := strings.TrimSpace(o["host"])
	if host == "" || strings.Contains(host, "/") || strings.Count(host, ":") == 1 {
		return nil, &connectors.OptionError{Key: "host", Msg: fmt.Sprintf("option 'host': '%s' is not a host name or address (give the port in 'port', no scheme)", host)}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	port := o.Int("port")
	if port < 1 || port > 65535 {
		return nil, &connectors.OptionError{Key: "port", Msg: fmt.Sprintf("option 'port': %d is not a port number", port)}
	}
	c.addr = net.JoinHostPort(host, strconv.FormatInt(port, 10))
	for _, k := range []string{"database", "table", "user"} {
		if strings.TrimSpace(o[k]) == "" {
			return nil, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s' is empty", k)}
		}
	}
	var err error
	if c.password, err = o.Secret("password"); err != nil {
		return nil, err
	}
	positive := func(k string, max int64) (int64, error) {
		v := o.Int(k)
		if v < 1 || v > max {
			return 0, &connectors.OptionError{Key: k, Msg: fmt.Sprintf("option '%s': %d is out of range (1 to %d)", k, v, max)}
		}
		return v, nil
	}
	rows, err := positive("batch_rows", 10_000_000)
	if err != nil {
		return nil, err
	}
	interval, err := positive("batch_interval_ms", 24*3600*1000)
	if err != nil {
		return nil, err
	}
	timeout, err := positive("request_timeout_ms", 24*3600*1000)
	if err != nil {
		return nil, err
	}
	retries := o.Int("max_retries")
	if retries < 0 || retries > 100 {
		return nil, &connectors.OptionError{Key: "max_retries", Msg: fmt.Sprintf("option 'max_retries': %d is out of range (0 to 100)", retries)}
	}
	c.rows, c.retries = int(rows), int(retries)
	c.interval = time.Duration(interval) * time.Millisecond
	c.timeout = time.Duration(timeout) * time.Millisecond
	return c, nil
}

// NewSink checks the options, finds which protocol the port speaks, then
// reads the table's columns from the server, so that a wrong address or
// port, credentials, table or column fails before the job starts.
// ValidateSink's checks come first, without a connection.
func (Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	if err := (Connector{}).ValidateSink(t); err != nil {
		return nil, err
	}
	c, err := newConfig(t.Options)
	if err != nil {
		return nil, err
	}
	s, err := newSink(t, c)
	if err != nil {
		return nil, fmt.Errorf("clickhouse sink '%s': %w", t.Name, err)
	}
	return s, nil
}
