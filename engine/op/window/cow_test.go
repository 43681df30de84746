package window

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	"github.com/clink-dev/clink/kernels/column"
	kwindow "github.com/clink-dev/clink/kernels/window"
	"github.com/clink-dev/clink/vector"
)

// TestWindowAggSnapshotWhileMutating checks copy-on-write snapshots: each
// checkpoint's asynchronous half runs on its own goroutine while the
// aggregate goes on with every group updated, windows firing and freed,
// their group ids reused and the string keys' arena compacted (run it
// with -race). Every checkpoint, restored and flushed, must equal a
// synchronous copy taken at its barrier; the aggregate restored from the
// last one and fed the rest of the input must emit what the uninterrupted
// aggregate emits; and the chunks the snapshots kept must be reclaimed and
// the arrays they built freed.
func TestWindowAggSnapshotWhileMutating(t *testing.T) {
	keys := 30000 // ids past the first MiB of chunks: mapped memory
	if testing.Short() || optest.RaceEnabled {
		keys = 12000
	}
	for _, kc := range []struct {
		name string
		dt   arrow.DataType
	}{{"str", arrow.BinaryTypes.String}, {"int", arrow.PrimitiveTypes.Int64}} {
		for _, lateness := range []int64{0, 3000} {
			t.Run(fmt.Sprintf("key=%s,lateness=%d", kc.name, lateness), func(t *testing.T) {
				wtCowRun(t, kc.dt, keys, lateness)
			})
		}
	}
}

func wtCowRun(t *testing.T, keyType arrow.DataType, keys int, lateness int64) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: keyType, Nullable: true},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	cfg := Config{
		Input: schema, Window: kwindow.Spec{Kind: kwindow.Tumble, Size: 5000}, TimeCol: 0, Keys: []int{1},
		AllowedLateness: lateness,
		Aggs: []agg.Spec{
			{Func: agg.CountStar, Arg: -1, Name: "cnt"},
			{Func: agg.Avg, Arg: 2, Name: "avg_v"},
			{Func: agg.Min, Arg: 2, Name: "min_v"},
			{Func: agg.Max, Arg: 2, Name: "max_v"},
		},
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	in := memory.NewGoAllocator()
	rng := rand.New(rand.NewPCG(uint64(keys), uint64(lateness)))

	// Tick s: every key (or a tenth of them) reads once, at s seconds (a
	// few 3.5 s earlier), in shuffled batches; the watermark lags 1.5 s.
	type tick struct {
		recs []arrow.RecordBatch
		wm   int64
	}
	const ticks = 24
	var input []tick
	perm := make([]int, keys)
	for s := range ticks {
		for i := range perm {
			perm[i] = i
		}
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		n := keys
		if s%4 >= 2 {
			n = keys / 10 // every other checkpoint a delta
		}
		var tk tick
		for lo := 0; lo < n; lo += 1000 {
			hi := min(lo+1000, n)
			b := array.NewRecordBuilder(in, schema)
			for _, k := range perm[lo:hi] {
				ts := int64(s)*1000 + int64(k%1000)
				if k%13 == 0 && s >= 4 {
					ts -= 3500 // some late for a fired window: dropped, or its update
				}
				b.Field(0).(*array.Int64Builder).Append(ts)
				switch kb := b.Field(1).(type) {
				case *array.StringBuilder:
					kb.Append(fmt.Sprintf("sensor-%d", k))
				case *array.Int64Builder:
					kb.Append(int64(k) * 7919)
				}
				if k%97 == 0 {
					b.Field(2).AppendNull()
				} else {
					b.Field(2).(*array.Float64Builder).Append(float64((k*31+s*17)%1000) / 8)
				}
			}
			tk.recs = append(tk.recs, b.NewRecordBatch())
			b.Release()
		}
		tk.wm = int64(s)*1000 - 1500
		input = append(input, tk)
	}
	defer func() {
		for _, tk := range input {
			for _, r := range tk.recs {
				r.Release()
			}
		}
	}()

	newAgg := func() *Agg {
		w, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	lines := func(recs []arrow.RecordBatch, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, optest.Lines(t, &vector.Batch{Rec: r})...)
		}
		return out
	}
	feed := func(w *Agg, tk tick) []string {
		for _, r := range tk.recs {
			if err := w.Add(&vector.Batch{Rec: r}); err != nil {
				t.Fatal(err)
			}
		}
		out := lines(w.Advance(tk.wm))
		recs, _ := w.TakeUpdates()
		return append(out, lines(recs, nil)...)
	}

	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	refStore, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := newAgg()
	var got []string       // the uninterrupted aggregate's output
	var sinceLast []string // its output since the last checkpoint
	var lastID uint64      // the last checkpoint
	var lastTick int       // the tick after it
	var pendingDone chan error
	var pendingCommit func()
	id := uint64(0)
	deltas := 0
	finish := func() {
		if pendingDone == nil {
			return
		}
		if err := <-pendingDone; err != nil {
			t.Fatal(err)
		}
		pendingCommit()
		pendingDone = nil
	}
	var ref []*Agg // per checkpoint: a synchronous copy of the state at its barrier
	for s, tk := range input {
		out := feed(w, tk)
		got, sinceLast = append(got, out...), append(sinceLast, out...)
		if s%2 == 1 && s < ticks-2 {
			finish()
			wtCheckEpochCounts(t, w)
			id++
			ref = append(ref, wtSnapshotRestore(t, optest.Case{Cfg: cfg}, w, mem, id, refStore))
			cw, err := store.Begin(id)
			if err != nil {
				t.Fatal(err)
			}
			var fn func() error
			snap := &op.Snapshot{ID: id, MaxParallelism: checkpoint.DefaultMaxParallelism, Mem: mem, Completed: id - 1, MaxDeltas: 3,
				Go:   func(f func() error) { fn = f },
				Open: func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error) { return cw.Part("op", 0, slots) },
				OpenDelta: func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error) {
					deltas++
					return cw.DeltaPart("op", 0, slots, chain)
				}}
			if err := w.SnapshotState(snap); err != nil {
				t.Fatal(err)
			}
			if w.aggs != nil && fn == nil {
				t.Fatal("the snapshot has no asynchronous half")
			}
			// The write runs while the next ticks go in.
			done := make(chan error, 1)
			go func() { done <- fn() }()
			pendingDone = done
			pendingCommit = func() {
				if err := cw.Commit(checkpoint.Meta{Job: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			lastID, lastTick, sinceLast = id, s+1, nil
		}
	}
	finish()
	flushed := lines(w.Advance(math.MaxInt64))
	got, sinceLast = append(got, flushed...), append(sinceLast, flushed...)
	if deltas == 0 {
		t.Fatal("no delta part written")
	}

	// Each checkpoint holds the state at its barrier.
	for i, r := range ref {
		w2 := newAgg()
		optest.RestoreNewest(t, store, uint64(i+1), w2)
		optest.CompareLines(t, fmt.Sprintf("checkpoint %d, flushed", i+1), lines(w2.Advance(math.MaxInt64)), lines(r.Advance(math.MaxInt64)))
	}
	// The last one continues as the uninterrupted run did.
	w2 := newAgg()
	optest.RestoreNewest(t, store, lastID, w2)
	var cont []string
	for _, tk := range input[lastTick:] {
		cont = append(cont, feed(w2, tk)...)
	}
	cont = append(cont, lines(w2.Advance(math.MaxInt64))...)
	optest.CompareLines(t, "restored from the last checkpoint", cont, sinceLast)
	if len(got) == 0 {
		t.Fatal("no output")
	}

	// The next freeze reclaims every chunk the released snapshots kept.
	h := column.NewHold()
	if _, ok := w.frozenSource(h); !ok {
		t.Fatal("state not frozen")
	}
	h.Release()
	if n := column.RetainedChunks(); n != 0 {
		t.Errorf("%d replaced chunks not reclaimed after every snapshot was written", n)
	}
	mem.AssertSize(t, 0) // every array the snapshots built went back
}

// wtCheckEpochCounts checks the per-epoch counts of changed groups
// against a scan of the live groups, for every base they can answer for.
func wtCheckEpochCounts(t *testing.T, w *Agg) {
	t.Helper()
	inc := &w.inc
	if w.sess != nil || inc.from == 0 {
		return
	}
	all, _, _ := w.stateGroups()
	for base := inc.from - 1; base < inc.from+uint32(len(inc.perEpoch)); base++ {
		want := 0
		for _, g := range all {
			if int(g) < len(inc.mod) && inc.mod[g] > base {
				want++
			}
		}
		got := 0
		for e := int(base + 1 - inc.from); e < len(inc.perEpoch); e++ {
			got += inc.perEpoch[e]
		}
		if got != want {
			t.Fatalf("groups changed after epoch %d: counted %d, %d by a scan", base, got, want)
		}
	}
}
