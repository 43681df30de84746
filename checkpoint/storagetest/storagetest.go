// Package storagetest is the conformance suite every checkpoint.Storage
// passes: the local directory and each object store.
package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
)

// Options describe what a Storage promises beyond the common contract.
type Options struct {
	// HiddenUntilCommit: an object Create begins is invisible (Stat,
	// ReadFile, List) until its Commit. Object stores; the local
	// directory writes parts in place (the manifest is the commit
	// point).
	HiddenUntilCommit bool
}

// Run checks st, which must be empty.
func Run(t *testing.T, st checkpoint.Storage, o Options) {
	t.Helper()
	notExist := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: got %v, want fs.ErrNotExist", what, err)
		}
	}
	put := func(name, data string) {
		t.Helper()
		w, err := st.Create(name)
		if err != nil {
			t.Fatalf("Create(%s): %v", name, err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatalf("Write(%s): %v", name, err)
		}
		if err := w.Commit(); err != nil {
			t.Fatalf("Commit(%s): %v", name, err)
		}
	}
	read := func(name, want string) {
		t.Helper()
		got, err := st.ReadFile(name)
		if err != nil {
			t.Fatalf("ReadFile(%s): %v", name, err)
		}
		if string(got) != want {
			t.Fatalf("ReadFile(%s) = %q, want %q", name, got, want)
		}
		n, err := st.Stat(name)
		if err != nil || n != int64(len(want)) {
			t.Fatalf("Stat(%s) = %d, %v; want %d", name, n, err, len(want))
		}
	}
	list := func(dir string, want ...string) {
		t.Helper()
		got, err := st.List(dir)
		if err != nil {
			t.Fatalf("List(%q): %v", dir, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("List(%q) = %q, want %q", dir, got, want)
		}
	}

	if got, err := st.List(""); err == nil && len(got) > 0 || err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("List of an empty store = %q, %v", got, err)
	}
	_, err := st.ReadFile("chk-1/_metadata.json")
	notExist("ReadFile of a missing object", err)
	_, err = st.Stat("chk-1/_metadata.json")
	notExist("Stat of a missing object", err)
	_, err = st.List("chk-1/")
	notExist("List of a missing directory", err)

	// An object in the making.
	w, err := st.Create("chk-1/op-0.arrow")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if _, err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if o.HiddenUntilCommit {
		_, err = st.Stat("chk-1/op-0.arrow")
		notExist("Stat before Commit", err)
		_, err = st.List("chk-1/")
		notExist("List before Commit", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	read("chk-1/op-0.arrow", string(big))

	// Aborted: no trace.
	w, err = st.Create("chk-1/op-1.arrow")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("partial"))
	if err := w.Abort(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	_, err = st.Stat("chk-1/op-1.arrow")
	notExist("Stat after Abort", err)

	// WriteFile, also over an existing object.
	if err := st.WriteFile("chk-1/_metadata.json", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	read("chk-1/_metadata.json", `{"v":1}`)
	if err := st.WriteFile("leader-epoch", []byte("3\n")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFile("leader-epoch", []byte("4\n")); err != nil {
		t.Fatal(err)
	}
	read("leader-epoch", "4\n")
	put("chk-2/deep/x", "x")
	put("chk-2/y", "yy")

	list("", "chk-1/", "chk-2/", "leader-epoch")
	list("chk-1/", "_metadata.json", "op-0.arrow")
	list("chk-2/", "deep/", "y")

	// Remove: one object, a missing one, a prefix.
	if err := st.Remove("chk-2/y"); err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat("chk-2/y")
	notExist("Stat after Remove", err)
	if err := st.Remove("chk-2/y"); err != nil {
		t.Fatalf("Remove of a missing object: %v", err)
	}
	if err := st.Remove("chk-3/"); err != nil {
		t.Fatalf("Remove of a missing prefix: %v", err)
	}
	if err := st.Remove("chk-1/"); err != nil {
		t.Fatal(err)
	}
	_, err = st.List("chk-1/")
	notExist("List after Remove of the prefix", err)
	_, err = st.ReadFile("chk-1/op-0.arrow")
	notExist("ReadFile after Remove of the prefix", err)
	list("", "chk-2/", "leader-epoch")

	if p := st.Path("chk-2/y"); !strings.HasSuffix(strings.ReplaceAll(p, `\`, "/"), "chk-2/y") {
		t.Fatalf("Path(chk-2/y) = %q", p)
	}
}

var slots = []checkpoint.Slot{{Name: "counts", Values: []arrow.Field{{Name: "cnt", Type: arrow.PrimitiveTypes.Int64}}}}

// writeCheckpoint writes checkpoint id with two parts of n rows each; it
// commits when commit is set.
func writeCheckpoint(t *testing.T, s *checkpoint.Store, id uint64, n int, commit bool) {
	t.Helper()
	w, err := s.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	for sub := 0; sub < 2; sub++ {
		p, err := w.Part("agg", sub, slots)
		if err != nil {
			t.Fatal(err)
		}
		b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
		for i := 0; i < n; i++ {
			b.Keyed("counts", int32(i%128), fmt.Sprintf(`["k%d"]`, i))
			b.Value("cnt").(*array.Int64Builder).Append(int64(id)*1000 + int64(i))
		}
		rec, err := b.NewRecord()
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		err = p.Write(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if commit {
		if err := w.Commit(checkpoint.Meta{Job: "conformance"}); err != nil {
			t.Fatal(err)
		}
	}
}

// RunStore runs a Store on st (empty): checkpoints, an incomplete one,
// Latest, Open and ReadPart, Retain by listing, the leader-epoch fence.
func RunStore(t *testing.T, st checkpoint.Storage) {
	t.Helper()
	s, err := checkpoint.NewStoreOn(st, st.Path(""), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Latest(); err != nil || ok {
		t.Fatalf("Latest of an empty store: %v, %v", ok, err)
	}
	for id := uint64(1); id <= 3; id++ {
		writeCheckpoint(t, s, id, 50, true)
	}
	// A process that crashed before checkpoint 4's manifest.
	crashed := func(id uint64, n int) {
		t.Helper()
		old, err := checkpoint.NewStoreOn(st, st.Path(""), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		writeCheckpoint(t, old, id, n, false)
	}
	crashed(4, 50)
	if id, ok, err := s.Latest(); err != nil || !ok || id != 3 {
		t.Fatalf("Latest = %d, %v, %v; want 3 (4 has no manifest)", id, ok, err)
	}
	if _, err := s.Open(4); !errors.Is(err, checkpoint.ErrIncomplete) {
		t.Fatalf("Open of the incomplete checkpoint: %v, want ErrIncomplete", err)
	}
	if next, err := s.NextID(); err != nil || next != 5 {
		t.Fatalf("NextID = %d, %v; want 5", next, err)
	}
	cp, err := s.Open(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Verify(); err != nil {
		t.Fatal(err)
	}
	part, err := cp.ReadPart("agg", 1)
	if err != nil {
		t.Fatal(err)
	}
	if part.NumRows() != 50 {
		t.Fatalf("part has %d rows, want 50", part.NumRows())
	}
	part.Release()

	// Retain lists the store and deletes: the incomplete one and the
	// oldest complete ones go.
	if err := s.Retain(2); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []uint64{2, 3}) {
		t.Fatalf("after Retain(2): checkpoints %v, want [2 3]", ids)
	}
	if _, err := st.List("chk-1/"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("chk-1 after Retain: %v, want gone", err)
	}

	// A crash between a part and the manifest, then Begin again.
	crashed(5, 10)
	writeCheckpoint(t, s, 5, 20, true)
	if cp, err = s.Open(5); err != nil {
		t.Fatal(err)
	}
	if err := cp.Verify(); err != nil {
		t.Fatal(err)
	}

	// The leader-epoch fence.
	if err := s.Fence(5); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Epoch(); err != nil || e != 5 {
		t.Fatalf("Epoch = %d, %v; want 5", e, err)
	}
	if err := s.Fence(4); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("Fence(4) after 5: %v, want ErrFenced", err)
	}
	w, err := s.Begin(6)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(checkpoint.Meta{Epoch: 4}); !errors.Is(err, checkpoint.ErrFenced) {
		t.Fatalf("Commit of epoch 4 in a store fenced by 5: %v, want ErrFenced", err)
	}
	if _, err := st.Stat("chk-6/" + checkpoint.ManifestName); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a fenced commit wrote its manifest: %v", err)
	}
}
