package builtin

import (
	"flag"
	"os"
	"testing"

	"github.com/clink-dev/clink/connectors"
)

var update = flag.Bool("update", false, "rewrite docs/connectors.md")

// TestConnectorDocs keeps docs/connectors.md equal to what the specs say.
func TestConnectorDocs(t *testing.T) {
	const path = "../../docs/connectors.md"
	want := connectors.Markdown(Registry())
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is stale: run `make generate`", path)
	}
}
