//go:build unix

package cluster

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock(2) of path, waiting up to timeout. The
// kernel drops it when the process dies, so a killed holder leaves no
// stale lock.
func lockFile(path string, timeout time.Duration) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
