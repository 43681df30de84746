package cluster

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	afsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

	cflight "github.com/clink-dev/clink/flight"
)

// TestFlightSQLTLS: with mutual TLS the Flight SQL endpoint answers a
// client of the cluster's CA and refuses a clear-text one and one of
// another CA.
func TestFlightSQLTLS(t *testing.T) {
	f := newTLSFixture(t)
	tc, _ := startTLSCluster(t, f, CoordinatorConfig{FlightSQLAddr: "127.0.0.1:0"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	count := func(opts ...cflight.Option) (int64, error) {
		cl, err := afsql.NewClient(tc.c.FlightSQLAddr(), nil, nil, cflight.DialOptions("", opts...)...)
		if err != nil {
			return 0, err
		}
		defer cl.Close()
		info, err := cl.Execute(ctx, "SELECT COUNT(*) AS n FROM workers")
		if err != nil {
			return 0, err
		}
		r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return 0, err
		}
		defer r.Release()
		if !r.Next() {
			return 0, r.Err()
		}
		return r.RecordBatch().Column(0).(*array.Int64).Value(0), nil
	}
	good, _ := f.config(t, f.ca, "client")
	if n, err := count(cflight.WithTLS(good)); err != nil || n != 2 {
		t.Fatalf("client of the CA: %d workers, %v", n, err)
	}
	if _, err := count(); err == nil {
		t.Error("a clear-text client was answered")
	}
	bad, _ := f.config(t, f.other, "intruder")
	if _, err := count(cflight.WithTLS(bad)); err == nil {
		t.Error("a client of another CA was answered")
	}
}

// A non-loopback Flight SQL address needs a token (or mutual TLS), as the
// other addresses do.
func TestFlightSQLBind(t *testing.T) {
	_, err := NewCoordinator(CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", FlightSQLAddr: "0.0.0.0:0", Log: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "refusing to listen on 0.0.0.0:0 without a token") {
		t.Fatalf("no token: %v", err)
	}
	c, err := NewCoordinator(CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", FlightSQLAddr: "0.0.0.0:0", Token: "t", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	c.srv.Shutdown()
	c.shutdownSQL()
}
