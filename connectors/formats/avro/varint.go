package avro

// readLong reads the zig-zag varint at b[i] and returns it and the index
// after it; that index is errTruncated or errVarint on failure.
func readLong(b []byte, i int) (int64, int) {
	if i < len(b) && b[i] < 0x80 {
		v := uint64(b[i])
		return int64(v>>1) ^ -int64(v&1), i + 1
	}
	return readLongSlow(b, i)
}

const (
	errTruncated = -1
	errVarint    = -2
)

func readLongSlow(b []byte, i int) (int64, int) {
	var u uint64
	for s := uint(0); ; s += 7 {
		if i >= len(b) {
			return 0, errTruncated
		}
		c := b[i]
		i++
		if s == 63 && c > 1 {
			return 0, errVarint
		}
		u |= uint64(c&0x7f) << s
		if c < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), i
}

// appendLong appends v as a zig-zag varint.
func appendLong(dst []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}
