package avro

// readLong reads the zig-zag varint at b[i] and returns it and the index
// after it; that index is errTruncated or errVarint on failure. As Java's
// BinaryDecoder, it refuses more than 10 bytes but ignores the bits of the
// 10th beyond 64. Small enough to inline.
func readLong(b []byte, i int) (int64, int) {
	var u uint64
	for s := uint(0); s < 70; s += 7 {
		if uint(i) >= uint(len(b)) {
			return 0, errTruncated
		}
		c := b[i]
		i++
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), i
		}
	}
	return 0, errVarint
}

const (
	errTruncated = -1
	errVarint    = -2
)

// appendLong appends v as a zig-zag varint.
func appendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}
