package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A savepoint, inside the store's directory or beside it, survives every
// Retain and opens, verified, after the checkpoint it came from is gone.
func TestSavepointOutlivesRetain(t *testing.T) {
	s := newStore(t, Options{})
	writeParts(t, s, 1, 2, 2, 8)
	writeParts(t, s, 2, 2, 2, 8)
	cp, err := s.Open(2)
	if err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(s.Dir(), "savepoints", "savepoint-test-2")
	beside := filepath.Join(filepath.Dir(s.Dir()), "sp", "savepoint-test-2")
	for _, dir := range []string{inside, beside} {
		if err := WriteSavepoint(cp, dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteSavepoint(cp, inside); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second WriteSavepoint: %v", err)
	}
	for id := uint64(3); id <= 6; id++ {
		writeParts(t, s, id, 1, 1, 4)
		if err := s.Retain(1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(s.Path(2)); err == nil {
		t.Fatal("chk-2 survived Retain(1)")
	}
	for _, dir := range []string{inside, beside} {
		sp, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if sp.ID != 2 || len(sp.Parts()) != 2 || sp.Manifest.Fingerprint != "fp-1" {
			t.Fatalf("%s: id %d, %d parts, fingerprint %q", dir, sp.ID, len(sp.Parts()), sp.Manifest.Fingerprint)
		}
		if err := sp.Verify(); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(filepath.Dir(dir))
		if len(ents) != 1 {
			t.Fatalf("%s: debris beside the savepoint: %v", dir, ents)
		}
	}
	// A store's chk-<id> directory opens the same way.
	c, err := OpenDir(s.Path(6))
	if err != nil || c.ID != 6 {
		t.Fatalf("OpenDir(chk-6): %v %v", c, err)
	}
	if _, err := OpenDir(filepath.Join(s.Dir(), "nope")); err == nil || !strings.Contains(err.Error(), "no checkpoint or savepoint directory") {
		t.Fatalf("OpenDir(missing): %v", err)
	}
	if _, err := OpenDir(s.Dir()); err == nil || !strings.Contains(err.Error(), "not a complete checkpoint") {
		t.Fatalf("OpenDir(store dir): %v", err)
	}
}
