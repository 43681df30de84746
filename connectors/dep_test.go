package connectors

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const connectorsPkg = "github.com/clink-dev/clink/connectors"

// shared are the packages under connectors/ that are not connectors:
// every connector may use them.
var shared = []string{"formats", "txn", "conformance"}

// connectorOf names the connector a package under connectors/ belongs to
// ("kafka" for connectors/kafka/...), or "" for the root and the shared
// packages.
func connectorOf(pkg string) string {
	rel, ok := strings.CutPrefix(pkg, connectorsPkg+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rel, "/")
	for _, s := range shared {
		if top == s {
			return ""
		}
	}
	return top
}

// TestNoConnectorImportsAnother keeps connectors independent: a connector's
// code uses the root package and the shared ones, never another connector
// (tests may use another's test servers, e.g. objectstore/ostest).
// Only connectors/builtin, the registry of them all, wires them together
// (it hands the object-store sink to the file connector).
func TestNoConnectorImportsAnother(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		from := connectorOf(p.ImportPath)
		if from == "" || from == "builtin" {
			continue
		}
		n++
		for _, imp := range p.Imports {
			if to := connectorOf(imp); to != "" && to != from {
				t.Errorf("connector %s (%s) imports connector %s (%s): connectors must not import each other; wire them in connectors/builtin", from, p.ImportPath, to, imp)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d connector packages listed", n)
	}
}
