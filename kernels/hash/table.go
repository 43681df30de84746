package hash

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clink-dev/clink/kernels/column"
)

// Hashing. Keys are hashed column-wise: every entry starts from its window
// end, each key column folds its value in with one multiply, and a final
// mix spreads the bits. The table takes its home slot from the top bits and
// a 32-bit tag from the low bits of the same hash.
const (
	htK0       = 0x9e3779b97f4a7c15
	htK1       = 0xbf58476d1ce4e5b9
	htK2       = 0x94d049bb133111eb
	htK3       = 0xff51afd7ed558ccd
	htNullHash = 0x6a09e667f3bcc909
	htMinCap   = 64
)

func htSeed(end int64) uint64 { return (uint64(end) ^ htK3) * htK0 }

func htFinal(h uint64) uint64 {
	h ^= h >> 32
	h *= htK2
	h ^= h >> 29
	return h
}

func htMum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// htHashBytes hashes b wyhash-style: overlapping 4/8-byte loads for short
// strings, 16-byte blocks for long ones, folded by 64x64→128 multiplies.
func htHashBytes(p []byte) uint64 {
	n := len(p)
	seed := uint64(n)*htK0 ^ htK3
	var a, b uint64
	switch {
	case n == 0:
	case n < 4:
		a = uint64(p[0])<<16 | uint64(p[n>>1])<<8 | uint64(p[n-1])
	case n <= 8:
		a = uint64(binary.LittleEndian.Uint32(p))
		b = uint64(binary.LittleEndian.Uint32(p[n-4:]))
	case n <= 16:
		a = binary.LittleEndian.Uint64(p)
		b = binary.LittleEndian.Uint64(p[n-8:])
	default:
		q := p
		for len(q) > 16 {
			seed = htMum(binary.LittleEndian.Uint64(q)^htK1, binary.LittleEndian.Uint64(q[8:])^seed)
			q = q[16:]
		}
		a = binary.LittleEndian.Uint64(p[n-16:])
		b = binary.LittleEndian.Uint64(p[n-8:])
	}
	return htMum(a^htK1, b^seed)
}

// Table is an open-addressing hash table (linear probing, backward-shift
// deletion, no tombstones) mapping (window end, group key) to a dense int32
// id. It persists across batches. A slot holds tag<<32 | id+1 (0 = empty);
// everything else about an id lives in columns indexed by id: its hash, its
// window end, and its key values in the key columns. Removed ids go to a
// free list and are reused, so the id space stays as small as the peak
// number of live entries and the accumulator columns indexed by id never
// need compaction.
//
// The per-id columns are chunked (column.Chunked): a table of millions of
// ids grows without copying them, and they stay off the Go heap. The slot
// array is mapped memory too, replaced (and unmapped) on rehash.
type Table struct {
	slots  []uint64
	smem   column.Mapped[uint64]
	shift  uint // 64 - log2(len(slots))
	mask   uint64
	N      int // live ids
	growAt int

	size   int                    // ids ever allocated
	hashes column.Chunked[uint32] // per id: the hash's top half (its slot holds the rest as the tag)
	ends   column.Chunked[int64]  // per id
	live   column.Chunked[bool]   // per id
	free   column.Chunked[int32]  // a stack of removed ids
	nfree  int
	Keys   []KeyCol

	// TestMask, when set, is ANDed into every hash: tests use it to force
	// tag collisions and long probe runs.
	TestMask uint64

	// Per-lookup scratch and results.
	hs     []uint64
	ids    []int32
	NewIDs []int32 // ids created by the last lookup, in creation order
	NewK   []int32 // entry index that created each of NewIDs
	bad    []int32
}

// NewTable returns an empty table over the key columns keys.
func NewTable(keys []KeyCol) *Table {
	t := &Table{Keys: keys}
	t.rehash(htMinCap)
	return t
}

// Size is the number of ids ever allocated (live or free).
func (t *Table) Size() int { return t.size }

// Live reports whether id (< Size) is live, not on the free list.
func (t *Table) Live(id int32) bool { return *t.live.At(id) }

// rehash rebuilds the slots at capacity from the live ids of the old ones.
// A slot word and the id's top half make the whole hash.
func (t *Table) rehash(capacity int) {
	old, prev := t.slots, t.smem
	if len(old) == capacity { // a rebuild after Remove: set the survivors aside
		n := 0
		for _, s := range old {
			if s != 0 && *t.live.At(int32(uint32(s)) - 1) {
				n++
			}
		}
		prev = column.NewMapped[uint64](n)
		keep := prev.S[:0]
		for _, s := range old {
			if s != 0 && *t.live.At(int32(uint32(s)) - 1) {
				keep = append(keep, s)
			}
		}
		clear(t.slots)
		old = keep
	} else {
		t.smem = column.NewMapped[uint64](capacity)
		t.slots = t.smem.S
	}
	t.mask = uint64(capacity - 1)
	t.shift = uint(64 - bits.TrailingZeros(uint(capacity)))
	t.growAt = capacity / 2
	for _, s := range old {
		if s == 0 {
			continue
		}
		if id := int32(uint32(s)) - 1; *t.live.At(id) {
			t.place(uint64(*t.hashes.At(id))<<32|s>>32, id)
		}
	}
	prev.Free()
}

func (t *Table) place(h uint64, id int32) {
	i := h >> t.shift
	for t.slots[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i] = uint64(uint32(h))<<32 | uint64(uint32(id)+1)
}

func (t *Table) alloc(h uint64, end int64) int32 {
	var id int32
	if t.nfree > 0 {
		t.nfree--
		id = *t.free.At(int32(t.nfree))
	} else {
		id = int32(t.size)
		t.size++
		if t.size > t.hashes.Len() {
			t.hashes.Grow(t.size)
			t.ends.Grow(t.size)
			t.live.Grow(t.size)
		}
	}
	*t.hashes.At(id) = uint32(h >> 32)
	*t.ends.At(id) = end
	*t.live.At(id) = true
	t.N++
	return id
}

// Lookup finds or creates the id of every entry k < n: window end ends[k]
// and the key values at row rows[k] (rows nil: row k) of cols. It returns
// the ids (valid until the next lookup); t.newIDs/t.newK list the ids it
// created. Key values of new ids are stored before lookup returns.
//
// The probe compares only the tag and the window end; key columns are then
// checked column-wise in one pass each, and the rare entry whose tag
// matched a different key is re-probed with full comparisons.
func (t *Table) Lookup(ends []int64, rows []int32, cols []arrow.Array, n int) []int32 {
	for i, c := range t.Keys {
		c.prepare(cols[i], rows, n)
	}
	if len(t.Keys) == 1 && t.TestMask == 0 {
		if fk, ok := t.Keys[0].(*htFixedKey); ok && fk.curNull == nil && !fk.nullGroups {
			return t.lookupFixed1(ends[:n], fk)
		}
	}
	hs := column.Grow(t.hs, n)
	t.hs = hs
	ends = ends[:n]
	for k, e := range ends {
		hs[k] = htSeed(e)
	}
	for _, c := range t.Keys {
		c.hashInto(hs)
	}
	for k, h := range hs {
		hs[k] = htFinal(h)
	}
	if t.TestMask != 0 {
		for k := range hs {
			hs[k] &= t.TestMask
		}
	}
	ids := column.Grow(t.ids, n)
	t.ids = ids
	t.NewIDs, t.NewK = t.NewIDs[:0], t.NewK[:0]

	slots, mask, shift := t.slots, t.mask, t.shift
	tends := t.ends
	for k, h := range hs {
		end := ends[k]
		tag := uint64(uint32(h))
		i := h >> shift
		for {
			s := slots[i]
			if s == 0 {
				id := t.alloc(h, end)
				slots[i] = tag<<32 | uint64(uint32(id)+1)
				ids[k] = id
				t.NewIDs = append(t.NewIDs, id)
				t.NewK = append(t.NewK, int32(k))
				if t.N > t.growAt {
					t.rehash(len(t.slots) * 2)
					slots, mask, shift = t.slots, t.mask, t.shift
				}
				tends = t.ends
				break
			}
			if s>>32 == tag {
				if id := int32(uint32(s)) - 1; *tends.At(id) == end {
					ids[k] = id
					break
				}
			}
			i = (i + 1) & mask
		}
	}
	if len(t.NewIDs) > 0 {
		for _, c := range t.Keys {
			c.grow(t.Size())
			c.storeNew(t.NewIDs, t.NewK)
		}
	}
	if len(t.Keys) == 0 {
		return ids
	}
	bad := t.bad[:0]
	for _, c := range t.Keys {
		bad = c.verify(ids, bad)
	}
	t.bad = bad
	if len(bad) > 0 {
		t.reprobe(ends, ids, bad)
	}
	return ids
}

// FreezeKeys returns copies of the key columns that keep the keys of the
// ids allocated so far as they are until h is released, while the table
// goes on (copy-on-write: column.Chunked.Freeze); only their Build may be
// called. O(chunks).
func (t *Table) FreezeKeys(h *column.Hold) []KeyCol {
	keys := make([]KeyCol, len(t.Keys))
	for i, c := range t.Keys {
		keys[i] = c.freeze(h)
	}
	return keys
}

// Find is lookup without inserting: the id of every entry k < n that the
// table holds, -1 for the others. Hashes are left in t.hs.
func (t *Table) Find(ends []int64, rows []int32, cols []arrow.Array, n int) []int32 {
	for i, c := range t.Keys {
		c.prepare(cols[i], rows, n)
	}
	hs := column.Grow(t.hs, n)
	t.hs = hs
	for k := range hs {
		hs[k] = htSeed(ends[k])
	}
	for _, c := range t.Keys {
		c.hashInto(hs)
	}
	for k, h := range hs {
		hs[k] = htFinal(h)
		if t.TestMask != 0 {
			hs[k] &= t.TestMask
		}
	}
	ids := column.Grow(t.ids, n)
	t.ids = ids
	for k, h := range hs {
		ids[k] = -1
		tag := uint64(uint32(h))
		for i := h >> t.shift; ; i = (i + 1) & t.mask {
			s := t.slots[i]
			if s == 0 {
				break
			}
			if s>>32 == tag {
				if id := int32(uint32(s)) - 1; *t.ends.At(id) == ends[k] && t.equal(id, k) {
					ids[k] = id
					break
				}
			}
		}
	}
	return ids
}

// lookupFixed1 is lookup for the common case of one fixed-width key column
// with no NULLs in the batch or the table: hashing is one pass, and the
// probe compares the key itself, so there is no verify pass to make.
func (t *Table) lookupFixed1(ends []int64, fk *htFixedKey) []int32 {
	n := len(ends)
	cur := fk.cur[:n]
	hs := column.Grow(t.hs, n)
	t.hs = hs
	for k, e := range ends {
		hs[k] = htFinal((htSeed(e) ^ cur[k]) * htK1)
	}
	ids := column.Grow(t.ids, n)
	t.ids = ids
	t.NewIDs, t.NewK = t.NewIDs[:0], t.NewK[:0]

	slots, mask, shift := t.slots, t.mask, t.shift
	tends, kvals := t.ends, fk.vals
	for k, h := range hs {
		end, v := ends[k], cur[k]
		tag := uint64(uint32(h))
		i := h >> shift
		for {
			s := slots[i]
			if s == 0 {
				id := t.alloc(h, end)
				slots[i] = tag<<32 | uint64(uint32(id)+1)
				ids[k] = id
				t.NewIDs = append(t.NewIDs, id)
				t.NewK = append(t.NewK, int32(k))
				if t.N > t.growAt {
					t.rehash(len(t.slots) * 2)
					slots, mask, shift = t.slots, t.mask, t.shift
				}
				if int(id) >= kvals.Len() {
					fk.grow(t.Size())
				}
				tends, kvals = t.ends, fk.vals
				*fk.vals.W(id) = v
				*fk.valid.W(id) = true
				break
			}
			if s>>32 == tag {
				if id := int32(uint32(s)) - 1; *tends.At(id) == end && *kvals.At(id) == v {
					ids[k] = id
					break
				}
			}
			i = (i + 1) & mask
		}
	}
	return ids
}

// reprobe resolves entries whose fast-path candidate had a different key.
func (t *Table) reprobe(ends []int64, ids []int32, bad []int32) {
	if len(t.Keys) > 1 {
		slices.Sort(bad)
		bad = slices.Compact(bad)
	}
	for _, k32 := range bad {
		k := int(k32)
		h, end := t.hs[k], ends[k]
		tag := uint64(uint32(h))
		i := h >> t.shift
		for {
			s := t.slots[i]
			if s == 0 {
				id := t.alloc(h, end)
				t.slots[i] = tag<<32 | uint64(uint32(id)+1)
				for _, c := range t.Keys {
					c.grow(t.Size())
					c.store(id, k)
				}
				ids[k] = id
				t.NewIDs = append(t.NewIDs, id)
				t.NewK = append(t.NewK, int32(k))
				if t.N > t.growAt {
					t.rehash(len(t.slots) * 2)
				}
				break
			}
			if s>>32 == tag {
				if id := int32(uint32(s)) - 1; *t.ends.At(id) == end && t.equal(id, k) {
					ids[k] = id
					break
				}
			}
			i = (i + 1) & t.mask
		}
	}
}

func (t *Table) equal(id int32, k int) bool {
	for _, c := range t.Keys {
		if !c.equal(id, k) {
			return false
		}
	}
	return true
}

// Remove deletes ids (all live) and puts them on the free list. Removing a
// large share of the table rebuilds it instead of shifting slot by slot,
// shrinking it when it has become mostly empty.
func (t *Table) Remove(ids []int32) {
	if len(ids) == 0 {
		return
	}
	for _, id := range ids {
		*t.live.At(id) = false
	}
	t.N -= len(ids)
	if len(ids) >= t.N {
		c := len(t.slots)
		for c > htMinCap && t.N*8 < c {
			c /= 2
		}
		t.rehash(c)
	} else {
		for _, id := range ids {
			t.unplace(id)
		}
	}
	t.free.Grow(t.nfree + len(ids))
	for _, id := range ids {
		*t.free.At(int32(t.nfree)) = id
		t.nfree++
	}
	for _, c := range t.Keys {
		c.release(ids, t)
	}
}

// unplace clears id's slot and shifts later entries of its probe run back.
func (t *Table) unplace(id int32) {
	want := uint32(id) + 1
	mask := t.mask
	i := uint64(*t.hashes.At(id)) << 32 >> t.shift
	for uint32(t.slots[i]) != want {
		i = (i + 1) & mask
	}
	j := i
	for {
		j = (j + 1) & mask
		s := t.slots[j]
		if s == 0 {
			t.slots[i] = 0
			return
		}
		home := uint64(*t.hashes.At(int32(uint32(s) - 1))) << 32 >> t.shift
		// The entry at j may fill the hole at i if i lies cyclically
		// between its home and j.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
}
