package objectstore

import (
	"fmt"
	"strings"

	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
)

// TxSink is the Parquet sink's exactly-once mode (the default), on the
// two-phase-commit ledger (connectors/txn). Rows go into the open file;
// PreCommit (at every checkpoint barrier, and at end of input) closes it,
// so a file never spans two checkpoints, and hands every file closed since
// the previous barrier, by size or time too, already uploaded to the
// staging location, to the ledger. When a checkpoint takes them they get
// their final names; Commit(id), once checkpoint id is complete,
// publishes the files of checkpoints <= id: a server-side copy to the
// final name under the published path, then the staging object is
// deleted; redone, it is a no-op or the same copy again.
//
// A restore publishes the files the restored checkpoint lists that are
// still staged (a crash came between the checkpoint and its Commit) and
// deletes every other staging object of this subtask, and of the subtasks
// k >= parallelism with k mod parallelism = this subtask (a crashed run at
// a higher parallelism), whose files in the checkpoint it publishes too.
//
// Without checkpoints (no StartTransactions) it behaves as Sink.
type TxSink struct{ *writer }

var (
	_ engine.TwoPhaseSink       = TxSink{}
	_ engine.StatsReporter      = TxSink{}
	_ txn.System[*stagedFile]   = (*txSystem)(nil)
	_ txn.Assigner[*stagedFile] = (*txSystem)(nil)
)

// StartTransactions switches to two-phase commit.
func (s TxSink) StartTransactions() error {
	s.tx = true
	s.l = txn.New(fmt.Sprintf("parquet sink '%s' (%s)", s.table, s.pub), (*txSystem)(s.writer), txCodec, s.subtask, s.parallelism)
	return s.l.StartTransactions()
}

// Flush, without checkpoints, closes and publishes the open file; with
// them it does nothing (files are published by Commit).
func (s TxSink) Flush() error {
	if s.tx {
		return nil
	}
	return Sink(s).Flush()
}

// PreCommit closes the open file and uploads it to staging.
func (s TxSink) PreCommit() error {
	if !s.tx {
		return s.errorf("%w", txn.ErrNoTransactions)
	}
	return s.l.PreCommit()
}

// Abort drops the open file; staged ones stay for recovery.
func (s TxSink) Abort() error { return s.abort() }

// SnapshotState records every staged file under its checkpoint.
func (s TxSink) SnapshotState(snap *engine.Snapshot) error {
	if !s.tx {
		return nil
	}
	return s.l.SnapshotState(snap)
}

// Commit publishes the staged files of checkpoints up to id, in order.
func (s TxSink) Commit(id uint64) error {
	if !s.tx {
		return nil
	}
	return s.l.Commit(id)
}

// RestoreState finishes what the restored checkpoint staged (see TxSink).
func (s TxSink) RestoreState(r *engine.Restore) error {
	if !s.tx {
		return s.errorf("restore without transactions")
	}
	return s.l.RestoreState(r)
}

// txSystem is the sink's side of the ledger: staged objects.
type txSystem writer

// PreCommit closes the open file and returns the files closed since the
// last call.
func (x *txSystem) PreCommit() ([]*stagedFile, error) {
	w := (*writer)(x)
	if err := w.start(); err != nil {
		return nil, err
	}
	if err := w.roll(); err != nil {
		return nil, err
	}
	files := w.closed
	w.closed = nil
	return files, nil
}

// Assign names the files a checkpoint takes
// part-<run>-<subtask>-<checkpoint>-<n>.
func (x *txSystem) Assign(id uint64, files []*stagedFile) {
	for n, f := range files {
		f.final = fmt.Sprintf("part-%s-%d-%d-%d.parquet", x.run, x.subtask, id, n)
	}
}

// Commit publishes the files (a move is idempotent).
func (x *txSystem) Commit(id uint64, files []*stagedFile) error {
	w := (*writer)(x)
	for _, f := range files {
		if err := w.publish(*f); err != nil {
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
	}
	return nil
}

// Abort drops the open file.
func (x *txSystem) Abort() error { return (*writer)(x).abort() }

// Recover deletes the staging objects of this subtask's share that the
// restored checkpoint did not list (those it listed are published now).
func (x *txSystem) Recover(r *txn.Recovery[*stagedFile]) error {
	w := (*writer)(x)
	if r.Checkpoint == 0 {
		return w.start()
	}
	w.started = true
	return w.cleanStaging(r.Parallelism)
}

// txCodec is a staged file's row: both its names, its rows and size.
var txCodec = txn.Rows[stagedFile]{Columns: []txn.Column[stagedFile]{
	txn.String("staged", func(f *stagedFile) *string { return &f.staged }),
	txn.String("final", func(f *stagedFile) *string { return &f.final }),
	txn.Int64("rows", func(f *stagedFile) *int64 { return &f.rows }),
	txn.Int64("size", func(f *stagedFile) *int64 { return &f.size }),
}, Valid: func(f *stagedFile) bool { return safeName(f.staged) && safeName(f.final) }}

// safeName accepts the relative names a checkpoint records.
func safeName(n string) bool {
	return n != "" && !strings.HasPrefix(n, "/") && !strings.Contains(n, "..") && !strings.Contains(n, "\\")
}
