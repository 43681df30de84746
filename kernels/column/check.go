package column

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ReadInt64 returns the values of a state column that must be BIGINT.
func ReadInt64(a arrow.Array) ([]int64, error) {
	if a == nil || a.DataType().ID() != arrow.INT64 {
		return nil, fmt.Errorf("state column is %v, want int64", typeOf(a))
	}
	return a.(*array.Int64).Int64Values(), nil
}

// CheckType fails unless the state column a is there and has type dt.
func CheckType(a arrow.Array, dt arrow.DataType) error {
	if a == nil || !arrow.TypeEqual(a.DataType(), dt) {
		return fmt.Errorf("state column is %v, want %s", typeOf(a), dt)
	}
	return nil
}

func typeOf(a arrow.Array) any {
	if a == nil {
		return "missing"
	}
	return a.DataType()
}
