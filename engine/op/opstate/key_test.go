package opstate

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRenderKeys: the readable key of the state format, as strings and as
// an array, for plain and escaped strings, invalid UTF-8, NULLs and
// numbers.
func TestRenderKeys(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sb := array.NewStringBuilder(mem)
	sb.AppendValues([]string{"sensor-000001", `a"b\c`, "tab\there", "é", "\xff", ""}, nil)
	sb.AppendNull()
	strs := sb.NewArray()
	sb.Release()
	defer strs.Release()
	ib := array.NewInt64Builder(mem)
	ib.AppendValues([]int64{1, -2, 3, 4, 5, 6, 7}, nil)
	ints := ib.NewArray()
	ib.Release()
	defer ints.Release()
	want := []string{`["sensor-000001",1]`, `["a\"b\\c",-2]`, `["tab\u0009here",3]`, `["é",4]`, `["` + "\uFFFD" + `",5]`, `["",6]`, `[null,7]`}
	cols := []arrow.Array{strs, ints}
	got := RenderKeys(cols, len(want))
	arr := RenderKeyArray(mem, cols, len(want))
	defer arr.Release()
	for i, w := range want {
		if got[i] != w || arr.Value(i) != w {
			t.Errorf("row %d: %q and %q, want %q", i, got[i], arr.Value(i), w)
		}
	}
}
