//go:build slim

package builtin

import (
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg/spec"
)

// icebergConnector, in a slim build, validates and documents the Iceberg
// options and refuses to open a sink: the build links no iceberg-go,
// whose package initialization every start would pay (docs/performance.md).
func icebergConnector() connectors.Factory { return spec.Connector{} }
