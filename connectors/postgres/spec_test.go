package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
)

var specSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// table validates opts (connector filled in) as the planner does and
// builds the table sink_t.
func table(opts ...string) (*connectors.Table, error) {
	m := map[string]string{"connector": "postgres"}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := spec.Validate(m)
	if err != nil {
		return nil, err
	}
	return &connectors.Table{Name: "sink_t", Schema: specSchema, Options: vo, EventTimeCol: -1}, nil
}

func configOf(t *testing.T, opts ...string) (*config, error) {
	t.Helper()
	tb, err := table(opts...)
	if err != nil {
		return nil, err
	}
	return newConfig(tb)
}

func TestDefaults(t *testing.T) {
	c, err := configOf(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:5432" || c.database != "postgres" || c.user != "postgres" || c.conn.Password != "" ||
		c.table != (tableName{name: "sink_t"}) || c.upsert || c.exactly || c.rows != 10000 ||
		c.interval.Milliseconds() != 1000 || c.timeout.Milliseconds() != 60000 || c.conn.ConnectTimeout.Milliseconds() != 10000 || c.prefix != "" {
		t.Errorf("defaults: %+v", c)
	}
	if c.String() != "127.0.0.1:5432/postgres" {
		t.Errorf("String: %s", c)
	}
	tb, _ := table()
	if got := tb.Options["delivery_guarantee"]; got != "at_least_once" {
		t.Errorf("delivery_guarantee default %q", got)
	}
	if got := c.conn.RuntimeParams["application_name"]; got != "clink" {
		t.Errorf("application_name %q", got)
	}
}

func TestOptions(t *testing.T) {
	t.Setenv("CLINK_TEST_PG_PASSWORD", "from-env")
	t.Setenv("CLINK_TEST_PG_URL", "postgres://alice:url-secret@db.example:6543/metrics?sslmode=disable")
	c, err := configOf(t, "url", "env://CLINK_TEST_PG_URL")
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "db.example:6543" || c.database != "metrics" || c.user != "alice" || c.conn.Password != "url-secret" {
		t.Errorf("url: %s %s %s", c.addr, c.database, c.user)
	}
	// 'password' replaces the url's.
	c, err = configOf(t, "url", "postgres://alice@db.example/metrics", "password", "env://CLINK_TEST_PG_PASSWORD")
	if err != nil || c.conn.Password != "from-env" || c.addr != "db.example:5432" {
		t.Errorf("url and password: %v %+v", err, c)
	}
	c, err = configOf(t, "host", "db-1", "port", "6000", "database", "m", "user", "bob", "password", "env://CLINK_TEST_PG_PASSWORD", "sslmode", "disable")
	if err != nil || c.addr != "db-1:6000" || c.database != "m" || c.user != "bob" || c.conn.Password != "from-env" || c.conn.TLSConfig != nil {
		t.Errorf("separate options: %v %+v", err, c)
	}
	c, err = configOf(t, "host", "::1")
	if err != nil || c.addr != "[::1]:5432" {
		t.Errorf("IPv6 host: %v %v", err, c)
	}
	c, err = configOf(t, "host", "/var/run/postgresql")
	if err != nil || c.addr != "/var/run/postgresql:5432" {
		t.Errorf("socket: %v %v", err, c)
	}
	c, err = configOf(t, "mode", "upsert", "primary_key", "SENSOR_ID", "delivery_guarantee", "exactly-once", "table", `Metrics."Sensor Windows"`, "transaction_id_prefix", "job-7/w")
	if err != nil || !c.upsert || !c.exactly || len(c.key) != 1 || c.key[0] != "sensor_id" ||
		c.table != (tableName{schema: "metrics", name: "Sensor Windows"}) || c.prefix != "job-7/w" {
		t.Errorf("upsert: %v %+v", err, c)
	}
}

// Bad values are refused before any connection, naming the option; no
// error shows a secret.
func TestOptionErrors(t *testing.T) {
	t.Setenv("CLINK_TEST_PG_PASSWORD", "pw-from-env")
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"mode", "merge"}, "option 'mode': 'merge' is not one of 'append', 'upsert'"},
		{[]string{"delivery_guarantee", "twice"}, "'twice' is not one of"},
		{[]string{"sslmode", "maybe"}, "'maybe' is not one of"},
		{[]string{"port", "http"}, "option 'port': 'http' is not an integer"},
		{[]string{"port", "70000"}, "option 'port': 70000 is not a port number"},
		{[]string{"host", "db:5432"}, "give the port in 'port'"},
		{[]string{"host", "postgres://db"}, "is not a host name"},
		{[]string{"database", ""}, "option 'database' is empty"},
		{[]string{"url", "postgres://a@b/c", "host", "x"}, "give either 'url' or 'host'"},
		{[]string{"url", "postgres://u:very-secret@b:notaport/c"}, "option 'url' is not a PostgreSQL connection string"},
		{[]string{"url", "env://CLINK_TEST_PG_UNSET"}, "option 'url': environment variable CLINK_TEST_PG_UNSET is not set"},
		{[]string{"password", "env://CLINK_TEST_PG_UNSET"}, "option 'password': environment variable CLINK_TEST_PG_UNSET is not set"},
		{[]string{"batch_rows", "0"}, "option 'batch_rows': 0 is out of range"},
		{[]string{"batch_interval_ms", "-1"}, "option 'batch_interval_ms': -1 is out of range"},
		{[]string{"request_timeout_ms", "0"}, "option 'request_timeout_ms': 0 is out of range"},
		{[]string{"connect_timeout_ms", "0"}, "option 'connect_timeout_ms': 0 is out of range"},
		{[]string{"mode", "upsert"}, "'mode' = 'upsert' needs a primary key"},
		{[]string{"mode", "upsert", "primary_key", "id"}, "option 'primary_key': 'id' is not a column of sink_t"},
		{[]string{"table", "a.b.c"}, "option 'table': 'a.b.c' is not a table name"},
		{[]string{"table", `"open`}, "has an unclosed quote"},
		{[]string{"table", "a..b"}, "is not a table name"},
		{[]string{"transaction_id_prefix", "has:colon"}, "may hold only letters"},
		{[]string{"transaction_id_prefix", strings.Repeat("x", 151)}, "must have 1 to 150 characters"},
		{[]string{"batch_row", "5"}, "connector 'postgres' has no option 'batch_row' (did you mean 'batch_rows'?)"},
	} {
		_, err := configOf(t, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.opts, err, tc.want)
			continue
		}
		var oe *connectors.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%q: %T is not an OptionError", tc.opts, err)
		}
		if strings.Contains(err.Error(), "very-secret") || strings.Contains(err.Error(), "pw-from-env") {
			t.Errorf("%q: the error shows a secret: %v", tc.opts, err)
		}
	}
}

func TestTableNames(t *testing.T) {
	for in, want := range map[string]tableName{
		"Windows":                 {name: "windows"},
		"public.Windows":          {schema: "public", name: "windows"},
		`"Windows"`:               {name: "Windows"},
		`"my ""quoted"" t"`:       {name: `my "quoted" t`},
		`"S.x"."T.y"`:             {schema: "S.x", name: "T.y"},
		` metrics . w `:           {schema: "metrics", name: "w"},
		"sensor-windows":          {name: "sensor-windows"},
		`public."Sensor Windows"`: {schema: "public", name: "Sensor Windows"},
	} {
		got, err := parseTableName(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	if got := (tableName{schema: "a", name: `b"c`}).sql(); got != `"a"."b""c"` {
		t.Errorf("sql: %s", got)
	}
}

func TestAcceptsUpdates(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		ok   bool
	}{
		{nil, false},
		{[]string{"mode", "upsert"}, false},
		{[]string{"mode", "upsert", "primary_key", "sensor_id"}, true},
		{[]string{"primary_key", "sensor_id"}, false},
	} {
		tb, err := table(tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		err = Connector{}.AcceptsUpdates(tb.Options)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.opts, err)
		}
	}
}

func TestGlobalIDs(t *testing.T) {
	p := defaultPrefix("sensor windows", "metrics", tableName{schema: "public", name: "sensor_windows"})
	if p != "clink-sensor_windows-metrics.public.sensor_windows" {
		t.Errorf("prefix %s", p)
	}
	if err := checkPrefix(p); err != nil {
		t.Error(err)
	}
	long := defaultPrefix(strings.Repeat("t", 100), strings.Repeat("d", 63), tableName{schema: "s", name: strings.Repeat("n", 63)})
	if len(long) != maxPrefix || checkPrefix(long) != nil {
		t.Errorf("long prefix %d %s", len(long), long)
	}
	if long == defaultPrefix(strings.Repeat("t", 100), strings.Repeat("d", 63), tableName{schema: "s", name: strings.Repeat("n", 62) + "m"}) {
		t.Error("shortened prefixes of different tables are equal")
	}
	g := gid(p, 3, 17)
	if g != p+":3:17" {
		t.Errorf("gid %s", g)
	}
	if k, seq, ok := parseGID(g, p); !ok || k != 3 || seq != 17 {
		t.Errorf("parse %s: %d %d %v", g, k, seq, ok)
	}
	for _, bad := range []string{p + ":3", p + "x:3:17", p + ":a:17", p + ":3:17:1", "other:3:17", p + ":-1:2"} {
		if _, _, ok := parseGID(bad, p); ok {
			t.Errorf("parsed %s", bad)
		}
	}
}
