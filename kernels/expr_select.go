package kernels

import (
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/clink-dev/clink/vector"
)

// SelectTrue returns the live rows of b where pred (a BOOLEAN array aligned
// with b's physical rows) is TRUE — neither FALSE nor NULL — in ascending
// order: a filter's new selection vector. It follows Batch.Sel's
// convention: nil means every physical row (returned only when b is dense
// and every row passes); no row passing is an empty, non-nil slice.
func SelectTrue(pred arrow.Array, b *vector.Batch) []int32 {
	n := b.NumRows()
	if pred.DataType().ID() == arrow.NULL {
		return []int32{}
	}
	x := scBitmapBytes(pred, 1)
	var valid []byte
	if pred.NullN() > 0 {
		valid = scBitmapBytes(pred, 0)
	}
	if b.Sel != nil {
		out := make([]int32, 0, len(b.Sel))
		for _, i := range b.Sel {
			if bitutil.BitIsSet(x, int(i)) && (valid == nil || bitutil.BitIsSet(valid, int(i))) {
				out = append(out, i)
			}
		}
		return out
	}
	nw := scWords(n)
	word := func(w int) uint64 {
		v := scLoadWord(x, w)
		if valid != nil {
			v &= scLoadWord(valid, w)
		}
		if rem := n - w*64; rem < 64 {
			v &= 1<<uint(rem) - 1
		}
		return v
	}
	count := 0
	for w := 0; w < nw; w++ {
		count += bits.OnesCount64(word(w))
	}
	if count == n {
		return nil
	}
	out := make([]int32, count)
	k := 0
	for w := 0; w < nw; w++ {
		v := word(w)
		for v != 0 {
			out[k] = int32(w*64 + bits.TrailingZeros64(v))
			k++
			v &= v - 1
		}
	}
	return out
}
