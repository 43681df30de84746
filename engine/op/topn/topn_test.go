package topn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/engine/op/internal/optest"
	"github.com/clink-dev/clink/vector"
)

// TestTopNChangelogReference checks the unwindowed Top-N changelog, row by
// row, against a plain reference at several batch sizes (enough rows for
// the state to compact).
func TestTopNChangelogReference(t *testing.T) {
	const limit = 3
	keys, ts, vals, want := topnReferenceCase(rand.New(rand.NewPCG(5, 6)), 30000, limit)
	n := len(keys)
	for _, bs := range []int{1, 7, 1000, 8192} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var top *Ranker
		var got []string
		for from := 0; from < n; from += bs {
			to := min(from+bs, n)
			b := optest.Int64Batch(mem, keys[from:to], ts[from:to], vals[from:to])
			if top == nil {
				var err error
				if top, err = New(topnReferenceConfig(b.Schema(), limit), mem); err != nil {
					t.Fatal(err)
				}
			}
			res, err := top.Add(b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			got = topnAppendChanges(got, res)
		}
		top.Close()
		mem.AssertSize(t, 0)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("batch %d: %d changes, want %d", bs, len(got), len(want))
		}
	}
}

// topnReferenceCase makes n rows (key, ts, value) and the changelog of
// the Top-limit by value descending per key, ties by arrival.
func topnReferenceCase(r *rand.Rand, n, limit int) (keys, ts, vals []int64, want []string) {
	keys, ts, vals = make([]int64, n), make([]int64, n), make([]int64, n)
	for i := range keys {
		keys[i], ts[i], vals[i] = r.Int64N(20), int64(i), r.Int64N(1000)
	}
	// Reference: lists of row indices, by value descending, ties by arrival.
	lists := map[int64][]int{}
	for i := range keys {
		l := lists[keys[i]]
		pos := len(l)
		for p, j := range l {
			if vals[i] > vals[j] {
				pos = p
				break
			}
		}
		if pos >= limit {
			continue
		}
		old := slices.Clone(l)
		l = slices.Insert(l, pos, i)
		if len(l) > limit {
			l = l[:limit]
		}
		lists[keys[i]] = l
		for rank := pos; rank < len(l); rank++ {
			if rank < len(old) {
				want = append(want, fmt.Sprintf("-U %d %d %d", keys[i], vals[old[rank]], rank+1), fmt.Sprintf("+U %d %d %d", keys[i], vals[l[rank]], rank+1))
			} else {
				want = append(want, fmt.Sprintf("+I %d %d %d", keys[i], vals[l[rank]], rank+1))
			}
		}
	}
	return keys, ts, vals, want
}

func topnReferenceConfig(schema *arrow.Schema, limit int64) Config {
	return Config{Input: schema, Partition: []int{0}, Order: []SortKey{{Col: 2, Desc: true}}, Limit: limit, TimeCol: -1}
}

// topnAppendChanges renders a changelog batch of the reference case.
func topnAppendChanges(got []string, res *vector.Batch) []string {
	if res == nil {
		return got
	}
	k, v, rn := res.Column(0).(*array.Int64), res.Column(2).(*array.Int64), res.Column(3).(*array.Int64)
	res.Rows(func(i int) {
		got = append(got, fmt.Sprintf("%s %d %d %d", res.Kinds[i], k.Value(i), v.Value(i), rn.Value(i)))
	})
	res.Release()
	return got
}
