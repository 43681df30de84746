package file

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// The source's validator refuses what NewSource refuses before it looks
// at the path, in its words; a missing path is NewSource's to find.
func TestValidateSource(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.jsonl")
	str := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, c := range []struct {
		opts   connectors.Options
		schema *arrow.Schema
		want   string
	}{
		{connectors.Options{"path": missing, "format": "parquet"}, str, "file source 'r': format 'parquet' is not readable yet (only 'json'; 'parquet' is a sink format)"},
		{connectors.Options{"path": missing}, arrow.NewSchema([]arrow.Field{{Name: "b", Type: arrow.BinaryTypes.Binary}}, nil), `file source 'r': json format: column "b": type binary is not supported`},
	} {
		tb := &connectors.Table{Name: "r", Schema: c.schema, Options: c.opts}
		verr := Connector{}.ValidateSource(tb)
		_, nerr := Connector{}.NewSource(tb)
		if verr == nil || verr.Error() != c.want || nerr == nil || nerr.Error() != c.want {
			t.Errorf("%v: ValidateSource %v, NewSource %v, want %s", c.opts, verr, nerr, c.want)
		}
	}
	tb := &connectors.Table{Name: "r", Schema: str, Options: connectors.Options{"path": missing}}
	if err := (Connector{}).ValidateSource(tb); err != nil {
		t.Errorf("valid table: %v", err)
	}
}

// A lake table's validation is the lake sink's validator's.
func TestValidateLake(t *testing.T) {
	errLake := errors.New("refused by the lake")
	c := Connector{Lake: func(*connectors.Table) (engine.Sink, error) { return nil, nil }, ValidateLake: func(*connectors.Table) error { return errLake }}
	tb := &connectors.Table{Name: "out", Options: connectors.Options{"path": "s3://b/p", "format": "parquet"}}
	if err := c.ValidateSink(tb); !errors.Is(err, errLake) {
		t.Errorf("ValidateSink: %v", err)
	}
	if _, err := c.NewSink(tb); !errors.Is(err, errLake) {
		t.Errorf("NewSink: %v", err)
	}
}
