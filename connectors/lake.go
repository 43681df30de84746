package connectors

import (
	"errors"
	"fmt"

	"github.com/clink-dev/clink/engine"
)

// ErrLake says a table needs a lake connector (Parquet files, object
// stores, Iceberg), which the engine binary `clink` does not link: their
// libraries (arrow-go's Parquet writer brings gRPC, the object-store and
// Iceberg SDKs) would cost every job start megabytes of memory. `clink`
// re-runs such a job with `clink-lake`, the same program with them linked;
// clink-cluster links them too.
var ErrLake = errors.New("this table needs the lake connectors (Parquet, object stores, Iceberg), which run in clink-lake (make build builds it next to clink)")

// ErrIceberg says a table needs the Iceberg connector, which only
// clink-iceberg links among the engine's builds (iceberg-go's
// initialization alone costs about 0.1 s and 40 MB at every start, which
// Parquet-only jobs in clink-lake must not pay). It wraps ErrLake.
var ErrIceberg = fmt.Errorf("%w; the Iceberg sink runs in clink-iceberg", ErrLake)

// LakeSink, when set (by package objectstore, linked into clink-lake and
// clink-cluster), opens a file-connector sink that writes Parquet or
// writes to an object store (s3://, gs://, azure://).
var LakeSink func(t *Table) (engine.Sink, error)
