package file

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clink-dev/clink/connectors"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// NewSink opens the table's output. A path ending in .jsonl, .json or
// .ndjson names the output file itself; any other path is a directory that
// receives one part file per subtask (part-<subtask>.jsonl), as Flink's
// filesystem sink writes a directory.
//
// Guarantee: exactly-once with checkpoints (TxSink, the default); with
// 'delivery_guarantee' = 'at_least_once' rows are appended as they arrive
// and visible once flushed.
//
// A table whose 'format' is 'parquet' or whose path is an object-store URL
// (s3://, gs://, azure://) is written by the connector's Lake sink
// (package connectors/objectstore, which connectors/builtin wires in).
func (c Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	if err := c.ValidateSink(t); err != nil {
		return nil, err
	}
	path := t.Options["path"]
	if NeedsLake(t.Options) {
		return c.Lake(t)
	}
	name := filepath.Join(path, fmt.Sprintf("part-%d.jsonl", t.Runtime.Subtask))
	switch filepath.Ext(path) {
	case ".jsonl", ".json", ".ndjson":
		name = path
		if t.Runtime.Subtask > 0 {
			name = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, filepath.Ext(path)), t.Runtime.Subtask, filepath.Ext(path))
		}
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, fmt.Errorf("file sink '%s': %w", t.Name, err)
	}
	dg := t.Options["delivery_guarantee"]
	if t.Options["mode"] == "upsert" {
		return newUpsertSink(t, name)
	}
	if dg == "" || dg == "exactly_once" {
		return newTxSink(name, t.Runtime.Subtask, t.Runtime.Parallelism), nil
	}
	return &Sink{name: name}, nil
}

var _ connectors.SinkValidator = Connector{}

var _ connectors.SinkStaging = Connector{}

// Staged says whether NewSink would give the two-phase sink: exactly once
// (the default) and not upsert; a lake table's sink follows the same
// option.
func (Connector) Staged(t *connectors.Table) bool {
	if t.Options["mode"] == "upsert" {
		return false
	}
	dg := t.Options["delivery_guarantee"]
	return dg == "" || dg == "exactly_once"
}

// ValidateSink refuses what NewSink would without touching a file: a lake
// table without the lake sink or refused by its ValidateLake, and
// 'exactly_once' in upsert mode.
func (c Connector) ValidateSink(t *connectors.Table) error {
	if NeedsLake(t.Options) {
		if c.Lake == nil {
			return fmt.Errorf("file sink '%s': Parquet files and object-store paths need the Parquet sink, which this registry's file connector was not given (connectors/builtin gives it)", t.Name)
		}
		if c.ValidateLake != nil {
			return c.ValidateLake(t)
		}
		return nil
	}
	if t.Options["mode"] == "upsert" && t.Options["delivery_guarantee"] == "exactly_once" {
		return connectors.ExactlyOnceRefused(t, "file", "its upsert mode rewrites the table at each flush")
	}
	return nil
}

// NeedsLake reports whether a file sink with these options is the lake
// sink's: Parquet, or a path with an object-store scheme.
func NeedsLake(o connectors.Options) bool {
	if o["format"] == "parquet" {
		return true
	}
	p := strings.ToLower(o["path"])
	for _, scheme := range []string{"s3://", "s3a://", "gs://", "azure://"} {
		if strings.HasPrefix(p, scheme) {
			return true
		}
	}
	return false
}

// Sink writes JSON lines to a part file (append mode).
type Sink struct {
	name   string
	f      *os.File
	w      *bufio.Writer
	buf    []byte
	opened bool
}

// open creates (truncates) the part file on first use, not when the job
// is planned: a cluster plans jobs in processes that do not run them.
func (s *Sink) open() error {
	if s.opened {
		return nil
	}
	s.opened = true
	f, err := os.Create(s.name)
	if err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<16)
	return nil
}

var _ engine.Sink = (*Sink)(nil)

// Write appends the batch's live rows.
func (s *Sink) Write(b *vector.Batch) error {
	if err := s.open(); err != nil {
		b.Release()
		return err
	}
	s.buf = cjson.AppendBatch(s.buf[:0], b)
	b.Release()
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	return nil
}

// Flush makes everything written visible and durable.
func (s *Sink) Flush() error {
	if err := s.open(); err != nil {
		return err
	}
	if s.f == nil {
		return nil // closed
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	return s.f.Sync()
}

// Close closes the part file.
func (s *Sink) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.f = nil
	return err
}
