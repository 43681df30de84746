package topn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/vector"
)

// topnRestore checkpoints top and returns a new Top-N restored from it;
// top is closed. With split, the checkpoint is also restored over two
// subtasks, whose rows must add up.
func topnRestore(t *testing.T, top *Ranker, store *checkpoint.Store, id uint64, mem memory.Allocator, split bool) *Ranker {
	t.Helper()
	part := optest.Checkpoint(t, store, id, top, mem)
	defer part.Release()
	fresh := func(owns func(int32) bool) *Ranker {
		t2, err := New(top.cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		t2.tbl.TestMask = top.tbl.TestMask
		if err := t2.restore([]*checkpoint.Part{part}, owns, mem); err != nil {
			t.Fatal(err)
		}
		return t2
	}
	rows := func(x *Ranker) int {
		n := 0
		for _, l := range x.lists {
			n += len(l)
		}
		return n
	}
	if split {
		n := 0
		for i := range 2 {
			ti := fresh(optest.Owns(i, 2))
			n += rows(ti)
			ti.Close()
		}
		if n != rows(top) {
			t.Fatalf("two subtasks restored %d rows, the Top-N had %d", n, rows(top))
		}
	}
	t2 := fresh(nil)
	if rows(t2) != rows(top) || t2.nseq != top.nseq {
		t.Fatalf("restored %d rows and next_seq %d, the Top-N had %d and %d", rows(t2), t2.nseq, rows(top), top.nseq)
	}
	top.Close()
	return t2
}

// TestTopNSnapshotRestoreReference runs the changelog reference test's
// rows, checkpointing after random batches into a restored Top-N that
// continues: the changelog equals the reference at every batch size.
func TestTopNSnapshotRestoreReference(t *testing.T) {
	const limit = 3
	r := rand.New(rand.NewPCG(15, 16))
	n := 10000
	if testing.Short() || optest.RaceEnabled {
		n = 4000
	}
	keys, ts, vals, want := topnReferenceCase(r, n, limit)
	for _, bs := range []int{1, 7, 1000, 1 + r.IntN(3000)} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		top, err := New(topnReferenceConfig(optest.Int64Schema, limit), mem)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		cuts := 0
		batches := (n + bs - 1) / bs
		for from := 0; from < n; from += bs {
			to := min(from+bs, n)
			b := optest.Int64Batch(mem, keys[from:to], ts[from:to], vals[from:to])
			res, err := top.Add(b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			got = topnAppendChanges(got, res)
			if r.IntN(batches) < 5 { // about five checkpoints per run
				cuts++
				top = topnRestore(t, top, store, uint64(cuts), mem, cuts == 1)
			}
		}
		top.Close()
		mem.AssertSize(t, 0)
		optest.CompareLines(t, fmt.Sprintf("batch %d, %d restores", bs, cuts), got, want)
	}
}

// TestTopNSnapshotRestore runs random Top-Ns (unwindowed and windowed,
// sort keys of every type, both directions, NULLs first or last) over the
// window test's random rows, checkpointing at random batch and watermark
// boundaries into a restored Top-N that continues; the output equals the
// uninterrupted run's byte for byte at every batch size.
func TestTopNSnapshotRestore(t *testing.T) {
	seeds := 10
	if testing.Short() || optest.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 4000)
		rng := rand.New(rand.NewPCG(seed, 41))
		cfg := Config{Input: c.Cfg.Input, Partition: c.Cfg.Keys, Limit: 1 + rng.Int64N(5), TimeCol: -1}
		if rng.IntN(2) == 0 {
			cfg.TimeCol = optest.TS
			cfg.Partition = append([]int{optest.TS}, cfg.Partition...)
		}
		for _, col := range []int{optest.VF64, optest.VI32, optest.VStr, optest.VBool, optest.VTS, optest.KF32, optest.KI8} {
			if rng.IntN(4) == 0 {
				cfg.Order = append(cfg.Order, SortKey{Col: col, Desc: rng.IntN(2) == 0, NullsFirst: rng.IntN(2) == 0})
			}
		}
		if len(cfg.Order) == 0 {
			cfg.Order = append(cfg.Order, SortKey{Col: optest.VI32, Desc: true})
		}
		rng.Shuffle(len(cfg.Order), func(i, j int) { cfg.Order[i], cfg.Order[j] = cfg.Order[j], cfg.Order[i] })
		name := fmt.Sprintf("seed=%d/partition=%v/order=%d/limit=%d/windowed=%v/weak=%v", seed, cfg.Partition, len(cfg.Order), cfg.Limit, cfg.TimeCol >= 0, c.WeakHash)
		t.Run(name, func(t *testing.T) {
			for _, bs := range []int{1, 7, 1024, -1} {
				size := func() int { return bs }
				if bs < 0 {
					size = func() int { return 1 + rng.IntN(60) }
				}
				var steps []optest.Step
				for _, ev := range c.Events {
					last := len(steps) - 1
					switch {
					case ev.Advance:
						steps = append(steps, optest.Step{Advance: true, WM: ev.WM})
					case last < 0 || steps[last].Advance || len(steps[last].Rows) >= size():
						steps = append(steps, optest.Step{Rows: []*optest.Row{ev.Row}})
					default:
						steps[last].Rows = append(steps[last].Rows, ev.Row)
					}
				}
				want := topnStateRun(t, c, cfg, steps, nil)
				got := topnStateRun(t, c, cfg, steps, rng)
				optest.CompareLines(t, fmt.Sprintf("batch=%d", bs), got, want)
			}
		})
	}
}

// topnStateRun runs steps through a Top-N; with cut set, it checkpoints
// after random steps and continues in a restored Top-N.
func topnStateRun(t *testing.T, c optest.Case, cfg Config, steps []optest.Step, cut *rand.Rand) []string {
	mem, checkLeaks := optest.TestAlloc(t, cut != nil)
	defer checkLeaks()
	in := &optest.CountingAlloc{Mem: memory.NewGoAllocator()}
	brng := rand.New(rand.NewPCG(uint64(len(steps)), 7))
	top, err := New(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.WeakHash {
		top.tbl.TestMask = 0xc000000000000003
	}
	var store *checkpoint.Store
	if cut != nil {
		if store, err = checkpoint.NewStore(t.TempDir(), checkpoint.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	id := uint64(0)
	for _, st := range steps {
		var res *vector.Batch
		var err error
		if st.Advance {
			res, err = top.Advance(st.WM)
		} else {
			b := optest.Batch(in, cfg.Input, st.Rows, brng, brng.IntN(2) == 0)
			res, err = top.Add(b)
			b.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, optest.Lines(t, res)...)
		// About eight checkpoints per run (each costs fsyncs).
		if cut != nil && cut.IntN(len(steps)) < 8 {
			id++
			top = topnRestore(t, top, store, id, mem, id%3 == 1)
		}
	}
	top.Close()
	if in.Size != 0 {
		t.Errorf("input batches: %d bytes not released", in.Size)
	}
	return out
}

// TestTopNSnapshotRestoreLarge restores a state of several records,
// shuffled: the changelog after the restore equals the uninterrupted run's.
func TestTopNSnapshotRestoreLarge(t *testing.T) {
	const n = 8 * opstate.ChunkRows
	keys, ts, vals, _ := topnReferenceCase(rand.New(rand.NewPCG(5, 6)), n, 1)
	for i := range keys {
		keys[i] = int64(i % (n / 4))
	}
	cfg := topnReferenceConfig(optest.Int64Schema, 3)
	run := func(cut bool) []string {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		top, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, half := range [][2]int{{0, n / 2}, {n / 2, n}} {
			b := optest.Int64Batch(mem, keys[half[0]:half[1]], ts[half[0]:half[1]], vals[half[0]:half[1]])
			res, err := top.Add(b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, optest.Lines(t, res)...)
			if cut && half[0] == 0 {
				store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
				if err != nil {
					t.Fatal(err)
				}
				top = topnRestore(t, top, store, 1, mem, true)
			}
		}
		top.Close()
		return out
	}
	optest.CompareLines(t, "restored", run(true), run(false))
}
