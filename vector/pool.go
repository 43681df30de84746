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
	poolClasses  = 10 // octaves up to 16 MiB
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

// poolClass is the class of a buffer of capacity c: floor(log2(c)) from
// 32 KiB, or -1 beyond the largest. Buffers are allocated at their exact
// size (a batch that an operator retains, a join's or a Top-N's, holds no
// slack; rounding sizes up to powers of two made a Top-N's peak RSS 35 %
// larger and reused no more), so a class holds capacities from 2^k to
// 2^(k+1).
func poolClass(c int) int {
	k := bits.Len(uint(c)) - 1 - poolMinShift
	if k >= poolClasses {
		return -1
	}
	return max(k, 0)
}

// Allocate returns size zeroed bytes.
func (p *Pool) Allocate(size int) []byte {
	if size < p.min {
		return p.mem.Allocate(size)
	}
	k := poolClass(size)
	if k < 0 {
		return make([]byte, size)
	}
	p.mu.Lock()
	// A free buffer of the size's class that is large enough (the newest
	// first), else any of the next class.
	for j := k; j <= k+1 && j < poolClasses; j++ {
		l := p.free[j]
		for i := len(l) - 1; i >= 0; i-- {
			b := l[i]
			if cap(b) < size {
				continue
			}
			copy(l[i:], l[i+1:])
			l[len(l)-1] = nil
			p.free[j] = l[:len(l)-1]
			p.bytes -= cap(b)
			p.mu.Unlock()
			b = b[:cap(b)]
			clear(b)
			return b[:size]
		}
	}
	b := make([]byte, size)
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
	k := poolClass(c)
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
