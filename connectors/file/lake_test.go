package file

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// The sink dispatch: Parquet and object-store paths go to the lake sink
// when it is linked (connectors.LakeSink), else fail with ErrLake (clink
// then re-runs the job in clink-lake); JSON-lines paths stay here.
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
	saved := connectors.LakeSink
	defer func() { connectors.LakeSink = saved }()
	connectors.LakeSink = nil
	for _, o := range lake {
		if _, err := (Connector{}).NewSink(table(o)); !errors.Is(err, connectors.ErrLake) {
			t.Errorf("%v: %v, want ErrLake", o, err)
		}
	}
	called := 0
	connectors.LakeSink = func(*connectors.Table) (engine.Sink, error) { called++; return nil, nil }
	for _, o := range lake {
		if _, err := (Connector{}).NewSink(table(o)); err != nil {
			t.Errorf("%v: %v", o, err)
		}
	}
	if called != len(lake) {
		t.Errorf("LakeSink called %d times, want %d", called, len(lake))
	}
	s, err := (Connector{}).NewSink(table(connectors.Options{"path": filepath.Join(dir, "json")}))
	if _, ok := s.(*TxSink); err != nil || !ok {
		t.Errorf("a JSON directory: %T %v, want the JSON TxSink", s, err)
	}
	if called != len(lake) {
		t.Errorf("LakeSink called for a JSON-lines path")
	}
}
