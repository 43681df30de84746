package file

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// The sink dispatch: Parquet and object-store paths go to the connector's
// Lake sink (connectors/builtin sets it), and fail plainly without one;
// JSON-lines paths stay here.
func TestLakeDispatch(t *testing.T) {
	dir := t.TempDir()
	table := func(o connectors.Options) *connectors.Table {
		return &connectors.Table{Name: "out", Options: o}
	}
	lake := []connectors.Options{
		{"path": filepath.Join(dir, "a"), "format": "parquet"},
		{"path": "s3://bucket/prefix", "format": "parquet"},
		{"path": "gs://bucket/prefix"},
		{"path": "AZURE://container/prefix", "format": "json"},
	}
	for _, o := range lake {
		if _, err := (Connector{}).NewSink(table(o)); err == nil || !strings.Contains(err.Error(), "need the Parquet sink") {
			t.Errorf("%v without a Lake sink: %v", o, err)
		}
	}
	called := 0
	c := Connector{Lake: func(*connectors.Table) (engine.Sink, error) { called++; return nil, nil }}
	for _, o := range lake {
		if _, err := c.NewSink(table(o)); err != nil {
			t.Errorf("%v: %v", o, err)
		}
	}
	if called != len(lake) {
		t.Errorf("Lake called %d times, want %d", called, len(lake))
	}
	s, err := c.NewSink(table(connectors.Options{"path": filepath.Join(dir, "json")}))
	if _, ok := s.(*TxSink); err != nil || !ok {
		t.Errorf("a JSON directory: %T %v, want the JSON TxSink", s, err)
	}
	if called != len(lake) {
		t.Errorf("Lake called for a JSON-lines path")
	}
}
