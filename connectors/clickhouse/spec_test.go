package clickhouse

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
)

// table validates opts (connector and table filled in) as the planner does.
func table(t *testing.T, opts ...string) (*connectors.Table, error) {
	t.Helper()
	m := map[string]string{"connector": "clickhouse", "table": "out"}
	for i := 0; i+1 < len(opts); i += 2 {
		m[opts[i]] = opts[i+1]
	}
	vo, err := spec.Validate(m)
	if err != nil {
		return nil, err
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	return &connectors.Table{Name: "sink_t", Schema: schema, Options: vo, EventTimeCol: -1}, nil
}

func TestDefaults(t *testing.T) {
	tb, err := table(t)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConfig(tb.Options)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:8123" || c.database != "default" || c.table != "out" || c.user != "default" || c.password != "" ||
		c.rows != 10000 || c.interval.Milliseconds() != 1000 || c.retries != 4 {
		t.Errorf("defaults: %+v", c)
	}
	if got := tb.Options["delivery_guarantee"]; got != "at_least_once" {
		t.Errorf("delivery_guarantee default %q", got)
	}
	if c.qualified() != "`default`.`out`" || c.String() != "default.out at 127.0.0.1:8123" {
		t.Errorf("names: %s, %s", c.qualified(), c)
	}
}

func TestOptionErrors(t *testing.T) {
	t.Setenv("CLINK_TEST_CH_PASSWORD", "from-env")
	for _, tc := range []struct {
		opts []string
		want string // "" = valid
	}{
		{[]string{"table", ""}, "option 'table' is empty"},
		{[]string{"host", "http://ch:8123"}, "option 'host': 'http://ch:8123' is not a host name or address"},
		{[]string{"host", "ch:8123"}, "give the port in 'port'"},
		{[]string{"host", "::1"}, ""},
		{[]string{"host", "[::1]"}, ""},
		{[]string{"port", "0"}, "option 'port': 0 is not a port number"},
		{[]string{"port", "http"}, "option 'port': 'http' is not an integer"},
		{[]string{"batch_rows", "0"}, "option 'batch_rows': 0 is out of range"},
		{[]string{"batch_interval_ms", "-5"}, "option 'batch_interval_ms': -5 is out of range"},
		{[]string{"max_retries", "-1"}, "option 'max_retries': -1 is out of range"},
		{[]string{"batch_row", "5"}, "connector 'clickhouse' has no option 'batch_row' (did you mean 'batch_rows'?)"},
		{[]string{"password", "env://CLINK_TEST_CH_UNSET"}, "option 'password': environment variable CLINK_TEST_CH_UNSET is not set"},
		{[]string{"password", "env://CLINK_TEST_CH_PASSWORD"}, ""},
		{[]string{"delivery_guarantee", "at-least-once"}, ""},
		{[]string{"delivery_guarantee", "maybe"}, "'maybe' is not one of"},
	} {
		tb, err := table(t, tc.opts...)
		if err == nil {
			_, err = newConfig(tb.Options)
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.opts, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.opts, err, tc.want)
			continue
		}
		var oe *connectors.OptionError
		if !errors.As(err, &oe) {
			t.Errorf("%q: %T is not an OptionError", tc.opts, err)
		}
	}
	tb, _ := table(t, "password", "env://CLINK_TEST_CH_PASSWORD")
	if c, err := newConfig(tb.Options); err != nil || c.password != "from-env" {
		t.Errorf("env password: %v", err)
	}
}

// A table missing its required option names it with an example.
func TestTableRequired(t *testing.T) {
	_, err := spec.Validate(map[string]string{"connector": "clickhouse"})
	if err == nil || err.Error() != "connector 'clickhouse' needs option 'table', e.g. 'table' = 'sensor_windows'" {
		t.Fatalf("error %v", err)
	}
}

// exactly_once is refused before any connection (the port is closed).
func TestExactlyOnceRefused(t *testing.T) {
	for _, v := range []string{"exactly_once", "exactly-once"} {
		tb, err := table(t, "delivery_guarantee", v, "port", "1")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Connector{}.NewSink(tb)
		var oe *connectors.OptionError
		if !errors.As(err, &oe) || oe.Key != "delivery_guarantee" ||
			!strings.Contains(err.Error(), "sink 'sink_t': connector 'clickhouse' cannot deliver exactly once") ||
			!strings.Contains(err.Error(), "use 'at_least_once'") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// The sink takes no changelog: the planner refuses one for a connector
// without AcceptsUpdates.
func TestNoChangelog(t *testing.T) {
	if _, ok := any(Connector{}).(connectors.UpdatingSink); ok {
		t.Fatal("the clickhouse connector must not accept changelogs")
	}
}

func TestMessage(t *testing.T) {
	long := strings.Repeat("é", 2000)
	m := message([]byte("Code: 60,\n  e.displayText() = " + long))
	if len(m) > maxMessage+len("…") || !strings.HasPrefix(m, "Code: 60, e.displayText() = é") || !strings.HasSuffix(m, "é…") {
		t.Errorf("message: %d bytes, %q...", len(m), m[:40])
	}
	if got := quoteIdent("we`ird\\"); got != "`we\\`ird\\\\`" {
		t.Errorf("quoteIdent: %s", got)
	}
	if got := unescapeTSV(`c\\d\tx`); got != "c\\d\tx" {
		t.Errorf("unescapeTSV: %q", got)
	}
}
