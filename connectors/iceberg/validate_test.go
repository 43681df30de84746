package iceberg

import (
	"errors"
	"testing"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg/spec"
)

func icebergTable(t *testing.T, opts map[string]string) *connectors.Table {
	t.Helper()
	all := map[string]string{"connector": "iceberg"}
	for k, v := range opts {
		all[k] = v
	}
	vo, err := spec.Spec().Validate(all)
	if err != nil {
		t.Fatal(err)
	}
	return &connectors.Table{Name: "windows", Schema: testSchema, Options: vo}
}

// The validator refuses what NewSink refuses, in its words, and so does a
// slim build's (both are spec.Parse).
func TestValidateSink(t *testing.T) {
	for _, opts := range []map[string]string{
		{"catalog_uri": "mysql://h/db", "warehouse": "/tmp/wh"},
		{"catalog_uri": "sqlite:///tmp/c.db"},
		{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "gs://b/w"},
		{"catalog_type": "rest", "catalog_uri": "rest:8181"},
		{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "namespace": "a..b"},
		{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "target_file_size": "big"},
		{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "commit_interval_ms": "0"},
		{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "s3.secret_key": "env://"},
	} {
		tb := icebergTable(t, opts)
		verr := Connector{}.ValidateSink(tb)
		_, nerr := NewSink(tb)
		serr := spec.Connector{}.ValidateSink(tb)
		_, snerr := spec.Connector{}.NewSink(tb)
		if verr == nil || nerr == nil || verr.Error() != nerr.Error() {
			t.Errorf("%v: ValidateSink %v, NewSink %v", opts, verr, nerr)
			continue
		}
		for _, err := range []error{serr, snerr} {
			if err == nil || err.Error() != verr.Error() {
				t.Errorf("%v: the slim build says %v, want %v", opts, err, verr)
			}
		}
	}
	// A valid table: nothing is opened (a PostgreSQL catalog on a closed
	// port, an S3 warehouse, secrets not set), and a slim build accepts
	// the plan but refuses to open the sink.
	tb := icebergTable(t, map[string]string{"catalog_uri": "postgres://clink@127.0.0.1:1/cat", "catalog_password": "env://CLINK_TEST_UNSET",
		"warehouse": "s3://lake/wh", "s3.access_key": "env://CLINK_TEST_UNSET", "s3.secret_key": "env://CLINK_TEST_UNSET"})
	if err := (Connector{}).ValidateSink(tb); err != nil {
		t.Errorf("valid table: %v", err)
	}
	if err := (spec.Connector{}).ValidateSink(tb); err != nil {
		t.Errorf("valid table, slim: %v", err)
	}
	if _, err := (spec.Connector{}).NewSink(tb); !errors.Is(err, spec.ErrSlim) {
		t.Errorf("slim NewSink: %v, want ErrSlim", err)
	}
}
