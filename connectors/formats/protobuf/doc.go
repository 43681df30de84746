// Package protobuf reads and writes Protocol Buffers messages (one message
// per Kafka record value) for Clink's connectors, going straight between
// the wire format and Arrow columns (issue #18).
//
// # Schemas
//
// Compile (a .proto file; its imports are looked up beside it) and
// CompileSource (.proto text, as a schema registry hands it out) compile
// the schema at run time with protocompile and return the message's
// descriptor; errors name file:line:column, and an unknown message name
// lists the messages the file defines. The message name is Flink's
// 'protobuf.message-class-name', spelled as the .proto file's full name
// ("pkg.Msg" or, relative to the package, "Msg" or "Outer.Inner"; "" is
// the first message). For records framed by a Confluent schema registry,
// MessageAt picks the message their message indexes name.
//
// Columns are matched to fields by name: exactly, else case-insensitively
// (an ambiguous match is an error), as Flink's protobuf format matches
// them. A column that names no field is an error; fields no column names
// are skipped on the wire. CheckSchema reports the first column that
// cannot be read.
//
// # Type mapping
//
//	column        field types
//	BIGINT        int32 sint32 sfixed32 int64 sint64 sfixed64 uint32 fixed32 uint64 fixed64,
//	              google.protobuf.Int64Value Int32Value UInt64Value UInt32Value
//	INT           the same; values outside the column's range are rejected per record
//	SMALLINT      the same, range-checked
//	TINYINT       the same, range-checked
//	DATE          the same, range-checked: days since 1970-01-01
//	TIMESTAMP(3)  google.protobuf.Timestamp (nanos truncated to ms); or a 64-bit
//	              integer field holding epoch milliseconds
//	DOUBLE        double, float (widened exactly), DoubleValue, FloatValue
//	FLOAT         float, FloatValue
//	VARCHAR       string, StringValue; an enum, as the value's name, or as the
//	              number in decimal ("42") when the number has no name
//	BOOLEAN       bool, BoolValue
//	DECIMAL(p,s)  string (or StringValue) holding a decimal number, read exactly
//	              in JSON number syntax ("-12.345", "1e3"), digits beyond s
//	              rounded HALF_UP as the json format does; one needing more
//	              than p digits is rejected
//
// Refused at CheckSchema, naming the field: repeated and map fields (no
// ARRAY or MAP column type), other message types (no ROW type), bytes and
// BytesValue (no BYTES type), groups, and type pairs not listed above.
//
// # Presence, absent fields and defaults
//
// Options.ReadDefaultValues is Flink's 'protobuf.read-default-values'
// (default false). An absent field that has presence, that is a proto2
// field, a proto3 'optional' field, a oneof member, or a message
// (Timestamp, the wrappers), reads as NULL in a nullable column; with
// ReadDefaultValues, or in a NOT NULL column, it reads as its default:
// the declared [default = ...] of proto2, else the zero value (the first
// enum value; for Timestamp, 1970-01-01 00:00:00). A field without
// presence, a plain proto3 scalar, cannot be told absent from zero (a
// writer leaves zero values out), so it always reads as its zero value,
// as in Flink. An absent string field for a DECIMAL column ("" is no
// number) is NULL, or an error in a NOT NULL column. A present wrapper
// without its value field holds the zero value. Proto2 'required' is not
// enforced: a missing required field reads like an absent optional one.
// An enum number without a name reads as its decimal text also for a
// proto2 (closed) enum, where proto.Unmarshal would keep it as an unknown
// field.
//
// 'protobuf.ignore-parse-errors' is the connector's: Append returns a
// *RecordError for a bad record and appends nothing, so the connector can
// count and skip it. 'protobuf.write-null-string-literal' concerns nulls
// in arrays and maps, which no column has.
//
// # Decoding
//
// Append takes a bare serialized message: a connector strips any framing
// first (the Confluent schema registry's magic byte, schema id and message
// indexes: registry.ParseHeader and registry.ParseIndexes).
//
// Decoder parses the wire format with protowire, driven by the reader's
// descriptor: each field number is looked up in a table and its value
// written in place into the Arrow buffers of the batch being built, as
// the json format does. There is no message object per record, no
// reflection and no allocation per record (DESIGN §6); BenchmarkDecodeArrow
// compares it with proto.Unmarshal into a generated struct
// (BenchmarkUnmarshalGenerated, internal/benchpb).
//
// Because fields are read by number with the reader's descriptor, schema
// evolution works as protobuf intends: fields the reader does not know
// are skipped, fields the writer did not know are absent (see above). A
// scalar field that occurs more than once takes its last value, and
// occurrences of a message field (Timestamp, wrappers) merge, as
// proto.Unmarshal does; a oneof member clears the member seen before it.
//
// A record is rejected with a *RecordError when it is truncated, has a
// bad varint, an invalid field number or a mismatched end-group, when a
// field a column reads has a wire type other than its declared type's
// (proto.Unmarshal would keep it as an unknown field; for a table that
// is corrupt data), when a string is not valid UTF-8 (proto3 requires it;
// it is checked for proto2 too, since a VARCHAR must be), when a value is
// out of its column's range, or when a Timestamp's nanos lie outside
// [0, 999999999]. The rejected record leaves nothing behind and the
// decoder goes on with the next. With projection pushdown
// (Options.Needed) the fields of columns not needed are skipped without
// any of these checks.
//
// # Encoding
//
// Encoder writes rows as messages of the same mapping, for sinks, in
// field-number order: the bytes proto.Marshal writes for the same values
// (TestRoundTrip checks it), without a message object. NULL values are left out (a field without presence
// then reads back as its zero value, as in Flink), and so are zero values
// of fields without presence, as proto.Marshal does. TIMESTAMP(3) becomes a
// Timestamp message, or epoch ms for an integer field; DECIMAL its plain
// text ("-12.340"); an enum column's text is a value name or a number.
// NewEncoder refuses a column whose values a field cannot hold (BIGINT into
// a 32-bit field, any integer into an unsigned field, DOUBLE into float).
// A NULL for a proto2 'required' field is left out too, which makes a
// message that strict readers reject.
//
// MessageFor derives a proto3 message from a table's columns for a sink
// that must register a schema; its doc gives the mapping (TIMESTAMP(3) as
// google.protobuf.Timestamp, nullable columns as 'optional' fields).
package protobuf
