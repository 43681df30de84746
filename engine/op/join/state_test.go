package join

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/engine/op/opstate"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// joinRestore checkpoints j and returns a new join restored from it; j is
// closed. With split, the checkpoint is also restored over two subtasks,
// whose rows must add up.
func joinRestore(t *testing.T, j *Join, store *checkpoint.Store, id uint64, mem memory.Allocator, split bool) *Join {
	t.Helper()
	part := optest.Checkpoint(t, store, id, j, mem)
	defer part.Release()
	fresh := func(owns func(int32) bool) *Join {
		j2, err := New(j.cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		if err := j2.restore([]*checkpoint.Part{part}, owns, mem); err != nil {
			t.Fatal(err)
		}
		return j2
	}
	if split {
		n := 0
		for i := range 2 {
			ji := fresh(optest.Owns(i, 2))
			n += ji.StateRows()
			ji.Close()
		}
		if n != j.StateRows() {
			t.Fatalf("two subtasks restored %d rows, the join had %d", n, j.StateRows())
		}
	}
	j2 := fresh(nil)
	if j2.StateRows() != j.StateRows() || j2.wm != j.wm {
		t.Fatalf("restored %d rows and watermark %d, the join had %d and %d", j2.StateRows(), j2.wm, j.StateRows(), j.wm)
	}
	j.Close()
	return j2
}

// TestIntervalJoinSnapshotRestore runs the interval-join reference test's
// streams, checkpointing at random batch and watermark boundaries into a
// restored join that continues: the pairs equal the nested-loop
// reference's at every batch size, and the allocator ends at zero.
func TestIntervalJoinSnapshotRestore(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 8000
	if testing.Short() || optest.RaceEnabled {
		n = 3000
	}
	var keys, ts, vals [2][]int64
	for s := 0; s < 2; s++ {
		for i := 0; i < n; i++ {
			keys[s] = append(keys[s], r.Int64N(50))
			ts[s] = append(ts[s], int64(i)+r.Int64N(20))
			vals[s] = append(vals[s], int64(s*1_000_000+i))
		}
	}
	const lo, hi = -30, 15
	var want []string
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if keys[0][i] == keys[1][j] && ts[1][j]+lo <= ts[0][i] && ts[0][i] <= ts[1][j]+hi {
				want = append(want, fmt.Sprint(vals[0][i], vals[1][j]))
			}
		}
	}
	slices.Sort(want)
	for _, bs := range []int{1 << 12, 777, 100, 1 + r.IntN(500)} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cuts := 0
		batches := (n + bs - 1) / bs
		cut := func(j *Join) *Join {
			if r.IntN(2*batches) >= 6 {
				return j
			}
			cuts++
			return joinRestore(t, j, store, uint64(cuts), mem, cuts == 1)
		}
		var got []string
		j, err := New(Config{Left: optest.Int64Schema, Right: optest.Int64Schema, LeftKeys: []int{0}, RightKeys: []int{0},
			Interval: &Interval{LeftTime: 1, RightTime: 1, Lower: lo, Upper: hi}}, mem)
		if err != nil {
			t.Fatal(err)
		}
		for from := 0; from < n; from += bs {
			to := min(from+bs, n)
			for s := 0; s < 2; s++ {
				b := optest.Int64Batch(mem, keys[s][from:to], ts[s][from:to], vals[s][from:to])
				res, err := j.Add(s, b)
				b.Release()
				if err != nil {
					t.Fatal(err)
				}
				got = appendPairs(got, res)
				j = cut(j)
			}
			res, err := j.Advance(int64(to) - 21)
			if err != nil {
				t.Fatal(err)
			}
			got = appendPairs(got, res)
			j = cut(j)
		}
		j.Close()
		mem.AssertSize(t, 0)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("batch %d, %d restores: %d pairs, want %d", bs, cuts, len(got), len(want))
		}
	}
}

// TestJoinSnapshotRestore runs random joins (inner, left, right, full;
// regular and interval; with and without a residual condition) over the
// window test's random rows on both sides, checkpointing at random batch
// and watermark boundaries into a restored join that continues; the
// output, row kinds included, equals the uninterrupted run's byte for byte
// at every batch size.
func TestJoinSnapshotRestore(t *testing.T) {
	seeds := 8
	if testing.Short() || optest.RaceEnabled {
		seeds = 2
	}
	for seed := range uint64(seeds) {
		c := optest.RandomCase(seed + 3000)
		rng := rand.New(rand.NewPCG(seed, 31))
		schema := c.Cfg.Input
		var keys []int
		for _, k := range []int{optest.KI64, optest.KStr, optest.KF32, optest.KBool, optest.KI8} {
			if rng.IntN(3) == 0 {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 || rng.IntN(2) == 0 {
			keys = append(keys, optest.KI64)
		}
		cfg := Config{Left: schema, Right: schema, LeftKeys: keys, RightKeys: keys, Kind: Kind(rng.IntN(4))}
		if rng.IntN(3) == 0 {
			nl := schema.NumFields()
			cfg.Residual = call(t, "lt", kernels.ColRef(optest.VI32, schema.Field(optest.VI32).Type, "l"), kernels.ColRef(nl+optest.VI32, schema.Field(optest.VI32).Type, "r"))
		}
		if rng.IntN(3) > 0 {
			lower := -rng.Int64N(3000)
			cfg.Interval = &Interval{LeftTime: optest.TS, RightTime: optest.TS, Lower: lower, Upper: lower + rng.Int64N(4000)}
		}
		// A regular join keeps every row: fewer rows bound the output.
		maxRows := 2000
		if cfg.Interval == nil {
			maxRows = 400
		}
		sides := make([]int, len(c.Events))
		for i := range sides {
			sides[i] = rng.IntN(2)
		}
		name := fmt.Sprintf("seed=%d/kind=%d/keys=%v/interval=%v/residual=%v", seed, cfg.Kind, keys, cfg.Interval != nil, cfg.Residual != nil)
		t.Run(name, func(t *testing.T) {
			for _, bs := range []int{1, 7, 1024, -1} {
				size := func() int { return bs }
				if bs < 0 {
					size = func() int { return 1 + rng.IntN(60) }
				}
				// Runs of one side's rows, cut at watermarks and at the size.
				var steps []optest.Step
				rows := 0
				for i, ev := range c.Events {
					if ev.Advance {
						steps = append(steps, optest.Step{Advance: true, WM: ev.WM})
						continue
					}
					if rows++; rows > maxRows {
						continue
					}
					last := len(steps) - 1
					if last < 0 || steps[last].Advance || steps[last].Side != sides[i] || len(steps[last].Rows) >= size() {
						steps = append(steps, optest.Step{Side: sides[i]})
						last++
					}
					steps[last].Rows = append(steps[last].Rows, ev.Row)
				}
				want := joinStateRun(t, c, cfg, steps, nil)
				got := joinStateRun(t, c, cfg, steps, rng)
				optest.CompareLines(t, fmt.Sprintf("batch=%d", bs), got, want)
			}
		})
	}
}

// joinStateRun runs steps through a join; with cut set, it checkpoints
// after random steps and continues in a restored join.
func joinStateRun(t *testing.T, c optest.Case, cfg Config, steps []optest.Step, cut *rand.Rand) []string {
	mem, checkLeaks := optest.TestAlloc(t, cut != nil)
	defer checkLeaks()
	in := &optest.CountingAlloc{Mem: memory.NewGoAllocator()}
	brng := rand.New(rand.NewPCG(uint64(len(steps)), 5))
	j, err := New(cfg, mem)
	if err != nil {
		t.Fatal(err)
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
			res, err = j.Advance(st.WM)
		} else {
			b := optest.Batch(in, cfg.Left, st.Rows, brng, brng.IntN(2) == 0)
			if !c.UseRowWM {
				b.RowWatermark = nil
			}
			res, err = j.Add(st.Side, b)
			b.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, optest.Lines(t, res)...)
		// About eight checkpoints per run (each costs fsyncs).
		if cut != nil && cut.IntN(len(steps)) < 8 {
			id++
			j = joinRestore(t, j, store, id, mem, id%3 == 1)
		}
	}
	j.Close()
	if in.Size != 0 {
		t.Errorf("input batches: %d bytes not released", in.Size)
	}
	return out
}

// TestJoinSnapshotRestoreLarge restores a state of several records per
// side (more rows than one state record holds), shuffled: the left join's
// output after the restore equals the uninterrupted run's.
func TestJoinSnapshotRestoreLarge(t *testing.T) {
	const n = 3*opstate.ChunkRows + 100
	r := rand.New(rand.NewPCG(3, 4))
	keys, ts, vals := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, k := range r.Perm(n) {
		keys[i], ts[i], vals[i] = int64(k%(n/2)), int64(i), int64(i)
	}
	cfg := Config{Left: optest.Int64Schema, Right: optest.Int64Schema, LeftKeys: []int{0}, RightKeys: []int{0}, Kind: Full}
	run := func(cut bool) []string {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		j, err := New(cfg, mem)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for s, half := range [][2]int{{0, n / 2}, {n / 2, n}} {
			for side := range 2 {
				b := optest.Int64Batch(mem, keys[half[0]:half[1]], ts[half[0]:half[1]], vals[half[0]:half[1]])
				res, err := j.Add(side, b)
				b.Release()
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, optest.Lines(t, res)...)
			}
			if cut && s == 0 {
				store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
				if err != nil {
					t.Fatal(err)
				}
				j = joinRestore(t, j, store, 1, mem, true)
			}
		}
		j.Close()
		return out
	}
	optest.CompareLines(t, "restored", run(true), run(false))
}

// call binds the scalar function name over args.
func call(t *testing.T, name string, args ...kernels.Expr) kernels.Expr {
	t.Helper()
	r := kernels.NewRegistry()
	kernels.RegisterScalar(r)
	e, err := r.Call(name, args)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
