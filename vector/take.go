package vector

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take gathers rows idx of arr into a new array with typed loops.
func Take(mem memory.Allocator, arr arrow.Array, idx []int32) arrow.Array {
	switch a := arr.(type) {
	case *array.Int64:
		return takeFixed(array.NewInt64Builder(mem), a, idx)
	case *array.Int32:
		return takeFixed(array.NewInt32Builder(mem), a, idx)
	case *array.Int16:
		return takeFixed(array.NewInt16Builder(mem), a, idx)
	case *array.Int8:
		return takeFixed(array.NewInt8Builder(mem), a, idx)
	case *array.Float64:
		return takeFixed(array.NewFloat64Builder(mem), a, idx)
	case *array.Float32:
		return takeFixed(array.NewFloat32Builder(mem), a, idx)
	case *array.Timestamp:
		return takeFixed(array.NewTimestampBuilder(mem, a.DataType().(*arrow.TimestampType)), a, idx)
	case *array.Boolean:
		return takeFixed(array.NewBooleanBuilder(mem), a, idx)
	case *array.String:
		bld := array.NewStringBuilder(mem)
		defer bld.Release()
		bld.Reserve(len(idx))
		for _, i := range idx {
			if a.IsNull(int(i)) {
				bld.AppendNull()
			} else {
				bld.Append(a.Value(int(i)))
			}
		}
		return bld.NewArray()
	case *array.Decimal128:
		return takeFixed(array.NewDecimal128Builder(mem, a.DataType().(*arrow.Decimal128Type)), a, idx)
	case *array.Null:
		return array.NewNull(len(idx))
	}
	return takeSlices(mem, arr, idx)
}

// takeSlices is the generic path for the types without a typed loop
// (lists, dates): it concatenates one-row slices.
func takeSlices(mem memory.Allocator, arr arrow.Array, idx []int32) arrow.Array {
	if len(idx) == 0 {
		return array.MakeArrayOfNull(mem, arr.DataType(), 0)
	}
	parts := make([]arrow.Array, len(idx))
	for j, i := range idx {
		parts[j] = array.NewSlice(arr, int64(i), int64(i)+1)
	}
	out, err := array.Concatenate(parts, mem)
	for _, p := range parts {
		p.Release()
	}
	if err != nil {
		panic(fmt.Sprintf("vector.Take: %s: %v", arr.DataType(), err))
	}
	return out
}

type valuer[T any] interface {
	IsNull(int) bool
	Value(int) T
}

type appender[T any] interface {
	array.Builder
	Append(T)
}

func takeFixed[T any, A valuer[T], B appender[T]](bld B, a A, idx []int32) arrow.Array {
	defer bld.Release()
	bld.Reserve(len(idx))
	for _, i := range idx {
		if a.IsNull(int(i)) {
			bld.AppendNull()
		} else {
			bld.Append(a.Value(int(i)))
		}
	}
	return bld.NewArray()
}
