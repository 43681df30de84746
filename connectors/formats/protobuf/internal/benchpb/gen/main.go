// Command gen writes bench.pb.go from bench.proto (see package pbgen). Run
// it with go generate in the benchpb directory.
package main

import (
	"fmt"
	"os"

	"github.com/clink-dev/clink/connectors/formats/protobuf/internal/pbgen"
)

func main() {
	files, err := pbgen.Generate(".", "bench.proto")
	if err == nil {
		for name, content := range files {
			if err = os.WriteFile(name, content, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
