package objectstore

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// NewSink opens a file-connector table whose format is Parquet or whose
// path is an object store's. It checks the options and builds the store's
// client but does no I/O: the staging location is cleaned up on first
// use. Exactly once with checkpoints (TxSink, the default); with
// 'delivery_guarantee' = 'at_least_once' or 'none' each file is published
// as it is closed (Sink).
func NewSink(t *connectors.Table) (engine.Sink, error) {
	w, err := newWriter(t)
	if err != nil {
		return nil, err
	}
	if dg := t.Options["delivery_guarantee"]; dg == "" || dg == "exactly_once" {
		return TxSink{w}, nil
	}
	return Sink{w}, nil
}

// Validate makes NewSink's checks that need no I/O (the file connector's
// validator calls it for a Parquet or object-store table): the format, the
// locations, the rolling options, a store's endpoint. Building the store's
// client is not among them: it reads secrets (env://), credentials files
// and the environment's defaults, where the sink runs.
func Validate(t *connectors.Table) error {
	_, err := checkWriter(t)
	return err
}

func newWriter(t *connectors.Table) (*writer, error) {
	w, err := checkWriter(t)
	if err != nil {
		return nil, err
	}
	o := t.Options
	w.run = newRunID()
	switch w.pub.scheme {
	case "":
		w.b = localDir{}
	case "s3":
		w.b, err = newS3(o, w.pub.bucket)
	case "gs":
		w.b, err = newGCS(o, w.pub.bucket)
	case "azure":
		w.b, err = newAzure(o, w.pub.bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("sink '%s' (%s): %w", t.Name, w.pub, err)
	}
	return w, nil
}

// checkWriter checks the options without I/O and returns the writer
// without its bucket and run id (newWriter adds them).
func checkWriter(t *connectors.Table) (*writer, error) {
	o := t.Options
	if o["format"] != "parquet" {
		return nil, &connectors.OptionError{Key: "format", Msg: fmt.Sprintf("sink '%s': object stores take 'format' = 'parquet' (JSON lines are written to local files only)", t.Name)}
	}
	if o["mode"] == "upsert" {
		return nil, &connectors.OptionError{Key: "mode", Msg: fmt.Sprintf("sink '%s': the Parquet sink appends; 'mode' = 'upsert' writes JSON lines only", t.Name)}
	}
	pub, err := parseLocation("path", o["path"])
	if err != nil {
		return nil, err
	}
	stage, err := stagingLocation(o, pub)
	if err != nil {
		return nil, err
	}
	w := &writer{table: t.Name, pub: pub, stage: stage, subtask: t.Runtime.Subtask, parallelism: max(t.Runtime.Parallelism, 1),
		schema: t.Schema, mem: t.Runtime.Mem, ctx: context.Background()}
	if w.mem == nil {
		w.mem = memory.DefaultAllocator
	}
	if w.maxBytes, err = parseSize("rolling_max_bytes", orDefault(o["rolling_max_bytes"], "128MB")); err != nil {
		return nil, err
	}
	if w.interval, err = parseInterval("rolling_interval_ms", orDefault(o["rolling_interval_ms"], "1800000")); err != nil {
		return nil, err
	}
	codec, ok := codecs[orDefault(o["parquet.compression"], "zstd")]
	if !ok {
		return nil, &connectors.OptionError{Key: "parquet.compression", Msg: fmt.Sprintf("option 'parquet.compression': unknown codec '%s'", o["parquet.compression"])}
	}
	w.codec = codec
	switch pub.scheme {
	case "s3":
		err = checkS3(o)
	case "gs":
		_, _, err = gcsAPI(o)
	}
	if err != nil {
		return nil, fmt.Errorf("sink '%s' (%s): %w", t.Name, pub, err)
	}
	return w, nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}
