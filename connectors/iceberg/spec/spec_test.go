package spec

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
)

// A slim build's connector refuses to open a sink, plainly.
func TestSlimNewSink(t *testing.T) {
	opts, err := spec.Validate(map[string]string{"connector": "iceberg", "catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/tmp/wh"})
	if err != nil {
		t.Fatal(err)
	}
	tbl := &connectors.Table{Name: "t", Schema: arrow.NewSchema(nil, nil), Options: opts}
	if _, err := (Connector{}).NewSink(tbl); !errors.Is(err, ErrSlim) {
		t.Fatalf("NewSink of the slim connector: %v, want ErrSlim", err)
	}
}

// Flink's option names are accepted.
func TestFlinkNames(t *testing.T) {
	opts, err := spec.Validate(map[string]string{"connector": "iceberg", "catalog-type": "rest", "uri": "http://rest:8181",
		"catalog-name": "lake", "catalog-database": "db", "catalog-table": "t", "warehouse": "s3://b/w"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"catalog_type": "rest", "catalog_uri": "http://rest:8181", "catalog_name": "lake", "namespace": "db", "table": "t"} {
		if opts[k] != v {
			t.Errorf("%s = %q, want %q", k, opts[k], v)
		}
	}
}

// clink links iceberg-go (the whole product is one binary); the slim
// build does not, and the options package alone never does.
func TestSlimDoesNotLinkIceberg(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"github.com/clink-dev/clink/connectors/iceberg/spec"}, false},
		{[]string{"github.com/clink-dev/clink/cmd/clink"}, true},
		{[]string{"-tags", "slim", "github.com/clink-dev/clink/cmd/clink"}, false},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, c.args...)...).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		deps := string(out)
		links := strings.Contains(deps, "github.com/apache/iceberg-go\n")
		heavy := strings.Contains(deps, "github.com/clink-dev/clink/connectors/iceberg\n")
		if links != c.want || heavy != c.want {
			t.Errorf("go list -deps %s: links iceberg-go %v, connectors/iceberg %v; want %v", strings.Join(c.args, " "), links, heavy, c.want)
		}
	}
}

// A slim build validates the options as a full build does: an invalid
// table is refused for its options by the validator and by NewSink, a
// valid one passes the validator (a cluster's Workers may have the sink).
func TestSlimValidateSink(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db"}, "sink 't': the SQL catalog needs option 'warehouse', where new tables go (a directory or s3://bucket/prefix)"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "s3:///w"}, "option 'warehouse': s3:///w has no bucket (s3://bucket/prefix)"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w", "table": "a.b"}, "option 'table': 'a.b' is not a table name (give the namespace in 'namespace')"},
		{map[string]string{"catalog_uri": "sqlite:///tmp/c.db", "warehouse": "/w"}, ""},
	} {
		all := map[string]string{"connector": "iceberg"}
		for k, v := range c.opts {
			all[k] = v
		}
		opts, err := spec.Validate(all)
		if err != nil {
			t.Fatal(err)
		}
		tbl := &connectors.Table{Name: "t", Schema: arrow.NewSchema(nil, nil), Options: opts}
		verr := Connector{}.ValidateSink(tbl)
		_, nerr := Connector{}.NewSink(tbl)
		if c.want == "" {
			if verr != nil || !errors.Is(nerr, ErrSlim) {
				t.Errorf("%v: ValidateSink %v, NewSink %v", c.opts, verr, nerr)
			}
			continue
		}
		if verr == nil || verr.Error() != c.want || nerr == nil || nerr.Error() != c.want {
			t.Errorf("%v: ValidateSink %v, NewSink %v, want %s", c.opts, verr, nerr, c.want)
		}
	}
}
