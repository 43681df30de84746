package column

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// ReleaseAll releases every non-nil array of arrs.
func ReleaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}

// Nulls writes, for each entry k, whether arr is null at row rows[k]
// (rows nil: row k) into dst, and returns dst; nil if arr has no nulls.
func Nulls(dst []bool, arr arrow.Array, rows []int32, n int) []bool {
	if arr.NullN() == 0 {
		return nil
	}
	if cap(dst) < n {
		dst = make([]bool, n)
	}
	dst = dst[:n]
	bm := arr.NullBitmapBytes()
	off := arr.Data().Offset()
	if rows == nil {
		for k := range dst {
			dst[k] = !bitutil.BitIsSet(bm, off+k)
		}
		return dst
	}
	for k, r := range rows[:n] {
		dst[k] = !bitutil.BitIsSet(bm, off+int(r))
	}
	return dst
}

// BoolsInto reads the bit-packed boolean values of entries as 0/1.
func BoolsInto(dst []uint8, arr arrow.Array, rows []int32) {
	vb := arr.Data().Buffers()[1]
	if vb == nil {
		clear(dst)
		return
	}
	bm := vb.Bytes()
	off := arr.Data().Offset()
	if rows == nil {
		for k := range dst {
			i := off + k
			dst[k] = (bm[i>>3] >> (i & 7)) & 1
		}
		return
	}
	for k, r := range rows[:len(dst)] {
		i := off + int(r)
		dst[k] = (bm[i>>3] >> (i & 7)) & 1
	}
}

// Grow returns s resized to n, reusing its capacity.
func Grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
