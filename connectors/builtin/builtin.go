// Package builtin registers every connector that ships with Clink.
package builtin

import (
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/blackhole"
	"github.com/clink-dev/clink/connectors/checkpoint"
	"github.com/clink-dev/clink/connectors/clickhouse"
	"github.com/clink-dev/clink/connectors/file"
	"github.com/clink-dev/clink/connectors/kafka"
	"github.com/clink-dev/clink/connectors/nexmark"
	"github.com/clink-dev/clink/connectors/objectstore"
	"github.com/clink-dev/clink/connectors/postgres"
	"github.com/clink-dev/clink/connectors/print"
)

// Registry returns a registry holding the built-in connectors.
func Registry() *connectors.Registry {
	r := connectors.NewRegistry()
	Register(r)
	return r
}

// Register adds the built-in connectors to r.
func Register(r *connectors.Registry) {
	r.Register(blackhole.Connector{})
	r.Register(checkpoint.Connector{})
	r.Register(clickhouse.Connector{})
	r.Register(file.Connector{Lake: objectstore.NewSink, ValidateLake: objectstore.Validate})
	r.Register(icebergConnector())
	r.Register(kafka.Connector{})
	r.Register(nexmark.Connector{})
	r.Register(postgres.Connector{})
	r.Register(print.Connector{})
	// Flink's names for the same connectors.
	r.Alias("filesystem", "file")
}
