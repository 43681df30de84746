//go:build !slim

package main

import (
	"context"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/checkpoint/stateio/iceberg"
)

// exportIceberg writes a checkpoint's state as Iceberg table snapshots.
func exportIceberg(ctx context.Context, c *checkpoint.Checkpoint, sel stateio.Selection, out, catalog string) ([]stateio.Exported, error) {
	return iceberg.Export(ctx, c, iceberg.Options{Selection: sel, Dir: out, Catalog: catalog})
}
