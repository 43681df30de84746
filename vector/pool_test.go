package vector

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPool: large buffers come back zeroed after a release, small ones and
// unknown ones go to the wrapped allocator, the budget bounds what is
// kept, and Arrow arrays built on the pool work.
func TestPool(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	p := NewPool(mem, 3<<16)
	if p.poison {
		t.Skip("CLINK_DEBUG_POOL is set")
	}
	small := p.Allocate(100)
	if mem.CurrentAlloc() == 0 {
		t.Fatal("a small buffer did not come from the wrapped allocator")
	}
	p.Free(small)

	a := p.Allocate(40000)
	if len(a) != 40000 || cap(a) != 40000 {
		t.Fatalf("len %d cap %d: buffers are allocated at their size", len(a), cap(a))
	}
	for i := range a {
		a[i] = 7
	}
	p.Free(a)
	big := p.Allocate(50000)
	if &big[0] == &a[0] {
		t.Fatal("a buffer too small was reused")
	}
	p.Free(big)
	b := p.Allocate(39000) // the newest large enough: big
	if &b[0] != &big[0] {
		t.Fatal("a freed buffer of the same class, large enough, was not reused")
	}
	for i, v := range b[:cap(b)] {
		if v != 0 {
			t.Fatalf("byte %d of a reused buffer is %d", i, v)
		}
	}
	b[38999] = 1
	b = p.Reallocate(39500, b)
	if b[38999] != 1 || b[39499] != 0 {
		t.Fatal("Reallocate within capacity lost or exposed bytes")
	}
	c := p.Reallocate(70000, b)
	if c[38999] != 1 || cap(c) != 70000 {
		t.Fatal("Reallocate beyond the capacity lost the contents")
	}
	p.Free(c)
	// Budget: 192 KiB: 50000 + 40000 + 70000 bytes are held; one more
	// buffer of 64 KiB does not fit.
	x := p.Allocate(1 << 17)
	p.Free(x)
	if p.bytes != 50000+40000+70000 {
		t.Fatalf("pool holds %d bytes", p.bytes)
	}

	bl := array.NewInt64Builder(p)
	for i := range 10000 {
		bl.Append(int64(i))
	}
	arr := bl.NewInt64Array()
	bl.Release()
	if arr.Value(9999) != 9999 {
		t.Fatal("array on the pool")
	}
	arr.Release()
}

// TestPoolPoison: in the debug mode a freed buffer is overwritten at once,
// so a reader that kept it sees garbage.
func TestPoolPoison(t *testing.T) {
	p := NewPool(nil, 1<<20)
	p.poison, p.min = true, 1
	b := p.Allocate(10)
	b[0] = 1
	p.Free(b)
	if b[0] != 0xAB {
		t.Fatalf("a freed buffer still reads %d", b[0])
	}
	if c := p.Allocate(10); &c[0] != &b[0] || c[0] != 0 {
		t.Fatal("the poisoned buffer was not reused zeroed")
	}
}

// TestPoolClasses: a class holds the capacities of one octave from 32 KiB.
func TestPoolClasses(t *testing.T) {
	for _, tc := range []struct{ c, k int }{{1, 0}, {1 << 15, 0}, {1<<16 - 1, 0}, {1 << 16, 1}, {3 << 20, 6}, {16<<20 - 1, 8}, {16 << 20, 9}, {32 << 20, -1}} {
		if k := poolClass(tc.c); k != tc.k {
			t.Errorf("class of %d: %d, want %d", tc.c, k, tc.k)
		}
	}
}
