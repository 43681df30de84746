package agg

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/kernels/column"
)

// DistinctState is COUNT(DISTINCT x): a set of the values seen per group,
// keyed by the value's text (one map insert per row: distinct counting
// needs the values, as Flink's MapState does).
type DistinctState struct {
	sets column.Chunked[map[string]struct{}]
}

func (s *DistinctState) Enable(f Func) error {
	if f != CountDistinct {
		return fmt.Errorf("not a distinct count")
	}
	return nil
}

func (s *DistinctState) OutType(Func) arrow.DataType { return arrow.PrimitiveTypes.Int64 }

func (s *DistinctState) Grow(n int) {
	s.sets.Grow(n)
}

func (s *DistinctState) Update(gids []int32, arr arrow.Array, rows []int32) {
	for k, g := range gids {
		r := k
		if rows != nil {
			r = int(rows[k])
		}
		if arr.IsNull(r) {
			continue
		}
		set := *s.sets.At(g)
		if set == nil {
			set = map[string]struct{}{}
			*s.sets.At(g) = set
		}
		addDistinct(set, arr, r)
	}
}

// distinctKey is a value's identity for COUNT(DISTINCT): strings by their
// bytes, other types by their text. A string key may alias the batch's
// buffer: addDistinct copies it only when it is new.
func distinctKey(arr arrow.Array, i int) string {
	if s, ok := arr.(*array.String); ok {
		return s.Value(i)
	}
	return arr.ValueStr(i)
}

// addDistinct adds row i's value to set and reports whether it was new.
// An integer's text is formatted on the stack: only a new value allocates.
func addDistinct(set map[string]struct{}, arr arrow.Array, i int) bool {
	var buf [24]byte
	var kb []byte
	switch a := arr.(type) {
	case *array.Int64:
		kb = strconv.AppendInt(buf[:0], a.Value(i), 10)
	case *array.Int32:
		kb = strconv.AppendInt(buf[:0], int64(a.Value(i)), 10)
	default:
		k := distinctKey(arr, i)
		if _, ok := set[k]; ok {
			return false
		}
		set[strings.Clone(k)] = struct{}{}
		return true
	}
	if _, ok := set[string(kb)]; ok {
		return false
	}
	set[string(kb)] = struct{}{}
	return true
}

func (s *DistinctState) Merge(dst, src int32) {
	if *s.sets.At(src) == nil {
		return
	}
	if *s.sets.At(dst) == nil {
		*s.sets.At(dst) = map[string]struct{}{}
	}
	for v := range *s.sets.At(src) {
		(*s.sets.At(dst))[v] = struct{}{}
	}
}

func (s *DistinctState) Reset(gids []int32) {
	for _, g := range gids {
		if int(g) < s.sets.Len() {
			*s.sets.At(g) = nil
		}
	}
}

func (s *DistinctState) Build(mem memory.Allocator, _ Func, gids []int32) arrow.Array {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(len(gids))
	for _, g := range gids {
		b.UnsafeAppend(int64(len(*s.sets.At(g))))
	}
	return b.NewArray()
}
