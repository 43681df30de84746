//go:build slim

package main

import (
	"context"
	"errors"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
)

// exportIceberg: a slim build links no iceberg-go.
func exportIceberg(context.Context, *checkpoint.Checkpoint, stateio.Selection, string, string) ([]stateio.Exported, error) {
	return nil, errors.New("--format iceberg: this clink is a slim build (go build -tags slim) without Iceberg; use a build without the tag (go install ./cmd/clink)")
}
