package avro

import "fmt"

// RecordError reports why one record could not be decoded. The decoder has
// appended nothing for that record. Connectors wrap it with the record's
// position, e.g. fmt.Errorf("kafka source %s/%d offset %d: %w", ...).
type RecordError struct {
	// Field is the table column whose value was rejected, or the writer
	// schema's field name for a field the table does not have; empty for
	// errors about the record as a whole (trailing bytes).
	Field string
	// Offset is the byte offset in the payload where the problem was found.
	Offset int
	// Reason says what was wrong, without the field.
	Reason string
}

func (e *RecordError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("avro record: %s (at byte %d)", e.Reason, e.Offset)
	}
	return fmt.Sprintf("avro field %q: %s (at byte %d)", e.Field, e.Reason, e.Offset)
}
