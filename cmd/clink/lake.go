//go:build lake

package main

// This build is clink-lake: clink with the lake connectors linked
// (`go build -tags lake`).
import (
	_ "github.com/clink-dev/clink/connectors/iceberg"
	_ "github.com/clink-dev/clink/connectors/objectstore"
)

const lakeLinked = true
