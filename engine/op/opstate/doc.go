// Package opstate is what the stateful operators share to write and read
// their state in the documented format (docs/state-format.md): readable
// keys (RenderKeys) and key groups (KeyGroups) of key columns, the raw
// operator slot, unique value-column names, reading the value columns of a
// slot back (SlotRows, Cols, SlotColumns), and opening a snapshot's part
// (Write).
package opstate
