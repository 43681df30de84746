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
