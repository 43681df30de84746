// Package json reads and writes JSON lines (one JSON object per line) for
// Clink's connectors, going straight between bytes and Arrow columns.
//
// The Decoder parses with a hand-written byte scanner into a per-column
// scratch row and appends it to Arrow builders only once the whole line has
// been accepted, so a bad line never leaves the builders half-written. The
// encoder (AppendBatch, AppendRow) writes the live rows of a vector.Batch in
// the format DESIGN §3 prescribes for output rows. Neither uses
// encoding/json, reflection or maps, and neither allocates per row
// (DESIGN §6).
package json
