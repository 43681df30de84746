package engine

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// layers lists the layers from the lowest to the highest (DESIGN §2): the
// top-level folders, with engine/op, the operators, a layer of its own
// below the engine that runs them. A package may import packages of its
// own layer or below.
var layers = []string{"vector", "telemetry", "checkpoint", "kernels", "engine/op", "engine", "connectors", "substrait", "lineage", "flight", "bench", "cmd", "examples"}

const module = "github.com/clink-dev/clink/"

// layerOf is the index in layers of the layer pkg belongs to; -1 for none.
func layerOf(pkg string) int {
	rel := strings.TrimPrefix(pkg, module)
	if rel == pkg {
		return -1
	}
	top, _, _ := strings.Cut(rel, "/")
	if top == "engine" && (rel == "engine/op" || strings.HasPrefix(rel, "engine/op/")) {
		top = "engine/op"
	}
	for i, l := range layers {
		if l == top {
			return i
		}
	}
	return -1
}

// under reports whether pkg is dir (relative to the module) or below it.
func under(pkg, dir string) bool {
	p := module + dir
	return pkg == p || strings.HasPrefix(pkg, p+"/")
}

// forbidden are imports the layer order alone does not rule out: the
// kernels are pure compute below the checkpoint format's users (they
// expose plain columns; the operators do the checkpoint I/O), and the
// operators, a layer below the engine, never import the engine's root
// package, whose runtime drives them. Test files are held to them too.
var forbidden = []struct {
	from   func(pkg string) bool
	to     func(imp string) bool
	reason string
}{
	{
		func(p string) bool { return under(p, "kernels") },
		func(i string) bool { return under(i, "checkpoint") },
		"kernels are pure compute: they expose state as plain columns and engine/op writes it into checkpoints",
	},
	{
		func(p string) bool { return under(p, "kernels") },
		func(i string) bool { return under(i, "engine") },
		"kernels import no operator or engine package",
	},
	{
		func(p string) bool { return under(p, "engine/op") },
		func(i string) bool { return i == module+"engine" },
		"engine/op is the layer below the engine: operators must not import the engine package that runs them",
	},
}

// TestLayering fails when a package imports a higher layer (the engine
// knows nothing of SQL, connectors nothing of the cluster) or one of the
// forbidden imports.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
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
		for _, list := range []struct {
			what    string
			imports []string
		}{{"imports", p.Imports}, {"test imports", p.TestImports}, {"external test imports", p.XTestImports}} {
			for _, imp := range list.imports {
				for _, f := range forbidden {
					if f.from(p.ImportPath) && f.to(imp) {
						t.Errorf("%s %s %s: %s", p.ImportPath, list.what, imp, f.reason)
					}
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d packages listed", n)
	}
}

// TestLayerOf pins how packages map to layers, engine/op apart from the
// engine.
func TestLayerOf(t *testing.T) {
	for pkg, want := range map[string]string{
		module + "kernels":               "kernels",
		module + "kernels/agg":           "kernels",
		module + "engine":                "engine",
		module + "engine/op":             "engine/op",
		module + "engine/op/window":      "engine/op",
		module + "engine/operator":       "engine",
		module + "substrait/planner":     "substrait",
		module + "checkpoint/stateio":    "checkpoint",
		"github.com/apache/arrow-go/v18": "",
	} {
		got := ""
		if l := layerOf(pkg); l >= 0 {
			got = layers[l]
		}
		if got != want {
			t.Errorf("layerOf(%s) = %q, want %q", pkg, got, want)
		}
	}
}
