package engine

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// layers lists the top-level folders from the lowest to the highest
// (DESIGN §2). A package may import packages of its own layer or below.
var layers = []string{"vector", "checkpoint", "kernels", "engine", "connectors", "substrait", "flight", "bench", "cmd", "examples"}

const module = "github.com/clink-dev/clink/"

func layerOf(pkg string) int {
	rel := strings.TrimPrefix(pkg, module)
	top, _, _ := strings.Cut(rel, "/")
	for i, l := range layers {
		if l == top {
			return i
		}
	}
	return -1
}

// TestLayering fails when a package imports a higher layer: the engine
// knows nothing of SQL, connectors nothing of the cluster.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
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
		n++
		from := layerOf(p.ImportPath)
		if from < 0 {
			t.Errorf("package %s is in no known layer; add its folder to layers", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			if to := layerOf(imp); to > from {
				t.Errorf("%s (layer %s) imports %s (layer %s): imports must point down", p.ImportPath, layers[from], imp, layers[to])
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d packages listed", n)
	}
}
