package rowstore

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Store is one input's retained rows (a Top-N's kept rows).
// A stored row is an index into RowB/RowR (its batch and row there), with
// its time (TS), its number of join partners (Matches) and whether it was
// dropped (Dead). The operator that owns the store reads and sets these
// directly; the store keeps them consistent when it adds, kills and
// compacts rows.
type Store struct {
	Batches []arrow.RecordBatch
	liveIn  []int // live rows per batch
	RowB    []int32
	RowR    []int32
	TS      []int64
	Matches []int32
	Dead    []bool
	// Each key's stored rows, in store order, are a list: Head and Tail
	// by key id, Next by row (-1 ends), KeyOf by row (-1: none). Plain
	// int32 arrays, so the garbage collector has nothing to scan.
	Head, Tail  []int32
	Next, KeyOf []int32
	NDead       int
}

// TimeAt is value i of a time column (BIGINT or TIMESTAMP(3)) as epoch ms.
func TimeAt(a arrow.Array, i int) int64 {
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i)
	case *array.Timestamp:
		return int64(c.Value(i))
	}
	panic(fmt.Sprintf("join time column of type %s", a.DataType()))
}

// Add retains row r of b and returns its index.
func (s *Store) Add(b *vector.Batch, r int32, key int32, timeCol int) int32 {
	if len(s.Batches) == 0 || s.Batches[len(s.Batches)-1] != b.Rec {
		b.Rec.Retain()
		s.Batches = append(s.Batches, b.Rec)
		s.liveIn = append(s.liveIn, 0)
	}
	bi := int32(len(s.Batches) - 1)
	s.liveIn[bi]++
	idx := int32(len(s.RowB))
	s.RowB = append(s.RowB, bi)
	s.RowR = append(s.RowR, r)
	s.Matches = append(s.Matches, 0)
	s.Dead = append(s.Dead, false)
	var ts int64
	if timeCol >= 0 {
		ts = TimeAt(b.Column(timeCol), int(r))
	}
	s.TS = append(s.TS, ts)
	s.Next = append(s.Next, -1)
	s.KeyOf = append(s.KeyOf, key)
	if key >= 0 {
		s.Link(idx, key)
	}
	return idx
}

// Link appends stored row idx to its key's list.
func (s *Store) Link(idx, key int32) {
	if t := s.Tail[key]; t >= 0 {
		s.Next[t] = idx
	} else {
		s.Head[key] = idx
	}
	s.Tail[key] = idx
}

// Kill marks a stored row dead and releases its batch when none of its
// rows is alive.
func (s *Store) Kill(idx int32) {
	if s.Dead[idx] {
		return
	}
	s.Dead[idx] = true
	s.NDead++
	bi := s.RowB[idx]
	s.liveIn[bi]--
	if s.liveIn[bi] == 0 && s.Batches[bi] != nil {
		s.Batches[bi].Release()
		s.Batches[bi] = nil
	}
}

// Compact rebuilds the store without its dead rows once they dominate, so
// a long-running join's memory follows its live state. It returns the map
// from old to new row indices (-1 = dropped), or nil when nothing moved;
// key lists are remapped here, other holders of indices remap themselves.
func (s *Store) Compact() []int32 {
	if s.NDead < 4096 || s.NDead*2 < len(s.RowB) {
		return nil
	}
	remap := make([]int32, len(s.RowB))
	n := int32(0)
	for i := range s.RowB {
		if s.Dead[i] {
			remap[i] = -1
			continue
		}
		remap[i] = n
		s.RowB[n], s.RowR[n], s.TS[n], s.Matches[n], s.Dead[n], s.KeyOf[n] = s.RowB[i], s.RowR[i], s.TS[i], s.Matches[i], false, s.KeyOf[i]
		n++
	}
	s.RowB, s.RowR, s.TS, s.Matches, s.Dead, s.KeyOf, s.Next = s.RowB[:n], s.RowR[:n], s.TS[:n], s.Matches[:n], s.Dead[:n], s.KeyOf[:n], s.Next[:n]
	s.NDead = 0
	// Relink the key lists (store order is kept).
	for k := range s.Head {
		s.Head[k], s.Tail[k] = -1, -1
	}
	for i, k := range s.KeyOf {
		s.Next[i] = -1
		if k >= 0 {
			s.Link(int32(i), k)
		}
	}
	// Drop released batches from the front of the batch list.
	drop := 0
	for drop < len(s.Batches) && s.Batches[drop] == nil {
		drop++
	}
	if drop > 0 {
		s.Batches = append(s.Batches[:0], s.Batches[drop:]...)
		s.liveIn = append(s.liveIn[:0], s.liveIn[drop:]...)
		for i := range s.RowB {
			s.RowB[i] -= int32(drop)
		}
	}
	return remap
}

// Gather builds column c from stored rows refs (-1 = NULL).
func (s *Store) Gather(mem memory.Allocator, t arrow.DataType, c int, refs []int32) (arrow.Array, error) {
	bld := array.NewBuilder(mem, t)
	defer bld.Release()
	bld.Reserve(len(refs))
	switch t.ID() {
	case arrow.INT8:
		joinGatherFixed[int8](s, bld, c, refs)
	case arrow.INT16:
		joinGatherFixed[int16](s, bld, c, refs)
	case arrow.INT32:
		joinGatherFixed[int32](s, bld, c, refs)
	case arrow.INT64:
		joinGatherFixed[int64](s, bld, c, refs)
	case arrow.FLOAT32:
		joinGatherFixed[float32](s, bld, c, refs)
	case arrow.FLOAT64:
		joinGatherFixed[float64](s, bld, c, refs)
	case arrow.TIMESTAMP:
		joinGatherFixed[arrow.Timestamp](s, bld, c, refs)
	case arrow.STRING:
		joinGather[string](s, bld, c, refs)
	case arrow.BOOL:
		joinGather[bool](s, bld, c, refs)
	default:
		if t.ID() == arrow.DECIMAL128 {
			joinGatherAny(s, bld, c, refs)
			break
		}
		return nil, fmt.Errorf("join: columns of type %s are not supported", t)
	}
	return bld.NewArray(), nil
}

// joinGatherFixed gathers a fixed-width column: raw values are read from
// each batch's buffer and appended in one bulk call.
func joinGatherFixed[T arrow.FixedWidthType](s *Store, bld array.Builder, c int, refs []int32) {
	vals := make([]T, len(refs))
	var valid []bool
	// Raw value slices per batch, fetched once: a probe's partners span many
	// batches.
	raws := make([][]T, len(s.Batches))
	arrs := make([]arrow.Array, len(s.Batches))
	markNull := func(k int) {
		if valid == nil {
			valid = make([]bool, len(refs))
			for i := 0; i < k; i++ {
				valid[i] = true
			}
		}
	}
	for k, ref := range refs {
		if ref < 0 {
			markNull(k)
			continue
		}
		bi := s.RowB[ref]
		raw := raws[bi]
		if raw == nil {
			arrs[bi] = s.Batches[bi].Column(c)
			raw = arrow.GetValues[T](arrs[bi].Data(), 1)
			raws[bi] = raw
		}
		r := s.RowR[ref]
		if a := arrs[bi]; a.NullN() > 0 && a.IsNull(int(r)) {
			markNull(k)
			continue
		}
		vals[k] = raw[r]
		if valid != nil {
			valid[k] = true
		}
	}
	bld.(interface{ AppendValues([]T, []bool) }).AppendValues(vals, valid)
}

func joinGather[T any](s *Store, bld array.Builder, c int, refs []int32) {
	app := bld.(interface{ Append(T) })
	var cur int32 = -1
	var arr interface {
		Value(int) T
		IsNull(int) bool
	}
	for _, ref := range refs {
		if ref < 0 {
			bld.AppendNull()
			continue
		}
		if bi := s.RowB[ref]; bi != cur {
			cur = bi
			arr = s.Batches[bi].Column(c).(interface {
				Value(int) T
				IsNull(int) bool
			})
		}
		r := int(s.RowR[ref])
		if arr.IsNull(r) {
			bld.AppendNull()
		} else {
			app.Append(arr.Value(r))
		}
	}
}

func joinGatherAny(s *Store, bld array.Builder, c int, refs []int32) {
	for _, ref := range refs {
		if ref < 0 {
			bld.AppendNull()
			continue
		}
		arr := s.Batches[s.RowB[ref]].Column(c)
		r := int(s.RowR[ref])
		if arr.IsNull(r) {
			bld.AppendNull()
			continue
		}
		if err := bld.AppendValueFromString(arr.ValueStr(r)); err != nil {
			bld.AppendNull()
		}
	}
}
