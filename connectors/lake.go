package connectors

import (
	"errors"

	"github.com/clink-dev/clink/engine"
)

// ErrLake says a table needs a lake connector (Parquet files, object
// stores, Iceberg), which the engine binary `clink` does not link: their
// libraries (arrow-go's Parquet writer brings gRPC, the object-store and
// Iceberg SDKs) would cost every job start megabytes of memory. `clink`
// re-runs such a job with `clink-lake`, the same program with them linked;
// clink-cluster links them too.
var ErrLake = errors.New("this table needs the lake connectors (Parquet, object stores, Iceberg), which run in clink-lake (make build builds it next to clink)")

// LakeSink, when set (by package objectstore, linked into clink-lake and
// clink-cluster), opens a file-connector sink that writes Parquet or
// writes to an object store (s3://, gs://, azure://).
var LakeSink func(t *Table) (engine.Sink, error)
