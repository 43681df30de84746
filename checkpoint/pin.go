package checkpoint

import (
	"path/filepath"
	"sync"
)

// Pins keep checkpoints that are being read (a Flight SQL query over a
// running job's state) from being removed by Retain in this process until
// the read ends. They are in-process only: a reader in another process
// is not protected.
var pins = struct {
	sync.Mutex
	n map[pinKey]int
}{n: map[pinKey]int{}}

type pinKey struct {
	dir string
	id  uint64
}

func pinKeyOf(dir string, id uint64) pinKey {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return pinKey{filepath.Clean(dir), id}
}

// Pin keeps checkpoint id of the store in dir from Retain until the
// returned unpin is called (once; later calls do nothing). Pins count: a
// checkpoint pinned twice stays until both are released.
func Pin(dir string, id uint64) (unpin func()) {
	k := pinKeyOf(dir, id)
	pins.Lock()
	pins.n[k]++
	pins.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			pins.Lock()
			defer pins.Unlock()
			if pins.n[k]--; pins.n[k] <= 0 {
				delete(pins.n, k)
			}
		})
	}
}

// Pinned reports whether checkpoint id of the store in dir is pinned.
func Pinned(dir string, id uint64) bool {
	k := pinKeyOf(dir, id)
	pins.Lock()
	defer pins.Unlock()
	return pins.n[k] > 0
}

// pinned reports whether checkpoint id of this store is pinned.
func (s *Store) pinned(id uint64) bool { return Pinned(s.dir, id) }
