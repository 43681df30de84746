package engine

import (
	"math/rand/v2"
	"testing"
)

// TestPartitionWatermarksRunningMax checks the column-wise running maximum
// against a row-at-a-time reference, at random batch splits.
func TestPartitionWatermarksRunningMax(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 200; iter++ {
		n := 1 + r.IntN(200)
		ts := make([]int64, n)
		valid := make([]bool, n)
		part := make([]int, n)
		for i := range ts {
			ts[i] = r.Int64N(10000) - 5000
			valid[i] = r.IntN(10) > 0
			part[i] = r.IntN(3)
		}
		lag := r.Int64N(100)
		// Reference: per-row, per-partition.
		want := make([]int64, n)
		maxTS := []int64{MinWatermark, MinWatermark, MinWatermark}
		for i := range ts {
			p := part[i]
			if maxTS[p] == MinWatermark {
				want[i] = MinWatermark
			} else {
				want[i] = maxTS[p] - lag
			}
			if valid[i] && ts[i] > maxTS[p] {
				maxTS[p] = ts[i]
			}
		}
		// Column-wise over runs of one partition, split at random.
		w := NewPartitionWatermarks(3, lag)
		for p := 0; p < 3; p++ {
			w.Start(p)
		}
		got := make([]int64, n)
		for i := 0; i < n; {
			j := i + 1
			for j < n && part[j] == part[i] && r.IntN(4) > 0 {
				j++
			}
			from := i
			w.Observe(part[i], ts[i:j], func(k int) bool { return valid[from+k] }, got[i:j])
			i = j
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("iter %d row %d: got %d want %d", iter, i, got[i], want[i])
			}
		}
		// The source watermark is the minimum over the partitions.
		min := MaxWatermark
		for _, m := range maxTS {
			wm := MinWatermark
			if m != MinWatermark {
				wm = m - lag
			}
			if wm < min {
				min = wm
			}
		}
		if c := w.Current(); c != min {
			t.Fatalf("iter %d: Current %d, want %d", iter, c, min)
		}
	}
}

func TestPartitionWatermarksLifecycle(t *testing.T) {
	w := NewPartitionWatermarks(2, 10)
	if w.Current() != MinWatermark {
		t.Fatal("fresh watermark must be the minimum")
	}
	out := make([]int64, 1)
	w.Start(0)
	w.Observe(0, []int64{100}, nil, out)
	// Partition 1 has not started: it still holds the watermark back.
	if w.Current() != MinWatermark {
		t.Fatalf("pending partition must hold the watermark, got %d", w.Current())
	}
	w.Finish(1)
	if w.Current() != 90 {
		t.Fatalf("got %d, want 90", w.Current())
	}
	w.Observe(0, []int64{50}, nil, out)
	if out[0] != 90 || w.Current() != 90 {
		t.Fatal("an older row must not move the watermark back")
	}
	w.SetIdle(0, true)
	if w.Current() != 90 {
		t.Fatal("with every partition idle the watermark stays")
	}
	w.Finish(0)
	if !w.AllDone() {
		t.Fatal("all partitions finished")
	}
}
