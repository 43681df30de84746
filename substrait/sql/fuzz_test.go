package sql

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse checks that Parse and ParseExpr never panic, that every error
// is an *Error whose position matches the source, and that every accepted
// script has valid positions throughout and prints to SQL that parses back
// to the same tree and the same text.
func FuzzParse(f *testing.F) {
	for _, tc := range printTests {
		f.Add(tc.src)
	}
	for _, tc := range errorTests {
		f.Add(tc.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := ParseExpr(src); err != nil {
			checkError(t, src, err)
		}
		s, err := Parse(src)
		if err != nil {
			checkError(t, src, err)
			if s != nil {
				t.Fatalf("Parse(%q) returned a script and an error", src)
			}
			return
		}
		checkTreePositions(t, src, reflect.ValueOf(s.Statements))
		for _, st := range s.Statements {
			checkInspectComplete(t, st)
		}
		out := s.String()
		s2, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(%q) printed %q, which does not parse: %v", src, out, err)
		}
		if out2 := s2.String(); out2 != out {
			t.Fatalf("printing is not stable for %q:\n%s\n%s", src, out, out2)
		}
		if !reflect.DeepEqual(stripPos(s.Statements), stripPos(s2.Statements)) {
			t.Fatalf("Parse(%q) printed %q, which parses to a different tree", src, out)
		}
	})
}

func checkError(t *testing.T, src string, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error for %q is %T, want *Error: %v", src, err, err)
	}
	checkPos(t, src, pe.Pos)
	if pe.Msg == "" || pe.Src != src {
		t.Fatalf("error for %q: empty message or wrong source: %+v", src, pe)
	}
	_ = pe.Error()
}

// checkPos verifies that pos is inside src (or just past its end) and that
// its line and rune column agree with its byte offset.
func checkPos(t *testing.T, src string, pos Pos) {
	t.Helper()
	if !pos.IsValid() || pos.Offset < 0 || pos.Offset > len(src) {
		t.Fatalf("invalid position %+v for %q", pos, src)
	}
	line, col, off := 1, 1, len(src)
	for i, r := range src {
		if i >= pos.Offset {
			off = i
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	if off != pos.Offset {
		t.Fatalf("position %+v for %q is inside a rune", pos, src)
	}
	if line != pos.Line || col != pos.Col {
		t.Fatalf("position %+v for %q: offset means %d:%d", pos, src, line, col)
	}
}

// checkTreePositions checks every Pos reachable from v.
func checkTreePositions(t *testing.T, src string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			checkTreePositions(t, src, v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			checkTreePositions(t, src, v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == posType {
			checkPos(t, src, v.Interface().(Pos))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			checkTreePositions(t, src, v.Field(i))
		}
	}
}
