// Package file is the file connector: a bounded JSON-lines source over a
// file or a directory, and a JSON-lines sink writing into a directory.
package file

import (
	"github.com/clink-dev/clink/connectors"
)

// Connector is the 'file' connector.
type Connector struct{}

var spec = &connectors.Spec{
	Name:        "file",
	Description: "JSON lines in local files. As a source: one file, or every file in a directory (sorted by name; each file is one partition), read once (bounded). As a sink: part files in a directory.",
	Source:      true,
	Sink:        true,
	Options: append(append([]connectors.Option{}, connectors.CommonSourceOptions...),
		connectors.Option{Name: "path", Type: connectors.String, Required: true, Description: "source: a file or a directory of files; sink: the directory that receives part files", Example: "data/readings.jsonl"},
	),
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Bounded: a file source ends when every file has been read.
func (Connector) Bounded(connectors.Options) bool { return true }
