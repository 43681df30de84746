package checkpoint

import (
	"os"
	"testing"
)

// A pinned checkpoint survives Retain(1) while newer ones come and go,
// and reads completely; once unpinned, the next Retain removes it.
func TestPinSurvivesRetain(t *testing.T) {
	s := newStore(t, Options{})
	want := writeParts(t, s, 1, 2, 2, 10)
	unpin := Pin(s.Dir(), 1)
	again := Pin(s.Dir()+"/", 1) // the same directory, spelled otherwise
	for id := uint64(2); id <= 5; id++ {
		writeParts(t, s, id, 1, 1, 5)
		if err := s.Retain(1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(s.Path(4)); !os.IsNotExist(err) {
		t.Fatalf("checkpoint 4 kept: %v", err)
	}
	c, err := s.Open(1)
	if err != nil {
		t.Fatalf("pinned checkpoint removed: %v", err)
	}
	for st, recs := range want {
		p, err := c.ReadPart("agg", st)
		if err != nil {
			t.Fatal(err)
		}
		var rows int64
		for _, r := range recs {
			rows += r.NumRows()
		}
		if got := p.NumRows(); got != rows {
			t.Errorf("subtask %d: %d rows, want %d", st, got, rows)
		}
		p.Release()
	}
	unpin()
	unpin() // a second call does nothing
	if !Pinned(s.Dir(), 1) {
		t.Fatal("the second pin was released by the first")
	}
	again()
	if err := s.Retain(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(1)); !os.IsNotExist(err) {
		t.Fatalf("unpinned checkpoint kept: %v", err)
	}
}
