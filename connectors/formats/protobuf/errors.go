package protobuf

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// RecordError reports why one record could not be decoded (the decoder
// has appended nothing for it) or one row could not be encoded.
// Connectors wrap it with the record's position, e.g.
// fmt.Errorf("topic %s partition %d offset %d: %w", ...).
type RecordError struct {
	// Offset is the byte offset in the record where the problem was found.
	Offset int
	// Field is the message field whose value was rejected; empty for
	// errors of the wire format itself.
	Field string
	// Reason says what was wrong, without the field or offset.
	Reason string
}

func (e *RecordError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("field %q: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("invalid protobuf at byte %d: %s", e.Offset, e.Reason)
}

// wireError reports a wire-format error at b[i]; n is protowire's negative
// error code.
func wireError(i, n int) *RecordError {
	return &RecordError{Offset: i, Reason: wireReason(n)}
}

func wireReason(n int) string {
	if n == -1 { // protowire's errCodeTruncated
		return "truncated"
	}
	if n == -3 { // errCodeOverflow
		return "bad varint (more than 10 bytes)"
	}
	return protowire.ParseError(n).Error()
}

func wireTypeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	case protowire.StartGroupType:
		return "start-group"
	case protowire.EndGroupType:
		return "end-group"
	}
	return fmt.Sprintf("reserved (%d)", t)
}
