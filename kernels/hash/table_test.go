package hash

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestHashTableRandom(t *testing.T) {
	// Random inserts and removals against a map, with and without forced
	// hash collisions.
	for _, mask := range []uint64{0, 0xc000000000000003, 0x8000000000000000} {
		rng := rand.New(rand.NewPCG(mask, 3))
		kc, _ := NewKeyCol(arrow.PrimitiveTypes.Int64)
		tbl := NewTable([]KeyCol{kc})
		tbl.TestMask = mask
		type key struct{ end, k int64 }
		ref := map[key]int32{}
		mem := memory.NewGoAllocator()
		for round := range 300 {
			n := 1 + rng.IntN(200)
			ends := make([]int64, n)
			kb := array.NewInt64Builder(mem)
			keys := make([]int64, n)
			for i := range ends {
				ends[i] = int64(rng.IntN(4))
				keys[i] = int64(rng.IntN(300))
				if rng.IntN(50) == 0 {
					kb.AppendNull()
					keys[i] = math.MinInt64
				} else {
					kb.Append(keys[i])
				}
			}
			arr := kb.NewArray()
			kb.Release()
			ids := slices.Clone(tbl.Lookup(ends, nil, []arrow.Array{arr}, n))
			arr.Release()
			created := map[int32]bool{}
			for _, id := range tbl.NewIDs {
				created[id] = true
			}
			for i, id := range ids {
				k := key{ends[i], keys[i]}
				if want, ok := ref[k]; ok {
					if id != want {
						t.Fatalf("mask %x round %d: key %v id %d, want %d", mask, round, k, id, want)
					}
				} else {
					if !created[id] {
						t.Fatalf("mask %x round %d: key %v got existing id %d", mask, round, k, id)
					}
					ref[k] = id
				}
			}
			if tbl.N != len(ref) {
				t.Fatalf("table has %d ids, want %d", tbl.N, len(ref))
			}
			// Remove a random share of the entries (sometimes most).
			var rm []int32
			share := []int{10, 2, 1}[rng.IntN(3)]
			for k, id := range ref {
				if rng.IntN(share) == 0 {
					rm = append(rm, id)
					delete(ref, k)
				}
			}
			tbl.Remove(rm)
			seen := map[int32]bool{}
			for _, s := range tbl.slots {
				if s != 0 {
					id := int32(uint32(s)) - 1
					if seen[id] || !tbl.Live(id) {
						t.Fatalf("slot holds id %d twice or dead", id)
					}
					seen[id] = true
				}
			}
			if len(seen) != len(ref) {
				t.Fatalf("%d ids in slots, want %d", len(seen), len(ref))
			}
		}
	}
}

func TestHashTableStringKeys(t *testing.T) {
	// String keys (empty, long, above an arena block, NULL) through
	// inserts, removals and arena compactions; Build returns every key.
	keyOf := func(k int) string {
		if k%500 == 7 {
			return string(slices.Repeat([]byte{byte(k)}, 70000))
		}
		return string(slices.Repeat([]byte{byte('a' + k%26)}, (k%97)*3)) + "#" + string(rune('0'+k%10))
	}
	for _, mask := range []uint64{0, 0xc000000000000003} {
		rng := rand.New(rand.NewPCG(mask, 5))
		kc, _ := NewKeyCol(arrow.BinaryTypes.String)
		tbl := NewTable([]KeyCol{kc})
		tbl.TestMask = mask
		type key struct {
			end  int64
			k    string
			null bool
		}
		ref := map[key]int32{}
		mem := memory.NewGoAllocator()
		for round := range 200 {
			n := 1 + rng.IntN(300)
			ends := make([]int64, n)
			keys := make([]key, n)
			kb := array.NewStringBuilder(mem)
			for i := range ends {
				ends[i] = int64(rng.IntN(3))
				keys[i] = key{end: ends[i], k: keyOf(rng.IntN(2000))}
				if rng.IntN(40) == 0 {
					keys[i] = key{end: ends[i], null: true}
					kb.AppendNull()
				} else {
					kb.Append(keys[i].k)
				}
			}
			arr := kb.NewArray()
			kb.Release()
			ids := slices.Clone(tbl.Lookup(ends, nil, []arrow.Array{arr}, n))
			arr.Release()
			for i, id := range ids {
				if want, ok := ref[keys[i]]; ok && id != want {
					t.Fatalf("mask %x round %d: key %d id %d, want %d", mask, round, i, id, want)
				}
				ref[keys[i]] = id
			}
			if tbl.N != len(ref) {
				t.Fatalf("table has %d ids, want %d", tbl.N, len(ref))
			}
			var all []int32
			var want []key
			for k, id := range ref {
				all = append(all, id)
				want = append(want, k)
			}
			out := kc.Build(mem, all).(*array.String)
			for j, k := range want {
				if out.IsNull(j) != k.null || (!k.null && out.Value(j) != k.k) {
					t.Fatalf("mask %x round %d: id %d builds %q (null %v), want %.20q (null %v)", mask, round, all[j], out.Value(j), out.IsNull(j), k.k, k.null)
				}
			}
			out.Release()
			var rm []int32
			share := []int{10, 2, 1}[rng.IntN(3)]
			for k, id := range ref {
				if rng.IntN(share) == 0 {
					rm = append(rm, id)
					delete(ref, k)
				}
			}
			tbl.Remove(rm)
		}
	}
}
