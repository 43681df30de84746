package txn

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// fake is a system whose transactions are names; it logs what the ledger
// asks of it.
type fake struct {
	open      []string // written since the last pre-commit
	n         int
	log       []string
	committed map[string]bool
	staged    map[string]int // name -> subtask, staged in the "external system"
	recovered *Recovery[string]
	note      string // Extra state
}

func newFake() *fake { return &fake{committed: map[string]bool{}, staged: map[string]int{}} }

func (f *fake) write(subtask int) {
	f.n++
	name := fmt.Sprintf("t%d-%d", subtask, f.n)
	f.open = append(f.open, name)
	f.staged[name] = subtask
}

func (f *fake) PreCommit() ([]string, error) {
	out := f.open
	f.open = nil
	f.log = append(f.log, fmt.Sprintf("precommit %v", out))
	return out, nil
}

func (f *fake) Commit(id uint64, txns []string) error {
	f.log = append(f.log, fmt.Sprintf("commit %d %v", id, txns))
	for _, t := range txns {
		f.committed[t] = true
		delete(f.staged, t)
	}
	return nil
}

func (f *fake) Abort() error { f.open = nil; return nil }

func (f *fake) Recover(r *Recovery[string]) error {
	f.recovered = r
	for name, k := range f.staged {
		if r.Owns(k) {
			delete(f.staged, name) // rolled back
		}
	}
	return nil
}

func (f *fake) Slots() []checkpoint.Slot {
	return []checkpoint.Slot{{Name: "note", Raw: true, Values: []arrow.Field{{Name: "note", Type: arrow.BinaryTypes.String}}}}
}

func (f *fake) AppendState(b *checkpoint.RowBuilder) {
	b.Raw("note")
	b.Value("note").(*array.StringBuilder).Append("hello")
}

func (f *fake) ReadState(p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) error {
	f.note = checkpoint.Column(rec, "note").(*array.String).Value(i)
	return nil
}

type codec struct{}

func (codec) Fields() []arrow.Field {
	return []arrow.Field{{Name: "name", Type: arrow.BinaryTypes.String}}
}

func (codec) Append(b *checkpoint.RowBuilder, t string) {
	b.Value("name").(*array.StringBuilder).Append(t)
}

func (codec) Read(p *checkpoint.Part, rec arrow.RecordBatch, i int) (string, int, error) {
	name := checkpoint.Column(rec, "name").(*array.String).Value(i)
	var k, n int
	if _, err := fmt.Sscanf(name, "t%d-%d", &k, &n); err != nil {
		return "", 0, err
	}
	return name, k, nil
}

// snapshot writes l's state as checkpoint id of subtask into store.
func snapshot(t *testing.T, w *checkpoint.Writer, l *Ledger[string], id uint64, subtask int) {
	t.Helper()
	snap := &engine.Snapshot{ID: id, MaxParallelism: 128, Mem: memory.NewGoAllocator(),
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return w.Part("sink", subtask, slots) }}
	if err := l.SnapshotState(snap); err != nil {
		t.Fatal(err)
	}
}

func TestLedger(t *testing.T) {
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two subtasks at parallelism 2 (sharing one fake system, as one
	// external system).
	sys := newFake()
	a, b := New("sink a", sys, codec{}, 0, 2), New("sink b", sys, codec{}, 1, 2)
	for _, l := range []*Ledger[string]{a, b} {
		if err := l.PreCommit(); err == nil || !strings.Contains(err.Error(), "without checkpoints") {
			t.Errorf("PreCommit before Start: %v", err)
		}
		l.StartTransactions()
	}
	// Checkpoint 1: a stages one transaction, b two (closed early).
	sys.write(0)
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	if sys.recovered == nil || sys.recovered.Checkpoint != 0 {
		t.Fatalf("a fresh start recovers first: %+v", sys.recovered)
	}
	sys.write(1)
	sys.write(1)
	if err := b.PreCommit(); err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(1)
	if err != nil {
		t.Fatal(err)
	}
	snapshot(t, w, a, 1, 0)
	snapshot(t, w, b, 1, 1)
	if err := w.Commit(checkpoint.Meta{Job: "test"}); err != nil {
		t.Fatal(err)
	}
	// Checkpoint 2 is staged and recorded, but never completes; the
	// commit of checkpoint 1 happens (twice: idempotent).
	sys.write(0)
	if err := a.PreCommit(); err != nil {
		t.Fatal(err)
	}
	a.Assign(2)
	for range 2 {
		if err := a.Commit(1); err != nil {
			t.Fatal(err)
		}
	}
	if a.Len() != 1 {
		t.Errorf("%d staged after commit 1, want 1 (checkpoint 2's)", a.Len())
	}
	// b crashes before its commit; a third subtask's orphan lingers.
	sys.staged["t2-99"] = 2
	// Restore checkpoint 1 at parallelism 1: the one subtask takes over
	// b's and the orphan's, commits b's and rolls back the rest.
	cp, err := store.Open(1)
	if err != nil {
		t.Fatal(err)
	}
	r := &engine.Restore{ID: 1, MaxParallelism: 128, Parallelism: 1, Subtask: 0}
	for _, pi := range cp.PartsOf("sink") {
		p, err := cp.ReadPart(pi.Operator, pi.Subtask)
		if err != nil {
			t.Fatal(err)
		}
		r.Parts = append(r.Parts, p)
	}
	sys.log = nil
	c := New("sink c", sys, codec{}, 0, 1)
	c.StartTransactions()
	if err := c.RestoreState(r); err != nil {
		t.Fatal(err)
	}
	if want := []string{"commit 1 [t0-1 t1-2 t1-3]"}; !reflect.DeepEqual(sys.log, want) {
		t.Errorf("restore asked %q, want %q", sys.log, want)
	}
	if len(sys.staged) != 0 {
		t.Errorf("left staged: %v", sys.staged)
	}
	if sys.note != "hello" || len(sys.recovered.Committed) != 3 || sys.recovered.Checkpoint != 1 {
		t.Errorf("recovery %+v, note %q", sys.recovered, sys.note)
	}
	for _, name := range []string{"t0-1", "t1-2", "t1-3"} {
		if !sys.committed[name] {
			t.Errorf("%s not committed", name)
		}
	}
	if sys.committed["t0-4"] {
		t.Error("checkpoint 2's transaction committed")
	}
}

func TestOwns(t *testing.T) {
	for _, c := range []struct {
		k, sub, par int
		want        bool
	}{{0, 0, 1, true}, {2, 0, 1, true}, {1, 1, 3, true}, {4, 1, 3, true}, {4, 0, 3, false}, {2, 2, 3, true}, {-1, 0, 1, false}} {
		if got := Owns(c.k, c.sub, c.par); got != c.want {
			t.Errorf("Owns(%d, %d, %d) = %v", c.k, c.sub, c.par, got)
		}
	}
}

func TestParseKillAt(t *testing.T) {
	for _, p := range Points {
		got, n, err := ParseKillAt(string(p) + ":3")
		if err != nil || got != p || n != 3 {
			t.Errorf("%s: %v %d %v", p, got, n, err)
		}
		if v := KillAt(p, 3); v != KillEnv+"="+string(p)+":3" {
			t.Errorf("KillAt: %s", v)
		}
	}
	for _, bad := range []string{"", "after-commit", "after-commit:0", "later:1", "after-commit:x"} {
		if _, _, err := ParseKillAt(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
