package sql

import (
	"reflect"
	"strings"
	"testing"
)

var nodeIface = reflect.TypeOf((*Node)(nil)).Elem()

// reachableNodes collects, by reflection, every node pointer under v that
// Inspect should visit.
func reachableNodes(v reflect.Value, out map[Node]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		switch v.Elem().Type() {
		case reflect.TypeOf(Ident{}), reflect.TypeOf(ObjectName{}), reflect.TypeOf(TypeName{}):
			return
		}
		if v.Type().Implements(nodeIface) {
			out[v.Interface().(Node)] = true
		}
		reachableNodes(v.Elem(), out)
	case reflect.Interface:
		if !v.IsNil() {
			reachableNodes(v.Elem(), out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			reachableNodes(v.Index(i), out)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			reachableNodes(v.Field(i), out)
		}
	}
}

// checkInspectComplete fails if Inspect misses a node or visits one twice.
func checkInspectComplete(t *testing.T, st Statement) {
	t.Helper()
	want := map[Node]bool{}
	reachableNodes(reflect.ValueOf(&st).Elem(), want)
	got := map[Node]bool{}
	Inspect(st, func(n Node) bool {
		if got[n] {
			t.Fatalf("Inspect visits %T %s twice", n, n)
		}
		got[n] = true
		return true
	})
	for n := range want {
		if !got[n] {
			t.Fatalf("Inspect misses %T %s in %s", n, n, st)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Inspect visited %d nodes, %d reachable", len(got), len(want))
	}
}

func TestInspectComplete(t *testing.T) {
	for _, tc := range printTests {
		s, err := Parse(tc.src)
		if err != nil {
			continue
		}
		for _, st := range s.Statements {
			checkInspectComplete(t, st)
		}
	}
}

func TestInspectSkip(t *testing.T) {
	e := mustExpr(t, "f(a + b) + g(c)")
	var seen []string
	Inspect(e, func(n Node) bool {
		seen = append(seen, n.String())
		_, isCall := n.(*FuncCall)
		return !isCall
	})
	if got := strings.Join(seen, " | "); got != "F(a + b) + G(c) | F(a + b) | G(c)" {
		t.Errorf("visited %s", got)
	}
}
