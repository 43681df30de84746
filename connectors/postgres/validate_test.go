package postgres

import (
	"net"
	"strings"
	"testing"
	"time"
)

// Every refusal of newConfig that needs no I/O is ValidateSink's, in the
// same words; NewSink makes it before it connects.
func TestValidateSinkRefuses(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"port", "70000"}, "option 'port': 70000 is not a port number"},
		{[]string{"host", "db:5432"}, "option 'host': 'db:5432' is not a host name, address or socket directory (give the port in 'port', or a connection string in 'url')"},
		{[]string{"user", " "}, "option 'user' is empty"},
		{[]string{"url", "postgres://a@b/c", "sslmode", "disable"}, "give either 'url' or 'sslmode' (with host, port, database, user, sslmode), not both"},
		{[]string{"url", " "}, "option 'url' is empty"},
		{[]string{"batch_rows", "0"}, "option 'batch_rows': 0 is out of range (1 to 10000000)"},
		{[]string{"connect_timeout_ms", "0"}, "option 'connect_timeout_ms': 0 is out of range (1 to 3600000)"},
		{[]string{"mode", "upsert"}, "sink 'sink_t': 'mode' = 'upsert' needs a primary key: PRIMARY KEY (...) NOT ENFORCED in CREATE TABLE, or 'primary_key'"},
		{[]string{"mode", "upsert", "delivery_guarantee", "exactly_once", "primary_key", "id"}, "option 'primary_key': 'id' is not a column of sink_t"},
		{[]string{"table", "a.b.c"}, "option 'table': 'a.b.c' is not a table name"},
		{[]string{"delivery_guarantee", "exactly_once", "transaction_id_prefix", "has:colon"}, "option 'transaction_id_prefix': "},
	} {
		addr, accepted := listener(t)
		opts := tc.opts
		if !strings.Contains(strings.Join(opts, " "), "url") {
			opts = append([]string{"port", portOf(addr)}, opts...)
		}
		tb, err := table(opts...)
		if err != nil {
			t.Fatal(err)
		}
		verr := Connector{}.ValidateSink(tb)
		_, nerr := Connector{}.NewSink(tb)
		if verr == nil || !strings.HasPrefix(verr.Error(), tc.want) {
			t.Errorf("%q: ValidateSink: %v\nwant %s", tc.opts, verr, tc.want)
		}
		if nerr == nil || verr == nil || nerr.Error() != verr.Error() {
			t.Errorf("%q: NewSink: %v\nValidateSink: %v", tc.opts, nerr, verr)
		}
		if n := accepted(); n != 0 {
			t.Errorf("%q: %d connections", tc.opts, n)
		}
	}
}

// A valid table passes without a connection, and without resolving a
// secret: an env:// 'url' or 'password' is read where the sink runs.
func TestValidateSinkNoIO(t *testing.T) {
	addr, accepted := listener(t)
	url := "postgres://clink@" + addr + "/metrics?sslmode=disable"
	for _, opts := range [][]string{
		{"port", portOf(addr)},
		{"url", url, "password", "env://CLINK_TEST_PG_UNSET"},
		{"url", "env://CLINK_TEST_PG_UNSET", "mode", "upsert", "primary_key", "sensor_id", "delivery_guarantee", "exactly_once"},
		{"port", "1", "table", "public.sensor_windows"},
	} {
		tb, err := table(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Connector{}).ValidateSink(tb); err != nil {
			t.Errorf("%q: %v", opts, err)
		}
	}
	if n := accepted(); n != 0 {
		t.Errorf("%d connections", n)
	}
	// Opening the sink resolves the secret.
	tb, _ := table("url", url, "password", "env://CLINK_TEST_PG_UNSET")
	if _, err := (Connector{}).NewSink(tb); err == nil || err.Error() != "option 'password': environment variable CLINK_TEST_PG_UNSET is not set" {
		t.Errorf("NewSink: %v", err)
	}
}

func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// listener is a port that counts the connections made to it.
func listener(t *testing.T) (addr string, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	n := make(chan int, 1)
	n <- 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			n <- <-n + 1
		}
	}()
	return ln.Addr().String(), func() int {
		time.Sleep(50 * time.Millisecond)
		v := <-n
		n <- v
		return v
	}
}
