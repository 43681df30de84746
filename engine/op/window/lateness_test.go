package window

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/kernels/agg"
	kwindow "github.com/clink-dev/clink/kernels/window"
)

// wlAgg is wsAgg (key k, COUNT(*) n, SUM(v) s) with allowed lateness.
func wlAgg(t *testing.T, spec kwindow.Spec, lateness int64, mem memory.Allocator) *Agg {
	t.Helper()
	w, err := New(Config{
		Input:   wsSchema,
		Window:  spec,
		TimeCol: 0,
		Keys:    []int{1},
		Aggs: []agg.Spec{
			{Func: agg.CountStar, Arg: -1, Name: "n"},
			{Func: agg.Sum, Arg: 2, Name: "s"},
		},
		AllowedLateness: lateness,
	}, mem)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// wlAdd adds rows as one batch and returns the changelog they caused.
func wlAdd(t *testing.T, w *Agg, mem memory.Allocator, rows ...wsRow) []string {
	t.Helper()
	wsAdd(t, w, mem, nil, rows...)
	return wtTakeUpdates(t, optest.Case{Cfg: w.cfg}, w)
}

func wlAdvance(t *testing.T, w *Agg, wm int64) []string {
	t.Helper()
	out := wsAdvance(t, w, wm)
	for i, l := range out {
		out[i] = "+I " + l
	}
	return out
}

// TestWindowAggSessionLateness walks through the changelog rules of
// docs/semantics.md for SESSION with allowed lateness.
func TestWindowAggSessionLateness(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w := wlAgg(t, kwindow.Spec{Kind: kwindow.Session, Gap: 10}, 50, mem)
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(0), "a", 1.0}, wsRow{int64(5), "a", 2.0}, wsRow{int64(100), "b", 4.0}))
	wsExpect(t, wlAdvance(t, w, 15), `+I 0,15,"a",2,3`)

	// Inside the fired session: same bounds, an update.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(3), "a", 8.0}), `-U 0,15,"a",2,3`, `+U 0,15,"a",3,11`)
	// Extends it past the watermark: the old row goes, the session fires
	// again when the watermark reaches its new end.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(8), "a", 16.0}), `-D 0,15,"a",3,11`)
	wsExpect(t, wlAdvance(t, w, 18), `+I 0,18,"a",4,27`)
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(25), "a", 32.0}))
	wsExpect(t, wlAdvance(t, w, 40), `+I 25,35,"a",1,32`)

	// Bridges two fired sessions: both old rows go, the merged one is due.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(15), "a", 64.0}),
		`-D 0,18,"a",4,27`, `-D 25,35,"a",1,32`, `+I 0,35,"a",6,123`)
	// Bridges a fired and an open session: the result is not due yet.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(45), "a", 128.0}))
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(35), "a", 256.0}), `-D 0,35,"a",6,123`)
	wsExpect(t, wlAdvance(t, w, 55), `+I 0,55,"a",8,507`)

	// Kept until the watermark reaches end + lateness = 105.
	wsExpect(t, wlAdvance(t, w, 104))
	if w.Groups() != 2 {
		t.Fatalf("groups %d at 104, want 2", w.Groups())
	}
	wsExpect(t, wlAdvance(t, w, 105))
	if w.Groups() != 1 {
		t.Fatalf("groups %d at 105, want 1", w.Groups())
	}
	// Once freed a session cannot change: a row within the lateness that
	// would have touched it opens a session of its own, due at once.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(50), "a", 512.0}), `+I 50,60,"a",1,512`)
	// Late: 40 + 10 + 50 <= 105.
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(40), "a", 1024.0}))
	if w.LateRows() != 1 {
		t.Fatalf("late rows %d, want 1", w.LateRows())
	}
	wsExpect(t, wlAdvance(t, w, 120), `+I 100,110,"b",1,4`)
	wsExpect(t, wlAdvance(t, w, math.MaxInt64))
	if w.Groups() != 0 {
		t.Fatalf("groups %d after the end, want 0", w.Groups())
	}
}

// TestWindowAggTumbleLateness: a row within the lateness of a window with
// no group yet emits it at once; changes are one per row at any batch size.
func TestWindowAggTumbleLateness(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w := wlAgg(t, kwindow.Spec{Kind: kwindow.Tumble, Size: 10}, 20, mem)
	wsExpect(t, wlAdvance(t, w, 12))
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(5), "a", 1.0}, wsRow{int64(15), "a", 2.0}, wsRow{int64(6), "a", 4.0}),
		`+I 0,10,"a",1,1`, `-U 0,10,"a",1,1`, `+U 0,10,"a",2,5`)
	wsExpect(t, wlAdvance(t, w, 30), `+I 10,20,"a",1,2`)
	wsExpect(t, wlAdd(t, w, mem, wsRow{int64(1), "a", 8.0}, wsRow{int64(11), "b", 16.0}),
		`+I 10,20,"b",1,16`) // 1: late, 10 + 20 <= 30
	wsExpect(t, wlAdvance(t, w, math.MaxInt64))
	if w.LateRows() != 1 || w.Groups() != 0 {
		t.Fatalf("late %d groups %d", w.LateRows(), w.Groups())
	}
}

// TestWindowAggSessionLatenessRandom runs random SESSION cases with
// allowed lateness against the reference at every batch size and across
// checkpoints, and checks they exercise every changelog rule.
func TestWindowAggSessionLatenessRandom(t *testing.T) {
	seeds, restores := 12, 5
	if testing.Short() || optest.RaceEnabled {
		seeds, restores = 2, 1
	}
	kinds := map[string]int{}
	for seed := range uint64(seeds) {
		c := optest.RandomCaseOf(seed+2000, true)
		lines, _, _ := wtReference(c)
		for _, l := range lines {
			kinds[l[:2]]++
		}
		t.Run(c.Name, func(t *testing.T) {
			wtRunBatchSizes(t, c, seed)
			if seed < uint64(restores) {
				wtRunRestores(t, c, seed)
			}
		})
	}
	for _, k := range []string{"+I", "-U", "+U", "-D"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rows in the random cases: %v", k, kinds)
		}
	}
	t.Logf("changelog rows by kind: %v", kinds)
}
