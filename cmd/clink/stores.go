package main

import (
	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/objectstore"
)

// registerCheckpointStores lets checkpoint and savepoint directories be
// object-store URLs (s3://, gs://, azure://): the checkpoint package
// reaches local directories only, and cannot import the stores' clients.
func registerCheckpointStores() {
	for _, scheme := range objectstore.CheckpointSchemes {
		checkpoint.RegisterScheme(scheme, objectstore.CheckpointStorage)
	}
}
