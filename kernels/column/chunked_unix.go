//go:build unix

package column

import "syscall"

// mapChunk maps n bytes of zeroed memory outside the Go heap; nil if the
// system refuses (the caller then uses the heap).
func mapChunk(n int) []byte {
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return m
}

func unmapChunk(m []byte) { _ = syscall.Munmap(m) }
