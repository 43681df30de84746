package builtin

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/clink-dev/clink/connectors"
)

var update = flag.Bool("update", false, "rewrite docs/connectors.md and docs/connectors/*.md")

// more links each connector's page to the hand-written page that says more.
var more = map[string]string{
	"clickhouse": "../clickhouse.md",
	"file":       "../objectstore.md",
	"iceberg":    "../iceberg.md",
	"kafka":      "../kafka.md",
	"nexmark":    "../nexmark.md",
	"postgres":   "../postgres.md",
	"checkpoint": "../state-tools.md",
}

// TestConnectorDocs keeps docs/connectors.md and the page of every
// connector (docs/connectors/<name>.md) equal to what the specs say.
func TestConnectorDocs(t *testing.T) {
	want := map[string]string{"../../docs/connectors.md": connectors.Markdown(Registry())}
	for name, page := range connectors.Pages(Registry(), more) {
		want[filepath.Join("../../docs/connectors", name+".md")] = page
	}
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if *update {
		os.MkdirAll("../../docs/connectors", 0o755)
		old, _ := filepath.Glob("../../docs/connectors/*.md")
		for _, p := range old {
			if _, ok := want[p]; !ok {
				os.Remove(p)
			}
		}
		for _, p := range paths {
			if err := os.WriteFile(p, []byte(want[p]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, p := range paths {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v: run `make generate`", err)
		}
		if string(got) != want[p] {
			t.Fatalf("%s is stale: run `make generate`", p)
		}
	}
	extra, _ := filepath.Glob("../../docs/connectors/*.md")
	for _, p := range extra {
		if _, ok := want[p]; !ok {
			t.Errorf("%s belongs to no connector: run `make generate`", p)
		}
	}
}

// TestEverySpecStatesGuarantee: each connector's page states its delivery
// guarantee.
func TestEverySpecStatesGuarantee(t *testing.T) {
	r := Registry()
	for _, name := range r.Names() {
		f, _ := r.Lookup(name)
		if f.Spec().Guarantee == "" {
			t.Errorf("connector %s: its spec states no Guarantee", name)
		}
	}
}
