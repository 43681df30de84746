package engine

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A tee whose job is done releases every reference to the batch it could
// not hand out, whichever channel it stopped at (a full one; an earlier
// one may stop it too).
func TestTeeReleasesOnCancel(t *testing.T) {
	for full := range 3 {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		tee := newTee(3, 1)
		tee.ch[full] <- Message{Kind: KindWatermark} // channel full: depth 1
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		tee.bind(ctx)
		if err := (&teeSink{t: tee}).Write(oneRow(mem)); err == nil {
			t.Fatalf("channel %d full, the job done: no error", full)
		}
		for _, ch := range tee.ch {
			for len(ch) > 0 {
				if m := <-ch; m.Batch != nil {
					m.Batch.Release()
				}
			}
		}
		mem.AssertSize(t, 0)
	}
}
