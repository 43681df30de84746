package benchpb

import (
	"bytes"
	"os"
	"testing"

	"github.com/clink-dev/clink/connectors/formats/protobuf/internal/pbgen"
)

// TestGeneratedCurrent proves bench.pb.go is what go generate writes from
// bench.proto today.
func TestGeneratedCurrent(t *testing.T) {
	files, err := pbgen.Generate(".", "bench.proto")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files["bench.pb.go"] == nil {
		t.Fatalf("generated %d files", len(files))
	}
	have, err := os.ReadFile("bench.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, files["bench.pb.go"]) {
		t.Fatal("bench.pb.go is stale: run go generate ./connectors/formats/protobuf/internal/benchpb")
	}
}
