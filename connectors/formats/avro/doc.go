// Package avro reads and writes Avro binary records for Clink's
// connectors (issue #18, Avro through a Schema Registry), going straight
// between bytes and Arrow columns. A record here is one Avro datum, the
// value of a Kafka record without the Schema Registry's 5-byte prefix
// (magic byte and schema id), which the connector strips to pick the
// writer schema; AppendRow likewise writes the bare datum.
//
// # Type mapping
//
// SchemaFor derives from a table the Avro schema Flink's 'avro' format
// derives (AvroSchemaConverter.convertToSchema, legacy timestamp mapping):
// a record named "record" in namespace "org.apache.flink.avro.generated"
// unless named otherwise, one field per column, in order:
//
//	BIGINT          long
//	INT             int
//	SMALLINT        int (range-checked on read)
//	TINYINT         int (range-checked on read)
//	DOUBLE          double
//	FLOAT           float
//	VARCHAR         string
//	BOOLEAN         boolean
//	TIMESTAMP(3)    long, logicalType timestamp-millis (Arrow timestamp[ms])
//	TIMESTAMP(6)    long, logicalType timestamp-micros (Arrow timestamp[us])
//	DATE            int, logicalType date
//	DECIMAL(p,s)    bytes, logicalType decimal, precision p, scale s
//
// A nullable column's type is the union ["null", T] with default null; a
// NOT NULL column's field is T and has no default. TIMESTAMP_LTZ(3) is the
// same Arrow type as TIMESTAMP(3) here and maps the same way. Column names
// must be valid Avro names ([A-Za-z_][A-Za-z0-9_]*): CheckSchema refuses
// others, and every type not listed above (unsigned integers, timestamps
// in s or ns, lists, structs, maps, binary), naming the column.
//
// # Reading
//
// Decoder.Append reads records written with the table's own schema;
// Decoder.Writer compiles a writer schema (from the registry) into a
// program, resolved against the table as Avro's schema resolution does
// with SchemaFor's schema as the reader schema, for AppendWriter:
//
//   - Writer fields are matched to columns by name (case-sensitively, as
//     Avro names are), else by one of the writer field's aliases. Record
//     names are not compared: the table has no name of its own.
//   - A writer field the table lacks is skipped, whatever its type:
//     nested records (also recursive ones), arrays, maps, unions, fixed.
//   - A column the writer lacks takes its default: NULL for a nullable
//     column; a NOT NULL column has none, and Writer fails.
//   - Promotions: int → long, float, double; long → float, double; float →
//     double; bytes → string (VARCHAR: both must be UTF-8, which is
//     checked); an enum into VARCHAR reads as its symbol.
//   - Beyond Avro's rules, as Flink's converters allow: an int or long into
//     TINYINT/SMALLINT/INT is accepted and range-checked per record;
//     timestamp-micros into TIMESTAMP(3) is floored to ms and
//     timestamp-millis into TIMESTAMP(6) scaled up (overflow checked); a
//     plain long into a TIMESTAMP is epoch milliseconds (Clink's event
//     time, DESIGN §3); local-timestamp-* read as timestamp-*; a decimal
//     (bytes or fixed) of a smaller scale is rescaled, and its precision
//     is checked per value, not per schema.
//   - Unions in the writer schema are resolved per record by branch: each
//     branch is compiled against the column, a null branch reads as NULL
//     (an error for a NOT NULL column, when a record takes it); ["null",
//     T] and [T, "null"] are alike.
//
// A logical type is read only into the column type it stands for: date
// only into DATE, decimal only into DECIMAL (a decimal's bytes are not a
// VARCHAR), timestamp-* into TIMESTAMP or, as the raw long, BIGINT; and a
// DATE, DECIMAL or TIMESTAMP column takes nothing else (but a plain long
// for TIMESTAMP, above). hamba/avro's checker, which compares only the
// underlying types, would accept these; TestResolutionAgreesWithHamba
// lists every departure from it.
//
// A writer field that cannot map to its column (a record, array or map
// where the column is scalar, a string into BIGINT, a double into FLOAT, a
// decimal of a larger scale, any union branch that does not map) fails at
// Writer with an error naming the field and the column, also for columns
// projection pushdown does not read. Writer uses hamba/avro to parse
// schemas; the resolution itself is ours, because hamba's resolved schema
// keeps its promotions private and its compatibility check compares record
// names and refuses enum → string.
//
// Each record becomes a row only when all of it has been accepted: a bad
// record is a *RecordError naming the field (truncated record, invalid
// varint, invalid UTF-8, union branch or enum index out of range, an
// invalid boolean byte, a negative length, null for a NOT NULL column, a
// value out of the column's range or a decimal beyond its precision) or
// the record (trailing bytes), and leaves nothing behind.
//
// The program is a flat list of operations, one per writer field, that
// read the binary encoding and write the Arrow buffers in place, as the
// json format's decoder does: no generic values, maps, interface calls,
// reflection or allocation per record (DESIGN §6). BenchmarkDecodeArrow
// compares it with hamba/avro's Unmarshal into a Go struct of the same
// shape (BenchmarkDecodeHambaStruct).
//
// # Writing
//
// Encoder.AppendRow and AppendBatch write rows with SchemaFor's schema:
// decimals as the fewest big-endian two's-complement bytes of the unscaled
// value (as Java's BigInteger.toByteArray), unions with branch 0 for null
// and 1 for a value.
package avro
