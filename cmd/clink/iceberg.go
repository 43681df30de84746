//go:build iceberg

package main

// This build is clink-iceberg: clink with every lake connector linked,
// Iceberg included (`go build -tags iceberg`).
import (
	_ "github.com/clink-dev/clink/connectors/iceberg"
	_ "github.com/clink-dev/clink/connectors/objectstore"
)

const lakeLinked, icebergLinked = true, true
