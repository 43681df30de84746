package checkpoint

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRecordHoldsAgreesWithRows: the run-wise fast check never accepts a
// record the row-by-row check rejects, and accepts the valid ones, on
// random records with occasional bad rows of every kind.
func TestRecordHoldsAgreesWithRows(t *testing.T) {
	for _, delta := range []bool{false, true} {
		l, err := newLayout(aggSlots)
		if delta {
			l, err = newDeltaLayout(aggSlots)
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := l.schema(nil)
		rng := rand.New(rand.NewPCG(17, 17))
		accepted, rejected := 0, 0
		for trial := 0; trial < 3000; trial++ {
			b := NewRowBuilder(memory.DefaultAllocator, sc)
			bad := rng.IntN(3) == 0
			for i, n := 0, 1+rng.IntN(20); i < n; i++ {
				g := int32(rng.IntN(128))
				if bad && rng.IntN(8) == 0 {
					g = []int32{-2, -1, 128, 1 << 20}[rng.IntN(4)]
				}
				k := rng.IntN(5)
				if delta && rng.IntN(4) == 0 {
					k = 5
				}
				switch {
				case k == 0:
					b.Keyed("window_agg", g, "k")
				case k == 1:
					s := int64(rng.IntN(100))
					e := s + 1 + int64(rng.IntN(10))
					if bad && rng.IntN(6) == 0 {
						e = s - int64(rng.IntN(2))
					}
					b.Windowed("window_agg", g, "k", s, e)
				case k == 2:
					if bad && rng.IntN(6) == 0 {
						b.Keyed("watermark", g, "k")
					} else {
						b.Raw("watermark")
					}
					b.Value("watermark").(*array.Int64Builder).Append(1)
				case k == 3:
					b.Raw("source_offsets")
					if bad && rng.IntN(6) == 0 {
						b.Value("sum_v").(*array.Float64Builder).Append(1) // another slot's column
					}
				case k == 4:
					b.Windowed("distinct_keys", g, "k", 0, 10)
					b.Value("cnt").(*array.Int64Builder).Append(2)
				default: // a tombstone: any key (-1), or one, of any window
					if rng.IntN(2) == 0 {
						g = -1
					}
					b.Keyed(TombstoneSlot, g, "k")
					b.Value(ColTombstoneFor).(*array.StringBuilder).Append("window_agg")
				}
			}
			rec, err := b.NewRecord()
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			fast, slow := l.recordHolds(rec, 128), l.checkRows(rec, 128)
			if fast && slow != nil {
				t.Fatalf("delta=%v trial %d: fast check accepts a record the row check rejects: %v", delta, trial, slow)
			}
			if slow == nil && !fast {
				t.Fatalf("delta=%v trial %d: fast check rejects a valid record", delta, trial)
			}
			if slow == nil {
				accepted++
			} else {
				rejected++
			}
			rec.Release()
		}
		if accepted < 500 || rejected < 300 {
			t.Errorf("delta=%v: %d accepted, %d rejected: the generator must exercise both", delta, accepted, rejected)
		}
	}
}
