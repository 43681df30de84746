package optest

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/kernels/column"
	"github.com/clink-dev/clink/vector"
)

// Checkpoint writes s's state (SnapshotState) as checkpoint id of store
// (one part, subtask 0) and returns the part read back, its rows shuffled;
// the caller releases it.
func Checkpoint(t *testing.T, store *checkpoint.Store, id uint64, s op.Stateful, mem memory.Allocator) *checkpoint.Part {
	t.Helper()
	cw, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	snap := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: mem,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return cw.Part("op", 0, slots) }}
	if err := s.SnapshotState(snap); err != nil {
		t.Fatal(err)
	}
	if err := cw.Commit(checkpoint.Meta{Job: "test"}); err != nil {
		t.Fatal(err)
	}
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	part, err := cp.ReadPart("op", 0)
	if err != nil {
		t.Fatal(err)
	}
	shuffle(part, rand.New(rand.NewPCG(id, 9)))
	return part
}

// shuffle puts the part's rows in a random order, as the format
// allows (rows are in no particular order): a restore must not depend on
// the order it wrote them in.
func shuffle(part *checkpoint.Part, rng *rand.Rand) {
	mem := memory.NewGoAllocator()
	recs := part.Records
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	for i, rec := range recs {
		perm := rng.Perm(int(rec.NumRows()))
		idx := make([]int32, len(perm))
		for k, p := range perm {
			idx[k] = int32(p)
		}
		cols := make([]arrow.Array, rec.NumCols())
		for c := range cols {
			cols[c] = vector.Take(mem, rec.Column(c), idx)
		}
		recs[i] = array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
		column.ReleaseAll(cols)
		rec.Release()
	}
}

// Owns is the key-group filter of subtask i of n.
func Owns(i, n int) func(int32) bool {
	return func(g int32) bool {
		return checkpoint.KeyGroupOwner(checkpoint.DefaultMaxParallelism, n, g) == i
	}
}

// Lines renders the live rows of an output batch (with their row
// kinds) and releases it.
func Lines(t testing.TB, b *vector.Batch) []string {
	if b == nil {
		return nil
	}
	defer b.Release()
	var out []string
	b.Rows(func(i int) {
		parts := make([]string, 0, b.Rec.NumCols()+1)
		if b.Kinds != nil {
			parts = append(parts, b.Kinds[i].String())
		}
		for c := range int(b.Rec.NumCols()) {
			parts = append(parts, Cell(t, b.Column(c), i))
		}
		out = append(out, strings.Join(parts, ","))
	})
	return out
}

// CompareLines fails at the first line where got and want differ.
func CompareLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	Compare(t, what, Result{Lines: got}, Result{Lines: want})
}

// Incremental writes s's state as checkpoint id of store (one part,
// subtask 0): a delta on checkpoint completed when s writes one (chains of
// at most three deltas), with the asynchronous half run by the store. It
// keeps only the newest checkpoint (and the chain it needs) and reports
// whether the part is a delta and how many tombstones it holds.
func Incremental(t *testing.T, store *checkpoint.Store, id, completed uint64, s op.Stateful, mem memory.Allocator) (delta bool, tombstones int) {
	t.Helper()
	cw, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	snap := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: mem, Completed: completed, MaxDeltas: 3, Go: cw.Go,
		Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return cw.Part("op", 0, slots) },
		OpenDelta: func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error) {
			return cw.DeltaPart("op", 0, slots, chain)
		}}
	if err := s.SnapshotState(snap); err != nil {
		t.Fatal(err)
	}
	if err := cw.Commit(checkpoint.Meta{Job: "test"}); err != nil {
		t.Fatal(err)
	}
	raw, err := checkpoint.ReadPartFile(filepath.Join(store.Path(id), "op-0.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Release()
	for _, r := range raw.Records {
		for i := 0; i < int(r.NumRows()); i++ {
			if r.Column(0).ValueStr(i) == checkpoint.TombstoneSlot {
				tombstones++
			}
		}
	}
	if err := store.Retain(1); err != nil {
		t.Fatal(err)
	}
	return raw.Delta, tombstones
}

// RestoreNewest restores checkpoint id of store (written by Incremental,
// its chain merged) into s, at parallelism 1.
func RestoreNewest(t *testing.T, store *checkpoint.Store, id uint64, s op.Stateful) {
	t.Helper()
	cp, err := store.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	part, err := cp.ReadPart("op", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Release()
	if err := s.RestoreState(&op.Restore{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Parallelism: 1, Parts: []*checkpoint.Part{part}}); err != nil {
		t.Fatal(err)
	}
}
