package builtin

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/connectors"
)

// Every built-in connector checks its tables without I/O: each source
// factory is a SourceValidator, each sink factory a SinkValidator, so
// that `clink explain` makes the checks submission makes.
func TestEveryConnectorValidates(t *testing.T) {
	r := Registry()
	for _, name := range r.Names() {
		f, _ := r.Lookup(name)
		if _, ok := f.(connectors.SourceFactory); ok {
			if _, ok := f.(connectors.SourceValidator); !ok {
				t.Errorf("connector %s: a source without ValidateSource", name)
			}
		}
		if _, ok := f.(connectors.SinkFactory); ok {
			if _, ok := f.(connectors.SinkValidator); !ok {
				t.Errorf("connector %s: a sink without ValidateSink", name)
			}
		}
	}
}

// The file connector's validator makes the Parquet sink's checks
// (objectstore.Validate), in NewSink's words.
func TestFileValidatesLake(t *testing.T) {
	f, _ := Registry().Lookup("filesystem")
	opts, err := f.Spec().Validate(map[string]string{"connector": "filesystem", "path": "s3://lake/out", "format": "parquet", "rolling_max_bytes": "big"})
	if err != nil {
		t.Fatal(err)
	}
	tb := &connectors.Table{Name: "out", Schema: arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), Options: opts}
	verr := f.(connectors.SinkValidator).ValidateSink(tb)
	_, nerr := f.(connectors.SinkFactory).NewSink(tb)
	want := "option 'rolling_max_bytes': 'big' is not a positive size (bytes, or with KB, MB, GB)"
	if verr == nil || verr.Error() != want || nerr == nil || nerr.Error() != want {
		t.Errorf("ValidateSink %v, NewSink %v, want %s", verr, nerr, want)
	}
}
