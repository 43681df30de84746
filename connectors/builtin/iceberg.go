//go:build !slim

package builtin

import (
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/iceberg"
)

// icebergConnector is the Iceberg sink (iceberg-go). A slim build
// registers its options only (iceberg_slim.go).
func icebergConnector() connectors.Factory { return iceberg.Connector{} }
