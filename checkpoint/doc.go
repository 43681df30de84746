// Package checkpoint is the storage layer of checkpoints: the snapshot
// format (one Arrow IPC file per operator subtask, docs/state-format.md),
// the checkpoint directory with its manifest, and a Store that writes,
// lists, opens and prunes checkpoints.
//
// Guarantees: a checkpoint is complete exactly when chk-<id>/_metadata.json
// exists. That manifest is written last and atomically (temp file, fsync,
// rename, fsync of the directory) after every part has been fsynced, so a
// crash at any point leaves either a complete checkpoint or an incomplete
// directory that Latest ignores and Retain removes. Reading verifies each
// part's size and SHA-256 against the manifest, then the Arrow buffers and
// the row invariants of the format; anything wrong is a *FileError naming
// the file, never a panic.
//
// The package sits just above vector: it knows nothing of operators,
// kernels or SQL. Operators describe their state as Slots and write rows;
// the engine decides when to Begin, Commit and Retain.
package checkpoint
