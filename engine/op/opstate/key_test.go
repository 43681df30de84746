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

// TestRenderKeyArrayOneString: one string key column renders as RenderKeys
// does, plain (the direct path), escaped, sliced and with n short of the
// array.
func TestRenderKeyArrayOneString(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, vals := range [][]string{
		{"sensor-000001", "", "x", "sensor-999999"},
		{"plain", `a"b\c`, "é"},
	} {
		sb := array.NewStringBuilder(mem)
		sb.AppendValues(vals, nil)
		full := sb.NewArray()
		sb.Release()
		for _, a := range []arrow.Array{full, array.NewSlice(full, 1, int64(len(vals)))} {
			for _, n := range []int{a.Len(), a.Len() - 1} {
				want := RenderKeys([]arrow.Array{a}, n)
				arr := RenderKeyArray(mem, []arrow.Array{a}, n)
				if arr.Len() != n {
					t.Fatalf("%q: %d rows, want %d", vals, arr.Len(), n)
				}
				for i, w := range want {
					if arr.Value(i) != w {
						t.Errorf("%q row %d: %q, want %q", vals, i, arr.Value(i), w)
					}
				}
				arr.Release()
			}
			if a != full {
				a.Release()
			}
		}
		full.Release()
	}
}

// TestPlainJSON: the eight-bytes-at-a-time test against the byte loop,
// for every byte value at every position of a 17-byte string.
func TestPlainJSON(t *testing.T) {
	for pos := range 17 {
		for c := range 256 {
			b := []byte("abcdefghijklmnopq")
			b[pos] = byte(c)
			want := !(c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
			if got := plainJSON(b); got != want {
				t.Fatalf("byte %#x at %d: %v, want %v", c, pos, got, want)
			}
		}
	}
}
