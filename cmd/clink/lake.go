//go:build lake && !iceberg

package main

// This build is clink-lake: clink with the Parquet and object-store sinks
// linked (`go build -tags lake`).
import _ "github.com/clink-dev/clink/connectors/objectstore"

const lakeLinked, icebergLinked = true, false
