// Package file is the file connector: a bounded JSON-lines source over a
// file or a directory, and a JSON-lines sink writing into a directory.
package file

import (
	"fmt"

	"github.com/clink-dev/clink/connectors"
)

// Connector is the 'file' connector.
type Connector struct{}

var spec = &connectors.Spec{
	Name:        "file",
	Description: "JSON lines in local files. As a source: one file, or every file in a directory (sorted by name; each file is one partition), read once (bounded). As a sink: one JSON-lines file, or part files in a directory.",
	Source:      true,
	Sink:        true,
	Options: append(append([]connectors.Option{}, connectors.CommonSourceOptions...),
		connectors.Option{Name: "path", Type: connectors.String, Required: true, Description: "source: a file or a directory of files; sink: a file when the path ends in .jsonl, .json or .ndjson, else a directory that receives part files (part-<subtask>.jsonl)", Example: "data/readings.jsonl"},
		connectors.Option{Name: "mode", Type: connectors.Enum, Values: []string{"append", "upsert"}, Default: "append", Description: "sink: 'append' writes every row; 'upsert' applies a changelog by primary_key and writes the resulting table at each flush", Example: "upsert"},
		connectors.Option{Name: "primary_key", Type: connectors.String, Description: "sink, upsert mode: comma-separated key columns (or PRIMARY KEY (...) NOT ENFORCED in CREATE TABLE)", Example: "sensor_id"},
		connectors.DeliveryGuaranteeOption,
	),
}

// AcceptsUpdates: a file sink consumes a changelog only in upsert mode.
func (Connector) AcceptsUpdates(opts connectors.Options) error {
	if opts["mode"] != "upsert" || opts["primary_key"] == "" {
		return fmt.Errorf("the file sink applies updates only with 'mode' = 'upsert' and a 'primary_key'")
	}
	return nil
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Bounded: a file source ends when every file has been read.
func (Connector) Bounded(connectors.Options) bool { return true }
