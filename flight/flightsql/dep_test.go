package flightsql

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports: the endpoint sees the cluster only through Catalog; it
// imports neither flight/cluster nor the connectors beyond the checkpoint
// one and print's spec (a query names only the endpoint's tables).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case strings.HasPrefix(path, "github.com/clink-dev/clink/flight/cluster"),
				strings.HasPrefix(path, "github.com/clink-dev/clink/connectors/") &&
					path != "github.com/clink-dev/clink/connectors/checkpoint" && path != "github.com/clink-dev/clink/connectors/print":
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
