// Package iceberg is the 'iceberg' sink: it appends a table's rows to an
// Apache Iceberg table as Parquet data files, through iceberg-go, in a SQL
// catalog (SQLite or PostgreSQL) or a REST catalog, with the warehouse on a
// local disk or S3. connectors/builtin registers Connector, except in a
// slim build (see package spec).
//
// # Exactly once
//
// Rows go into Parquet files written straight into the table's data
// directory under names no other writer uses,
// clink-<hash of the sink id>-<subtask>-<generation>-<seq>.parquet: a file
// no snapshot references is invisible to readers. PreCommit (at every
// checkpoint barrier) closes the open file; SnapshotState assigns the
// closed files to the checkpoint and records them; Commit(id), once the
// checkpoint is complete, adds them to the table as ONE append snapshot
// per checkpoint and sink subtask, whose summary says what it holds:
//
//	clink.sink           the sink id (option sink_id, default the Clink table's name)
//	clink.subtask        the sink subtask whose files these are
//	clink.checkpoint-id  the checkpoint
//	clink.files          the files, <generation>:<first seq>-<last seq>[,...]
//
// Before committing, the sink looks for a snapshot with the same four
// properties (one commit that landed before a crash, or before a lost
// reply, is not repeated), and a conflicting concurrent commit (another
// subtask or job) is retried on the refreshed table.
//
// A generation is one run of a subtask: a start picks one above every
// generation its checkpoint and the data directory know, so names never
// repeat. The checkpoint records, per subtask, its generation and the next
// sequence number: every file of an older generation, or of this one
// below that number, was committed or is listed as pending. RestoreState
// commits the pending files the checkpoint lists (each group unless its
// snapshot exists) and deletes the sink's other files that no snapshot
// references (orphans of a crashed run), for its own subtask and the
// subtasks k >= parallelism with k mod parallelism = its index. A start
// without a checkpoint does the same with nothing pending.
package iceberg
