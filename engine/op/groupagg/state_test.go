package groupagg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/vector"
)

// TestGroupAggSnapshotRestoreReference cuts the changelog test's random
// inputs into checkpoints after random batches, each restored into a new
// aggregate that continues: the changelog equals the row-at-a-time
// reference at every batch size.
func TestGroupAggSnapshotRestoreReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	iters := 12
	if testing.Short() || optest.RaceEnabled {
		iters = 4
	}
	for iter := range iters {
		n := 1 + r.IntN(300)
		keys := make([]*string, n)
		vals := make([]*int64, n)
		live := make([]bool, n)
		for i := range keys {
			if r.IntN(8) > 0 {
				s := fmt.Sprintf("k%d", r.IntN(5))
				keys[i] = &s
			}
			if r.IntN(5) > 0 {
				v := r.Int64N(20) - 5
				vals[i] = &v
			}
			live[i] = r.IntN(4) > 0
		}
		want := groupAggReference(keys, vals, live)
		for _, bs := range []int{1, 7, 1024, 1 + r.IntN(50)} {
			store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			id := uint64(0)
			batches := (n + bs - 1) / bs
			got := groupAggRunCut(t, keys, vals, live, bs, func(g *Agg, mem memory.Allocator) *Agg {
				if r.IntN(batches) >= 5 { // about five checkpoints per run (each costs fsyncs)
					return g
				}
				id++
				part := optest.Checkpoint(t, store, id, g, mem)
				defer part.Release()
				g2, err := New(g.cfg, mem)
				if err != nil {
					t.Fatal(err)
				}
				if err := g2.restore([]*checkpoint.Part{part}, nil, mem); err != nil {
					t.Fatal(err)
				}
				if g2.Groups() != g.Groups() {
					t.Fatalf("restored %d groups, snapshot had %d", g2.Groups(), g.Groups())
				}
				return g2
			})
			optest.CompareLines(t, fmt.Sprintf("iter %d batch %d, %d restores", iter, bs, id), got, want)
		}
	}
}

// gaStateAggChoices are the aggregates the updating aggregate supports over
// the window test's columns; some repeat, so that state column names
// collide.
var gaStateAggChoices = []agg.Spec{
	{Func: agg.CountStar, Arg: -1}, {Func: agg.Count, Arg: optest.VF64}, {Func: agg.Sum, Arg: optest.VF64},
	{Func: agg.Avg, Arg: optest.VF64}, {Func: agg.Min, Arg: optest.VF64}, {Func: agg.Max, Arg: optest.VF64},
	{Func: agg.Min, Arg: optest.VI32}, {Func: agg.Max, Arg: optest.VI32}, {Func: agg.Count, Arg: optest.VStr},
	{Func: agg.Min, Arg: optest.VStr}, {Func: agg.Max, Arg: optest.VStr}, {Func: agg.Min, Arg: optest.VBool},
	{Func: agg.Max, Arg: optest.VBool}, {Func: agg.Min, Arg: optest.VTS}, {Func: agg.Max, Arg: optest.VTS},
	{Func: agg.Sum, Arg: optest.KI64}, {Func: agg.Min, Arg: optest.KF32}, {Func: agg.Max, Arg: optest.KI8},
	{Func: agg.CountDistinct, Arg: optest.VStr}, {Func: agg.CountDistinct, Arg: optest.KI64},
	{Func: agg.CountDistinct, Arg: optest.VF64}, {Func: agg.Sum, Arg: optest.VF64}, {Func: agg.CountStar, Arg: -1},
	{Func: agg.Sum, Arg: optest.VI32}, {Func: agg.Avg, Arg: optest.VI32}, {Func: agg.Avg, Arg: optest.KI64},
	{Func: agg.Sum, Arg: optest.KF32}, {Func: agg.Avg, Arg: optest.KF32}, {Func: agg.Sum, Arg: optest.KI8},
	{Func: agg.Avg, Arg: optest.KI8},
}

// TestGroupAggSnapshotRestore runs random keys and aggregates over the
// window test's random rows (every key and value type, NULLs, selection
// vectors, forced hash collisions), checkpointing at random batch
// boundaries into a restored aggregate that continues, and also restoring
// the checkpoint split over two subtasks; the changelog equals the
// uninterrupted run's byte for byte at every batch size.
func TestGroupAggSnapshotRestore(t *testing.T) {
	seeds := 8
	if testing.Short() || optest.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 2000)
		rng := rand.New(rand.NewPCG(seed, 21))
		cfg := Config{Input: c.Cfg.Input, Keys: c.Cfg.Keys, KeyNames: c.Cfg.KeyNames}
		if rng.IntN(3) == 0 {
			cfg.Keys = append(cfg.Keys, optest.TS)
			if cfg.KeyNames != nil {
				cfg.KeyNames = append(cfg.KeyNames, "group") // key_group: a fixed column's name
			}
		}
		for _, a := range gaStateAggChoices {
			if rng.IntN(3) == 0 {
				cfg.Aggs = append(cfg.Aggs, a)
			}
		}
		var rows []*optest.Row
		for _, ev := range c.Events {
			if !ev.Advance {
				rows = append(rows, ev.Row)
			}
		}
		t.Run(fmt.Sprintf("seed=%d/keys=%v/aggs=%d/weak=%v", seed, cfg.Keys, len(cfg.Aggs), c.WeakHash), func(t *testing.T) {
			for _, bs := range []int{1, 7, 1024, -1} {
				size := func() int { return bs }
				if bs < 0 {
					size = func() int { return 1 + rng.IntN(60) }
				}
				var sizes []int
				for n := 0; n < len(rows); n += sizes[len(sizes)-1] {
					sizes = append(sizes, size())
				}
				want := gaStateRun(t, c, cfg, rows, nil, sizes, nil)
				got := gaStateRun(t, c, cfg, rows, nil, sizes, rng)
				optest.CompareLines(t, fmt.Sprintf("batch=%d", bs), got, want)
			}
		})
	}
}

// gaStateRun feeds rows (a changelog of kinds; nil: inserts) in batches of
// the given sizes; with cut set, it checkpoints after random batches and
// continues in a restored aggregate.
func gaStateRun(t *testing.T, c optest.Case, cfg Config, rows []*optest.Row, kinds []vector.RowKind, sizes []int, cut *rand.Rand) []string {
	// The uninterrupted run checks leaks cheaply, the cut run thoroughly.
	var mem memory.Allocator = &optest.CountingAlloc{Mem: memory.NewGoAllocator()}
	if cut != nil {
		mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	}
	defer func() {
		if c, ok := mem.(*memory.CheckedAllocator); ok {
			c.AssertSize(t, 0)
		} else if n := mem.(*optest.CountingAlloc).Size; n != 0 {
			t.Errorf("%d bytes not released", n)
		}
	}()
	in := &optest.CountingAlloc{Mem: memory.NewGoAllocator()}
	brng := rand.New(rand.NewPCG(uint64(len(rows)), 3))
	newAgg := func() *Agg {
		g, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if c.WeakHash {
			g.tbl.TestMask = 0xc000000000000003
		}
		return g
	}
	g := newAgg()
	var store *checkpoint.Store
	if cut != nil {
		var err error
		if store, err = checkpoint.NewStore(t.TempDir(), checkpoint.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	id := uint64(0)
	for _, n := range sizes {
		n = min(n, len(rows))
		b := optest.Batch(in, cfg.Input, rows[:n], brng, brng.IntN(2) == 0)
		rows = rows[n:]
		if kinds != nil {
			// Dead rows get any kind: not live, they must not count.
			b.Kinds = make([]vector.RowKind, b.NumRows())
			for i := range b.Kinds {
				b.Kinds[i] = vector.RowKind(brng.IntN(4))
			}
			for k, kind := range kinds[:n] {
				i := k
				if b.Sel != nil {
					i = int(b.Sel[k])
				}
				b.Kinds[i] = kind
			}
			kinds = kinds[n:]
		}
		res, err := g.Add(b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, optest.Lines(t, res)...)
		// About eight checkpoints per run (each costs fsyncs).
		if cut == nil || cut.IntN(len(sizes)) >= 8 {
			continue
		}
		id++
		part := optest.Checkpoint(t, store, id, g, mem)
		// Split over two subtasks, the key groups add up to every group.
		split := 0
		for i := range 2 {
			gi := newAgg()
			if err := gi.restore([]*checkpoint.Part{part}, optest.Owns(i, 2), mem); err != nil {
				t.Fatal(err)
			}
			split += gi.Groups()
		}
		g = newAgg()
		if err := g.restore([]*checkpoint.Part{part}, nil, mem); err != nil {
			t.Fatal(err)
		}
		part.Release()
		if split != g.Groups() {
			t.Fatalf("two subtasks restored %d groups, one %d", split, g.Groups())
		}
	}
	if in.Size != 0 {
		t.Errorf("input batches: %d bytes not released", in.Size)
	}
	return out
}
