package window

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	kwindow "github.com/clink-dev/clink/kernels/window"
)

// wtSnapshotRestore checkpoints w into a fresh store and returns a new
// aggregate restored from it (w is left as it was).
func wtSnapshotRestore(t *testing.T, c optest.Case, w *Agg, mem memory.Allocator, id uint64, store *checkpoint.Store) *Agg {
	t.Helper()
	cw, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cw.Part("window_agg", 0, w.stateSlots())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.snapshot(p, mem, checkpoint.DefaultMaxParallelism); err != nil {
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
	part, err := cp.ReadPart("window_agg", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer part.Release()
	w2, err := New(c.Cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.WeakHash {
		w2.tbl.TestMask = w.tbl.TestMask
	}
	if err := w2.restore([]*checkpoint.Part{part}, nil, mem); err != nil {
		t.Fatal(err)
	}
	if w2.Groups() != w.Groups() {
		t.Fatalf("restored %d groups, snapshot had %d", w2.Groups(), w.Groups())
	}
	return w2
}

// TestWindowAggSnapshotRestore cuts random cases at random points into a
// checkpoint and a restored aggregate that continues: the output equals
// the row-at-a-time reference.
func TestWindowAggSnapshotRestore(t *testing.T) {
	seeds := 16
	if testing.Short() || optest.RaceEnabled {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 1000)
		t.Run(c.Name, func(t *testing.T) { wtRunRestores(t, c, seed) })
	}
}

// wtRunRestores replays c with checkpoints and restores at random points
// and compares the changelog with the reference.
func wtRunRestores(t *testing.T, c optest.Case, seed uint64) {
	lines, _, _ := wtReference(c)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rng := rand.New(rand.NewPCG(seed, 11))
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(c.Cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.WeakHash {
		w.tbl.TestMask = 0xc000000000000003
	}
	var got []string
	var pending []*optest.Row
	in := memory.NewGoAllocator()
	id := uint64(0)
	flush := func() {
		for len(pending) > 0 {
			n := min(1+rng.IntN(40), len(pending))
			b := optest.Batch(in, c.Cfg.Input, pending[:n], rng, false)
			if !c.UseRowWM {
				b.RowWatermark = nil
			}
			if err := w.Add(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
			pending = pending[n:]
			got = append(got, wtTakeUpdates(t, c, w)...)
			if rng.IntN(8) == 0 {
				id++
				w = wtSnapshotRestore(t, c, w, mem, id, store)
			}
		}
	}
	for _, ev := range c.Events {
		if !ev.Advance {
			pending = append(pending, ev.Row)
			continue
		}
		flush()
		recs, err := w.Advance(ev.WM)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, wtKindLines(t, recs, nil)...)
		for _, r := range recs {
			r.Release()
		}
		if rng.IntN(3) == 0 {
			id++
			w = wtSnapshotRestore(t, c, w, mem, id, store)
		}
	}
	if id == 0 {
		t.Log("no checkpoint taken")
	}
	optest.Compare(t, fmt.Sprintf("%d restores", id), optest.Result{Lines: got}, optest.Result{Lines: lines})
}

// TestWindowAggIncremental snapshots random cases often, as deltas on
// the previous checkpoint with chains of at most three deltas, written
// asynchronously while the aggregate goes on, and at random points
// continues from a restore of the newest chain: the output equals the
// row-at-a-time reference.
func TestWindowAggIncremental(t *testing.T) {
	seeds := 24
	if testing.Short() || optest.RaceEnabled {
		seeds = 6
	}
	deltas, tombs := 0, 0
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 2000)
		if c.Cfg.Window.Kind == kwindow.Session {
			continue // sessions are snapshotted in full
		}
		t.Run(c.Name, func(t *testing.T) {
			d, n := wtRunIncremental(t, c, seed)
			deltas, tombs = deltas+d, tombs+n
		})
	}
	if deltas == 0 || tombs == 0 {
		t.Fatalf("%d delta parts, %d tombstones written", deltas, tombs)
	}
}

func wtRunIncremental(t *testing.T, c optest.Case, seed uint64) (deltas, tombs int) {
	lines, _, _ := wtReference(c)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rng := rand.New(rand.NewPCG(seed, 13))
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(c.Cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	if c.WeakHash {
		w.tbl.TestMask = 0xc000000000000003
	}
	var got []string
	var pending []*optest.Row
	in := memory.NewGoAllocator()
	id := uint64(0)
	snapshot := func() {
		wtCheckEpochCounts(t, w)
		id++
		d, n := optest.Incremental(t, store, id, id-1, w, mem)
		if d {
			deltas++
		}
		tombs += n
	}
	restore := func() {
		w2, err := New(c.Cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if c.WeakHash {
			w2.tbl.TestMask = w.tbl.TestMask
		}
		optest.RestoreNewest(t, store, id, w2)
		if w2.Groups() != w.Groups() {
			t.Fatalf("checkpoint %d: restored %d groups, the aggregate has %d", id, w2.Groups(), w.Groups())
		}
		w = w2
	}
	step := func() {
		if rng.IntN(3) == 0 {
			snapshot()
			if rng.IntN(5) == 0 {
				restore()
			}
		}
	}
	for _, ev := range c.Events {
		if !ev.Advance {
			pending = append(pending, ev.Row)
			continue
		}
		for len(pending) > 0 {
			n := min(1+rng.IntN(40), len(pending))
			b := optest.Batch(in, c.Cfg.Input, pending[:n], rng, false)
			if !c.UseRowWM {
				b.RowWatermark = nil
			}
			if err := w.Add(b); err != nil {
				t.Fatal(err)
			}
			b.Release()
			pending = pending[n:]
			got = append(got, wtTakeUpdates(t, c, w)...)
			step()
		}
		recs, err := w.Advance(ev.WM)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, wtKindLines(t, recs, nil)...)
		for _, r := range recs {
			r.Release()
		}
		step()
	}
	optest.Compare(t, fmt.Sprintf("%d checkpoints, %d deltas", id, deltas), optest.Result{Lines: got}, optest.Result{Lines: lines})
	return deltas, tombs
}
