// Package postgres is the PostgreSQL sink. Rows go into an existing table,
// batched: appended with binary COPY, or in upsert mode applied as a
// changelog by primary key (INSERT ... ON CONFLICT DO UPDATE and DELETE,
// each one statement over arrays of rows). The sink checks the table's
// columns and types when it opens, so a wrong address, table, column or
// type fails the job before it starts.
//
// The guarantee is at-least-once by default: buffered rows are written at
// every checkpoint. With delivery_guarantee = 'exactly_once' the rows
// between two checkpoints go into one database transaction that is
// prepared (PREPARE TRANSACTION) at the checkpoint barrier and committed
// (COMMIT PREPARED) when the checkpoint completes; recovery commits or
// rolls back what a crashed run left prepared (see TxSink).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'postgres' connector.
type Connector struct{}

var (
	_ connectors.SinkFactory  = Connector{}
	_ connectors.UpdatingSink = Connector{}
)

var deliveryGuarantee = func() connectors.Option {
	o := connectors.DeliveryGuaranteeOption
	o.Default = "at_least_once"
	o.Description = "'at_least_once' (and 'none'): buffered rows are written at every checkpoint, and a restarted job writes the rows after its checkpoint again (upsert mode makes that harmless); " +
		"'exactly_once': the rows between two checkpoints are one transaction, prepared at the checkpoint (PREPARE TRANSACTION) and committed when it completes; needs checkpoints and a server with max_prepared_transactions > 0"
	return o
}()

var spec = &connectors.Spec{
	Name: "postgres",
	Description: "Writes rows into an existing PostgreSQL table: appended with binary COPY, or upserted by primary key from a changelog (INSERT ... ON CONFLICT DO UPDATE, DELETE). " +
		"Columns and types are checked when the job starts. At least once by default; exactly once with prepared transactions (two-phase commit with checkpoints). See docs/postgres.md.",
	Guarantee: "Sink: **at-least-once** by default (rows flushed at every checkpoint; after a restore the rows since the last checkpoint are written again: idempotent in upsert mode); **exactly-once** with `delivery_guarantee = 'exactly_once'`: one `PREPARE TRANSACTION` per checkpoint, committed when the checkpoint completes and resolved from the checkpoint on recovery (needs `max_prepared_transactions > 0`).",
	Sink:      true,
	Options: []connectors.Option{
		{Name: "connector", Type: connectors.String, Required: true, Description: "the connector name", Example: "postgres"},
		deliveryGuarantee,
		{Name: "url", Type: connectors.String, Secret: true, Description: "a PostgreSQL connection string (`postgres://user@host:port/database?sslmode=disable` or `host=... dbname=...`), instead of host, port, database, user and sslmode; give it as `env://VAR` to read it from the environment (a literal value is stored in the plan, and `clink explain` shows it). Never logged", Example: "postgres://clink@db:5432/metrics"},
		{Name: "host", Type: connectors.String, Description: "the server's host name or address, or a Unix socket directory (without 'url'; default 127.0.0.1)", Example: "db-1"},
		{Name: "port", Type: connectors.Int, Description: "the server's port (without 'url'; default 5432)", Example: "5432"},
		{Name: "database", Type: connectors.String, Description: "the database (without 'url'; default postgres)", Example: "metrics"},
		{Name: "user", Type: connectors.String, Description: "the user (without 'url'; default postgres)", Example: "clink"},
		{Name: "password", Type: connectors.String, Secret: true, Description: "the user's password (also with 'url', replacing one there); give it as `env://VAR` to read it from the environment (a literal value is stored in the plan). Never logged", Example: "env://PGPASSWORD"},
		{Name: "sslmode", Type: connectors.Enum, Values: []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}, Description: "TLS, as libpq's sslmode (without 'url'; default prefer)", Example: "require"},
		{Name: "table", Type: connectors.String, Description: "the PostgreSQL table, `name` or `schema.name` (an unquoted name is folded to lower case, as PostgreSQL does; double quotes keep it); default: the Clink table's name. It must exist and have a column of each of the Clink table's column names", Example: "public.sensor_windows"},
		{Name: "mode", Type: connectors.Enum, Values: []string{"append", "upsert"}, Default: "append", Description: "'append' inserts every row (COPY); 'upsert' applies a changelog by primary key: +I and +U rows are INSERT ... ON CONFLICT (key) DO UPDATE, -D rows DELETE, -U rows are skipped. Upsert needs a primary key and a unique index on it in PostgreSQL", Example: "upsert"},
		{Name: "primary_key", Type: connectors.String, Description: "upsert mode: comma-separated key columns (or PRIMARY KEY (...) NOT ENFORCED in CREATE TABLE)", Example: "sensor_id"},
		{Name: "batch_rows", Type: connectors.Int, Default: "10000", Description: "rows per statement: buffered rows are sent when this many are waiting (and at every checkpoint)", Example: "50000"},
		{Name: "batch_interval_ms", Type: connectors.Int, Default: "1000", Description: "at_least_once: a partly filled batch is sent at most this long after its first row (exactly_once sends at checkpoints)", Example: "5000"},
		{Name: "transaction_id_prefix", Type: connectors.String, Description: "exactly_once: the prefix of the prepared transactions' global ids, `<prefix>:<subtask>:<seq>`; default `clink-<Clink table>-<database>.<schema>.<table>`. It must be unique among the jobs writing to one server: recovery rolls back prepared transactions of this prefix that its checkpoint does not list", Example: "clink-windows"},
		{Name: "connect_timeout_ms", Type: connectors.Int, Default: "10000", Description: "how long connecting may take", Example: "30000"},
		{Name: "request_timeout_ms", Type: connectors.Int, Default: "60000", Description: "how long one statement (a COPY, an upsert, a commit) may take before the job fails", Example: "300000"},
	},
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// AcceptsUpdates: the sink consumes a changelog only in upsert mode with
// a primary key.
func (Connector) AcceptsUpdates(opts connectors.Options) error {
	if opts["mode"] != "upsert" || strings.TrimSpace(opts["primary_key"]) == "" {
		return fmt.Errorf("the postgres sink applies updates only with 'mode' = 'upsert' and a primary key (PRIMARY KEY (...) NOT ENFORCED or 'primary_key')")
	}
	return nil
}

// config is a table's validated options.
type config struct {
	conn     *pgx.ConnConfig
	addr     string // host:port (or the socket directory)
	database string
	user     string
	table    tableName
	upsert   bool
	key      []string // Clink column names
	exactly  bool
	rows     int
	interval time.Duration
	timeout  time.Duration
	dial     time.Duration // connect_timeout_ms
	prefix   string        // "" = the default
}

// String names the server and database in errors: host:port/database.
func (c *config) String() string { return c.addr + "/" + c.database }

// newConfig checks the options of table t (checkConfig), then resolves
// the secrets and parses the connection settings, which reads files (pgx
// reads ~/.pgpass, a service file and TLS certificates); no value of a
// secret option ever appears in an error.
func newConfig(t *connectors.Table) (*config, error) {
	c, cs, err := checkConfig(t)
	if err != nil {
		return nil, err
	}
	if c.conn, err = connConfig(t.Options, cs); err != nil {
		return nil, err
	}
	c.conn.ConnectTimeout = c.dial
	c.database, c.user = c.conn.Database, c.conn.User
	if strings.HasPrefix(c.conn.Host, "/") {
		c.addr = c.conn.Host + ":" + strconv.Itoa(int(c.conn.Port))
	} else {
		c.addr = net.JoinHostPort(c.conn.Host, strconv.Itoa(int(c.conn.Port)))
	}
	return c, nil
}

// checkConfig makes newConfig's checks that need no I/O and returns the
// config without its connection settings, and the connection string of
// the separate options ("" with 'url', which may be a secret).
func checkConfig(t *connectors.Table) (*config, string, error) {
	o := t.Options
	c := &config{upsert: o["mode"] == "upsert", exactly: o["delivery_guarantee"] == "exactly_once"}
	cs, err := connString(o)
	if err != nil {
		return nil, "", err
	}
	if name, given := o["table"]; given {
		if c.table, err = parseTableName(name); err != nil {
			return nil, "", &connectors.OptionError{Key: "table", Msg: fmt.Sprintf("option 'table': %v", err)}
		}
	} else if c.table, err = parseTableName(t.Name); err != nil {
		// The Clink table's name, read as PostgreSQL reads an unquoted
		// name (schema.table, folded to lower case).
		c.table = tableName{name: t.Name}
	}
	if k := strings.TrimSpace(o["primary_key"]); k != "" {
		for _, col := range strings.Split(k, ",") {
			col = strings.TrimSpace(col)
			idx := clinkColumn(t, col)
			if idx < 0 {
				return nil, "", &connectors.OptionError{Key: "primary_key", Msg: fmt.Sprintf("option 'primary_key': '%s' is not a column of %s", col, t.Name)}
			}
			c.key = append(c.key, t.Schema.Field(idx).Name)
		}
	}
	if c.upsert && len(c.key) == 0 {
		return nil, "", &connectors.OptionError{Key: "mode", Msg: fmt.Sprintf("sink '%s': 'mode' = 'upsert' needs a primary key: PRIMARY KEY (...) NOT ENFORCED in CREATE TABLE, or 'primary_key'", t.Name)}
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
		return nil, "", err
	}
	interval, err := positive("batch_interval_ms", 24*3600*1000)
	if err != nil {
		return nil, "", err
	}
	timeout, err := positive("request_timeout_ms", 24*3600*1000)
	if err != nil {
		return nil, "", err
	}
	connect, err := positive("connect_timeout_ms", 3600*1000)
	if err != nil {
		return nil, "", err
	}
	c.rows = int(rows)
	c.interval = time.Duration(interval) * time.Millisecond
	c.timeout = time.Duration(timeout) * time.Millisecond
	c.dial = time.Duration(connect) * time.Millisecond
	if p, given := o["transaction_id_prefix"]; given {
		if err := checkPrefix(p); err != nil {
			return nil, "", &connectors.OptionError{Key: "transaction_id_prefix", Msg: fmt.Sprintf("option 'transaction_id_prefix': %v", err)}
		}
		c.prefix = p
	}
	return c, cs, nil
}

// clinkColumn finds a Clink column by name (case-insensitively, as Clink
// resolves identifiers), or -1.
func clinkColumn(t *connectors.Table, name string) int {
	for i, f := range t.Schema.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range t.Schema.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// connString checks the connection options without I/O: 'url' or host,
// port, database, user and sslmode, not both. It returns the connection
// string of the separate options, "" with 'url' (connConfig resolves it:
// it may be env://).
func connString(o connectors.Options) (string, error) {
	if u, given := o["url"]; given {
		for _, k := range []string{"host", "port", "database", "user", "sslmode"} {
			if _, also := o[k]; also {
				return "", &connectors.OptionError{Key: k, Msg: fmt.Sprintf("give either 'url' or '%s' (with host, port, database, user, sslmode), not both", k)}
			}
		}
		if !strings.HasPrefix(u, "env://") {
			return "", checkURL(u)
		}
		return "", nil
	}
	kv := map[string]string{"host": "127.0.0.1", "port": "5432", "dbname": "postgres", "user": "postgres", "sslmode": "prefer"}
	if h, ok := o["host"]; ok {
		h = strings.TrimSpace(h)
		if h == "" || strings.Contains(h, "://") || (strings.Count(h, ":") == 1 && !strings.HasPrefix(h, "/")) {
			return "", &connectors.OptionError{Key: "host", Msg: fmt.Sprintf("option 'host': '%s' is not a host name, address or socket directory (give the port in 'port', or a connection string in 'url')", h)}
		}
		kv["host"] = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	if _, ok := o["port"]; ok {
		p := o.Int("port")
		if p < 1 || p > 65535 {
			return "", &connectors.OptionError{Key: "port", Msg: fmt.Sprintf("option 'port': %d is not a port number", p)}
		}
		kv["port"] = strconv.FormatInt(p, 10)
	}
	for opt, key := range map[string]string{"database": "dbname", "user": "user"} {
		if v, ok := o[opt]; ok {
			if strings.TrimSpace(v) == "" {
				return "", &connectors.OptionError{Key: opt, Msg: fmt.Sprintf("option '%s' is empty", opt)}
			}
			kv[key] = v
		}
	}
	if v, ok := o["sslmode"]; ok {
		kv["sslmode"] = v
	}
	var b strings.Builder
	for _, k := range []string{"host", "port", "dbname", "user", "sslmode"} {
		fmt.Fprintf(&b, "%s='%s' ", k, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(kv[k]))
	}
	return b.String(), nil
}

// checkURL refuses an empty connection string. Its syntax is pgx's to
// check (connConfig), which reads files as it parses.
func checkURL(u string) error {
	if strings.TrimSpace(u) == "" {
		return &connectors.OptionError{Key: "url", Msg: "option 'url' is empty"}
	}
	return nil
}

// connConfig builds the connection settings from cs (connString), or from
// 'url' with its secret resolved; 'password' applies to both.
func connConfig(o connectors.Options, cs string) (*pgx.ConnConfig, error) {
	if _, given := o["url"]; given {
		u, err := o.Secret("url")
		if err != nil {
			return nil, err
		}
		if err := checkURL(u); err != nil {
			return nil, err
		}
		cs = u
	}
	cfg, err := pgx.ParseConfig(cs)
	if err != nil {
		// pgx's message may quote the connection string: a password in it
		// must not reach the log.
		if _, given := o["url"]; given {
			return nil, &connectors.OptionError{Key: "url", Msg: "option 'url' is not a PostgreSQL connection string (postgres://user@host:port/database?sslmode=disable, or host=... port=... dbname=... user=...)"}
		}
		return nil, &connectors.OptionError{Key: "host", Msg: "the connection options do not make a PostgreSQL connection string"}
	}
	if _, given := o["password"]; given {
		pw, err := o.Secret("password")
		if err != nil {
			return nil, err
		}
		cfg.Password = pw
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "clink"
	}
	return cfg, nil
}

// connect opens a connection; the error names the server, database and
// user, never the password.
func (c *config) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, c.conn.Copy())
	if err != nil {
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) && ce.Unwrap() != nil {
			err = ce.Unwrap()
		}
		return nil, fmt.Errorf("cannot connect to %s as user %s: %w", c, c.user, err)
	}
	return conn, nil
}

// NewSink checks the options, connects, and checks the target table:
// that it exists, has a column of each Clink column's name of a type the
// Clink type is written into, and, in upsert mode, a unique index on the
// primary key. With exactly_once the server must allow prepared
// transactions.
func (Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	c, err := newConfig(t)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.conn.ConnectTimeout+c.timeout)
	defer cancel()
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres sink '%s': %w", t.Name, err)
	}
	tgt, err := resolve(ctx, conn, c, t)
	if err == nil && c.exactly {
		err = checkPrepared(ctx, conn, c)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres sink '%s': %w", t.Name, err)
	}
	if c.exactly {
		return newTxSink(t, c, tgt, conn), nil
	}
	return newSink(t, c, tgt, conn), nil
}

// checkPrepared refuses a server without prepared transactions.
func checkPrepared(ctx context.Context, conn *pgx.Conn, c *config) error {
	var v string
	if err := conn.QueryRow(ctx, "SHOW max_prepared_transactions").Scan(&v); err != nil {
		return fmt.Errorf("%s: reading max_prepared_transactions: %w", c, err)
	}
	if n, _ := strconv.Atoi(v); n <= 0 {
		return &connectors.OptionError{Key: "delivery_guarantee", Msg: fmt.Sprintf("delivery_guarantee 'exactly_once' needs prepared transactions, but the server at %s has max_prepared_transactions = %s: "+
			"set max_prepared_transactions in postgresql.conf (at least 2 per sink subtask, e.g. 64) and restart PostgreSQL, or use 'at_least_once'", c, v)}
	}
	return nil
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
