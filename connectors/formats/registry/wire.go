package registry

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/sr"
)

// The Confluent wire format: a record's key or value is
//
//	0x00 | schema id (4 bytes, big endian) | [Protobuf message indexes] | payload
//
// https://docs.confluent.io/platform/current/schema-registry/fundamentals/serdes-develop/index.html#wire-format

// MagicByte starts every record in the Confluent wire format.
const MagicByte byte = 0x00

// HeaderLen is the length of the magic byte and the schema id.
const HeaderLen = 5

// maxIndexes bounds the message-index count a record may claim, so a
// corrupt record cannot make a reader allocate without limit. Protobuf
// nesting is never this deep in practice.
const maxIndexes = 128

var (
	// ErrEmptyRecord is returned by ParseHeader for a nil or empty record
	// (often a tombstone, which the source may treat separately).
	ErrEmptyRecord = errors.New("schema registry wire format: empty record")
	// ErrShortRecord is returned by ParseHeader when fewer than 5 bytes are
	// present.
	ErrShortRecord = errors.New("schema registry wire format: record too short")
	// ErrBadMagic is wrapped by ParseHeader's error when the first byte is
	// not 0x00.
	ErrBadMagic = errors.New("schema registry wire format: wrong magic byte")
	// ErrBadIndexes is wrapped by ParseIndexes' errors.
	ErrBadIndexes = errors.New("schema registry wire format: bad protobuf message indexes")
)

// confluent is franz-go's encoder of the header; we use it for writing so
// that our bytes are the ones franz-go's own Serde produces.
var confluent sr.ConfluentHeader

// AppendHeader appends the magic byte and the big-endian schema id to dst.
func AppendHeader(dst []byte, id int) []byte {
	dst, _ = confluent.AppendEncode(dst, id, nil) // never fails
	return dst
}

// ParseHeader splits a record into its schema id and the bytes after the
// 5-byte header. It does not allocate; payload aliases b.
func ParseHeader(b []byte) (id int, payload []byte, err error) {
	switch {
	case len(b) == 0:
		return 0, nil, ErrEmptyRecord
	case b[0] != MagicByte:
		return 0, nil, fmt.Errorf("%w 0x%02x (want 0x00): the record was not written by a schema registry serializer", ErrBadMagic, b[0])
	case len(b) < HeaderLen:
		return 0, nil, fmt.Errorf("%w: %d bytes, the header needs %d (magic byte and 4-byte schema id)", ErrShortRecord, len(b), HeaderLen)
	}
	return int(binary.BigEndian.Uint32(b[1:HeaderLen])), b[HeaderLen:], nil
}

// AppendIndexes appends Protobuf message indexes: a zigzag varint count,
// then each index as a zigzag varint; [0] (the first message of the file,
// the usual case) is written as the single byte 0. Nil or empty idx is
// written as [0] too, as Confluent's serializers do.
func AppendIndexes(dst []byte, idx []int) []byte {
	if len(idx) == 0 || (len(idx) == 1 && idx[0] == 0) {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(idx)))
	for _, i := range idx {
		dst = binary.AppendVarint(dst, int64(i))
	}
	return dst
}

// firstMessage is what ParseIndexes returns for the common one-byte [0]
// encoding. It is shared: callers must not modify the returned slice.
var firstMessage = []int{0}

// ParseIndexes reads Protobuf message indexes from the bytes after the
// header. For the common [0] case it does not allocate and returns a
// shared slice that the caller must not modify; for other paths it
// allocates one slice (use AppendParseIndexes with a reused buffer to
// avoid that).
func ParseIndexes(b []byte) (idx []int, rest []byte, err error) {
	if len(b) > 0 && b[0] == 0 {
		return firstMessage, b[1:], nil
	}
	return AppendParseIndexes(nil, b)
}

// AppendParseIndexes is ParseIndexes appending to dst: with a dst of
// enough capacity it never allocates. The [0] case appends 0.
func AppendParseIndexes(dst []int, b []byte) (idx []int, rest []byte, err error) {
	n, w := binary.Varint(b)
	switch {
	case w == 0:
		return dst, b, fmt.Errorf("%w: record ends before the index count", ErrBadIndexes)
	case w < 0:
		return dst, b, fmt.Errorf("%w: index count overflows", ErrBadIndexes)
	case n == 0:
		return append(dst, 0), b[w:], nil
	case n < 0:
		return dst, b, fmt.Errorf("%w: negative index count %d", ErrBadIndexes, n)
	case n > maxIndexes:
		return dst, b, fmt.Errorf("%w: index count %d exceeds %d", ErrBadIndexes, n, maxIndexes)
	}
	b = b[w:]
	for i := int64(0); i < n; i++ {
		v, w := binary.Varint(b)
		if w <= 0 {
			return dst, b, fmt.Errorf("%w: index %d of %d is truncated or overflows", ErrBadIndexes, i+1, n)
		}
		if v < 0 {
			return dst, b, fmt.Errorf("%w: negative index %d at position %d", ErrBadIndexes, v, i+1)
		}
		dst = append(dst, int(v))
		b = b[w:]
	}
	return dst, b, nil
}
