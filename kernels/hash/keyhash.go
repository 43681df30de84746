package hash

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// KeyHashes returns the engine's key hash of each row of the key columns
// cols (all of length n): the hash that assigns a key to its key group
// (docs/state-format.md) and that a keyed shuffle routes by. It depends
// only on the key values (NULL, NaN and -0 canonicalized as in grouping),
// never on windows or batch boundaries.
func KeyHashes(cols []arrow.Array, n int) ([]uint64, error) {
	hs := make([]uint64, n)
	for k := range hs {
		hs[k] = htSeed(0)
	}
	for _, c := range cols {
		kc, err := NewKeyCol(c.DataType())
		if err != nil {
			return nil, err
		}
		kc.prepare(c, nil, n)
		kc.hashInto(hs)
	}
	for k, h := range hs {
		hs[k] = htFinal(h)
	}
	return hs, nil
}
