//go:build !unix

package column

func mapChunk(int) []byte { return nil }

func unmapChunk([]byte) {}
