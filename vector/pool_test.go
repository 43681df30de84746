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
	if len(a) != 40000 || cap(a) != 1<<16 {
		t.Fatalf("len %d cap %d", len(a), cap(a))
	}
	for i := range a {
		a[i] = 7
	}
	p.Free(a)
	b := p.Allocate(50000)
	if &b[0] != &a[0] {
		t.Fatal("a freed buffer of the same class was not reused")
	}
	for i, v := range b[:cap(b)] {
		if v != 0 {
			t.Fatalf("byte %d of a reused buffer is %d", i, v)
		}
	}
	b[40499] = 1
	b = p.Reallocate(40900, b)
	if b[40499] != 1 || b[40899] != 0 {
		t.Fatal("Reallocate within capacity lost or exposed bytes")
	}
	c := p.Reallocate(70000, b)
	if c[40499] != 1 || cap(c) != 1<<17 {
		t.Fatal("Reallocate to a larger class lost the contents")
	}
	p.Free(c)
	// Budget: 192 KiB; the 128 KiB buffer and one of 64 KiB are held, a
	// second of 64 KiB does not fit.
	x, y := p.Allocate(1<<16), p.Allocate(1<<16)
	p.Free(x)
	p.Free(y)
	if p.bytes != 1<<17+1<<16 {
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
	if c := p.Allocate(20); &c[0] != &b[0] || c[0] != 0 {
		t.Fatal("the poisoned buffer was not reused zeroed")
	}
}

// TestPoolSizes: classes waste less than half and a capacity maps back
// to its own class.
func TestPoolSizes(t *testing.T) {
	prev := 0
	for size := 1; size <= 16<<20; size += 1 + size/37 {
		c, k := poolSize(size)
		if k < 0 || c < size || size > 1<<15 && c >= 2*size || k < prev {
			t.Fatalf("size %d: capacity %d class %d (previous class %d)", size, c, k, prev)
		}
		if c2, k2 := poolSize(c); c2 != c || k2 != k {
			t.Fatalf("capacity %d maps to %d/%d, not %d/%d", c, c2, k2, c, k)
		}
		prev = k
	}
	if _, k := poolSize(17 << 20); k != -1 {
		t.Fatal("beyond the largest class")
	}
}
