package vector

import (
	"math/bits"
	"os"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Pool is an Arrow allocator that recycles large buffers. A source's
// decoder allocates a fresh set of column buffers for every batch; when
// the batch's last holder releases it (Arrow reference counting, see
// Batch), its buffers come back here and the next batch reuses them, warm,
// instead of the garbage collector freeing them and the runtime zeroing
// fresh pages (a third of the CPU of a pass-through job; see
// docs/performance.md).
//
// A recycled buffer is zeroed before reuse, as Go's make (and so arrow's
// GoAllocator) gives it. Buffers below 32 KiB come from the wrapped
// allocator; pool buffers that do not fit the pool's byte budget are left
// to the garbage collector.
//
// Reuse makes the ownership rule of Batch load-bearing: code that kept a
// Go slice or string aliasing a released buffer would see it overwritten.
// With CLINK_DEBUG_POOL=poison in the environment every pool recycles
// buffers of any size and fills them with 0xAB when they are freed, so
// the tests catch such code (see Makefile).
type Pool struct {
	mem    memory.Allocator
	mu     sync.Mutex
	free   [poolClasses][][]byte
	owned  map[*byte]bool // the pool's buffers, free or in use
	bytes  int            // held in free
	budget int
	poison bool
	min    int
}

const (
	poolMinShift = 15 // 32 KiB: the Go runtime allocates these page-aligned
	poolClasses  = 10 // powers of two up to 16 MiB
)

// poolDebug is CLINK_DEBUG_POOL=poison.
var poolDebug = os.Getenv("CLINK_DEBUG_POOL") == "poison"

// NewPool returns a pool over mem that holds at most budget bytes of free
// buffers.
func NewPool(mem memory.Allocator, budget int) *Pool {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	p := &Pool{mem: mem, budget: budget, min: 1 << poolMinShift, owned: map[*byte]bool{}}
	if poolDebug {
		p.poison, p.min = true, 1
	}
	return p
}

// poolSize is the capacity a buffer of size bytes gets and its class:
// the next power of two from 32 KiB, or class -1 beyond the largest.
// (Finer classes, four per octave, kept a joined stream's retained
// batches 25 % smaller but reused fewer buffers: q0 took 7 % more CPU.)
func poolSize(size int) (capacity, class int) {
	e := max(bits.Len(uint(size-1)), poolMinShift)
	class = e - poolMinShift
	if class >= poolClasses {
		return size, -1
	}
	return 1 << e, class
}

// Allocate returns size zeroed bytes.
func (p *Pool) Allocate(size int) []byte {
	if size < p.min {
		return p.mem.Allocate(size)
	}
	c, k := poolSize(size)
	if k < 0 {
		return make([]byte, size)
	}
	p.mu.Lock()
	if l := p.free[k]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.free[k] = l[:len(l)-1]
		p.bytes -= cap(b)
		p.mu.Unlock()
		b = b[:cap(b)]
		clear(b)
		return b[:size]
	}
	b := make([]byte, size, c)
	if len(p.owned) < 1<<16 { // a bound, should holders never release
		p.owned[unsafe.SliceData(b)] = true
	}
	p.mu.Unlock()
	return b
}

// Reallocate grows or shrinks b to size bytes, keeping its contents; new
// bytes are zero.
func (p *Pool) Reallocate(size int, b []byte) []byte {
	if !p.owns(b) {
		return p.mem.Reallocate(size, b)
	}
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *Pool) owns(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.owned[unsafe.SliceData(b)]
}

// Free takes back a buffer nobody uses any more.
func (p *Pool) Free(b []byte) {
	if !p.owns(b) {
		p.mem.Free(b)
		return
	}
	c := cap(b)
	_, k := poolSize(c)
	if p.poison {
		b = b[:c]
		for i := range b {
			b[i] = 0xAB
		}
	}
	p.mu.Lock()
	if p.bytes+c <= p.budget {
		p.free[k] = append(p.free[k], b[:0])
		p.bytes += c
	} else {
		delete(p.owned, unsafe.SliceData(b))
	}
	p.mu.Unlock()
}
