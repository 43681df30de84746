package op

import (
	"fmt"

	"github.com/clink-dev/clink/vector"
)

// InsertRows returns the live rows of b (reusing *scratch when b is dense)
// and fails if one of them is not an insert: what names the operator.
func InsertRows(b *vector.Batch, scratch *[]int32, what string) ([]int32, error) {
	rows := LiveRows(b, scratch)
	if b.Kinds != nil {
		for _, i := range rows {
			if b.Kinds[i] != vector.Insert {
				return nil, fmt.Errorf("%s over an updating (changelog) input is not supported", what)
			}
		}
	}
	return rows, nil
}

// LiveRows returns the live rows of b: b.Sel, or 0..n-1 from *scratch
// (made once) when b is dense.
func LiveRows(b *vector.Batch, scratch *[]int32) []int32 {
	if b.Sel != nil {
		return b.Sel
	}
	n := b.NumRows()
	if cap(*scratch) < n {
		*scratch = make([]int32, n)
		for i := range *scratch {
			(*scratch)[i] = int32(i)
		}
	}
	return (*scratch)[:n]
}
