package checkpoint

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps checkpoint just above vector: it may use the standard
// library, arrow-go, klauspost/compress and vector, nothing else (the
// engine's TestLayering checks the direction among Clink's packages).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"github.com/apache/arrow-go/v18/", "github.com/klauspost/compress/", "github.com/clink-dev/clink/vector"}
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
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowed {
				ok = ok || strings.HasPrefix(path, a) || path == strings.TrimSuffix(a, "/")
			}
			if !ok {
				t.Errorf("%s imports %s: checkpoint may import only the standard library, arrow-go, klauspost/compress and vector", name, path)
			}
		}
	}
}
