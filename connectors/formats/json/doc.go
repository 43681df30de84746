// Package json reads and writes JSON lines (one JSON object per line) for
// Clink's connectors, going straight between bytes and Arrow columns.
//
// Decoder parses each line with a hand-written byte scanner and writes the
// values in place into the Arrow buffers of the batch being built; a line
// becomes a row only once all of it has been accepted, so a rejected line
// leaves nothing behind and its *RecordError names the byte column and the
// reason. Fields are matched to columns by name (exactly, then
// case-insensitively); fields of other names are validated and skipped.
//
// AppendBatch and AppendRow write the live rows of a vector.Batch in the
// form DESIGN §3 prescribes for output rows.
//
// Neither direction uses encoding/json, reflection or maps on its hot path,
// and neither allocates per row (DESIGN §6). The decoder writes Arrow
// buffers itself instead of using arrow-go's builders, whose per-value
// overhead cost as much as the parsing; BenchmarkDecode compares it with a
// loop hand-written for one line shape.
package json
