package kernels

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// stateWriter is a kernel whose state a checkpoint part holds.
type stateWriter interface {
	StateSlots() []checkpoint.Slot
	Snapshot(p *checkpoint.PartWriter, mem memory.Allocator, maxParallelism int) error
}

// stateCheckpoint writes op's state as checkpoint id of store (one part,
// subtask 0) and returns the part read back; the caller releases it.
func stateCheckpoint(t *testing.T, store *checkpoint.Store, id uint64, op stateWriter, mem memory.Allocator) *checkpoint.Part {
	t.Helper()
	cw, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cw.Part("op", 0, op.StateSlots())
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Snapshot(p, mem, checkpoint.DefaultMaxParallelism); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
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
	stateShuffle(part, rand.New(rand.NewPCG(id, 9)))
	return part
}

// stateShuffle puts the part's rows in a random order, as the format
// allows (rows are in no particular order): a restore must not depend on
// the order it wrote them in.
func stateShuffle(part *checkpoint.Part, rng *rand.Rand) {
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
		releaseAll(cols)
		rec.Release()
	}
}

// stateOwns is the key-group filter of subtask i of n.
func stateOwns(i, n int) func(int32) bool {
	return func(g int32) bool {
		return checkpoint.KeyGroupOwner(checkpoint.DefaultMaxParallelism, n, g) == i
	}
}

// stateLines renders the live rows of an output batch (with their row
// kinds) and releases it.
func stateLines(t testing.TB, b *vector.Batch) []string {
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
			parts = append(parts, wtCell(t, b.Column(c), i))
		}
		out = append(out, strings.Join(parts, ","))
	})
	return out
}

// stateCompare fails at the first line where got and want differ.
func stateCompare(t *testing.T, what string, got, want []string) {
	t.Helper()
	wtCompare(t, what, wtResult{lines: got}, wtResult{lines: want})
}

// TestGroupAggSnapshotRestoreReference cuts the changelog test's random
// inputs into checkpoints after random batches, each restored into a new
// aggregate that continues: the changelog equals the row-at-a-time
// reference at every batch size.
func TestGroupAggSnapshotRestoreReference(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	iters := 12
	if testing.Short() || raceEnabled {
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
			got := groupAggRunCut(t, keys, vals, live, bs, func(g *GroupAgg, mem memory.Allocator) *GroupAgg {
				if r.IntN(batches) >= 5 { // about five checkpoints per run (each costs fsyncs)
					return g
				}
				id++
				part := stateCheckpoint(t, store, id, g, mem)
				defer part.Release()
				g2, err := NewGroupAgg(g.cfg, mem)
				if err != nil {
					t.Fatal(err)
				}
				if err := g2.Restore([]*checkpoint.Part{part}, nil, mem); err != nil {
					t.Fatal(err)
				}
				if g2.Groups() != g.Groups() {
					t.Fatalf("restored %d groups, snapshot had %d", g2.Groups(), g.Groups())
				}
				return g2
			})
			stateCompare(t, fmt.Sprintf("iter %d batch %d, %d restores", iter, bs, id), got, want)
		}
	}
}

// gaStateAggChoices are the aggregates the updating aggregate supports over
// the window test's columns; some repeat, so that state column names
// collide.
var gaStateAggChoices = []AggSpec{
	{Func: AggCountStar, Arg: -1}, {Func: AggCount, Arg: wtVF64}, {Func: AggSum, Arg: wtVF64},
	{Func: AggAvg, Arg: wtVF64}, {Func: AggMin, Arg: wtVF64}, {Func: AggMax, Arg: wtVF64},
	{Func: AggMin, Arg: wtVI32}, {Func: AggMax, Arg: wtVI32}, {Func: AggCount, Arg: wtVStr},
	{Func: AggMin, Arg: wtVStr}, {Func: AggMax, Arg: wtVStr}, {Func: AggMin, Arg: wtVBool},
	{Func: AggMax, Arg: wtVBool}, {Func: AggMin, Arg: wtVTS}, {Func: AggMax, Arg: wtVTS},
	{Func: AggSum, Arg: wtKI64}, {Func: AggMin, Arg: wtKF32}, {Func: AggMax, Arg: wtKI8},
	{Func: AggCountDistinct, Arg: wtVStr}, {Func: AggCountDistinct, Arg: wtKI64},
	{Func: AggCountDistinct, Arg: wtVF64}, {Func: AggSum, Arg: wtVF64}, {Func: AggCountStar, Arg: -1},
	{Func: AggSum, Arg: wtVI32}, {Func: AggAvg, Arg: wtVI32}, {Func: AggAvg, Arg: wtKI64},
	{Func: AggSum, Arg: wtKF32}, {Func: AggAvg, Arg: wtKF32}, {Func: AggSum, Arg: wtKI8},
	{Func: AggAvg, Arg: wtKI8},
}

// TestGroupAggSnapshotRestore runs random keys and aggregates over the
// window test's random rows (every key and value type, NULLs, selection
// vectors, forced hash collisions), checkpointing at random batch
// boundaries into a restored aggregate that continues, and also restoring
// the checkpoint split over two subtasks; the changelog equals the
// uninterrupted run's byte for byte at every batch size.
func TestGroupAggSnapshotRestore(t *testing.T) {
	seeds := 8
	if testing.Short() || raceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		c := wtRandomCase(seed + 2000)
		rng := rand.New(rand.NewPCG(seed, 21))
		cfg := GroupAggConfig{Input: c.cfg.Input, Keys: c.cfg.Keys, KeyNames: c.cfg.KeyNames}
		if rng.IntN(3) == 0 {
			cfg.Keys = append(cfg.Keys, wtTS)
			if cfg.KeyNames != nil {
				cfg.KeyNames = append(cfg.KeyNames, "group") // key_group: a fixed column's name
			}
		}
		for _, a := range gaStateAggChoices {
			if rng.IntN(3) == 0 {
				cfg.Aggs = append(cfg.Aggs, a)
			}
		}
		var rows []*wtRow
		for _, ev := range c.events {
			if !ev.advance {
				rows = append(rows, ev.row)
			}
		}
		t.Run(fmt.Sprintf("seed=%d/keys=%v/aggs=%d/weak=%v", seed, cfg.Keys, len(cfg.Aggs), c.weakHash), func(t *testing.T) {
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
				stateCompare(t, fmt.Sprintf("batch=%d", bs), got, want)
			}
		})
	}
}

// gaStateRun feeds rows (a changelog of kinds; nil: inserts) in batches of
// the given sizes; with cut set, it checkpoints after random batches and
// continues in a restored aggregate.
func gaStateRun(t *testing.T, c wtCase, cfg GroupAggConfig, rows []*wtRow, kinds []vector.RowKind, sizes []int, cut *rand.Rand) []string {
	// The uninterrupted run checks leaks cheaply, the cut run thoroughly.
	var mem memory.Allocator = &wtCountingAlloc{mem: memory.NewGoAllocator()}
	if cut != nil {
		mem = memory.NewCheckedAllocator(memory.NewGoAllocator())
	}
	defer func() {
		if c, ok := mem.(*memory.CheckedAllocator); ok {
			c.AssertSize(t, 0)
		} else if n := mem.(*wtCountingAlloc).size; n != 0 {
			t.Errorf("%d bytes not released", n)
		}
	}()
	in := &wtCountingAlloc{mem: memory.NewGoAllocator()}
	brng := rand.New(rand.NewPCG(uint64(len(rows)), 3))
	newAgg := func() *GroupAgg {
		g, err := NewGroupAgg(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if c.weakHash {
			g.tbl.testMask = 0xc000000000000003
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
		b := wtBatch(in, cfg.Input, rows[:n], brng, brng.IntN(2) == 0)
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
		out = append(out, stateLines(t, res)...)
		// About eight checkpoints per run (each costs fsyncs).
		if cut == nil || cut.IntN(len(sizes)) >= 8 {
			continue
		}
		id++
		part := stateCheckpoint(t, store, id, g, mem)
		// Split over two subtasks, the key groups add up to every group.
		split := 0
		for i := range 2 {
			gi := newAgg()
			if err := gi.Restore([]*checkpoint.Part{part}, stateOwns(i, 2), mem); err != nil {
				t.Fatal(err)
			}
			split += gi.Groups()
		}
		g = newAgg()
		if err := g.Restore([]*checkpoint.Part{part}, nil, mem); err != nil {
			t.Fatal(err)
		}
		part.Release()
		if split != g.Groups() {
			t.Fatalf("two subtasks restored %d groups, one %d", split, g.Groups())
		}
	}
	if in.size != 0 {
		t.Errorf("input batches: %d bytes not released", in.size)
	}
	return out
}
