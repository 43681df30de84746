package objectstore

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// TxSink is the Parquet sink's exactly-once mode (the default). Rows go
// into the open file; PreCommit (at every checkpoint barrier, and at end
// of input) closes it, so a file never spans two checkpoints, and every
// file closed since the previous checkpoint, by size or time too, is
// already uploaded to the staging location. SnapshotState assigns those
// files to the checkpoint with their final names and records every staged
// file not yet published. Commit(id), once checkpoint id is complete,
// publishes the files of checkpoints <= id: a server-side copy to the
// final name under the published path, then the staging object is
// deleted; redone, it is a no-op or the same copy again.
//
// RestoreState publishes the files the restored checkpoint lists that are
// still staged (a crash came between the checkpoint and its Commit) and
// deletes every other staging object of this subtask, and of the subtasks
// k >= parallelism with k mod parallelism = this subtask (a crashed run at
// a higher parallelism), whose files in the checkpoint it publishes too.
//
// Without checkpoints (no StartTransactions) it behaves as Sink.
type TxSink struct{ *writer }

var (
	_ engine.TwoPhaseSink  = TxSink{}
	_ engine.StatsReporter = TxSink{}
)

// StartTransactions switches to two-phase commit.
func (s TxSink) StartTransactions() error {
	s.tx = true
	return nil
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
	if err := s.start(); err != nil {
		return err
	}
	return s.roll()
}

// Abort drops the open file; staged ones stay for recovery.
func (s TxSink) Abort() error { return s.abort() }

var txSlots = []checkpoint.Slot{
	{Name: "pending", Raw: true, Values: []arrow.Field{
		{Name: "checkpoint_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "staged", Type: arrow.BinaryTypes.String},
		{Name: "final", Type: arrow.BinaryTypes.String},
		{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
		{Name: "size", Type: arrow.PrimitiveTypes.Int64},
	}},
}

// SnapshotState assigns the files staged since the previous snapshot to
// this checkpoint, naming them part-<run>-<subtask>-<checkpoint>-<n>, and
// records every staged file.
func (s TxSink) SnapshotState(snap *engine.Snapshot) error {
	if !s.tx {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	s.mu.Lock()
	n := 0
	for i := range s.staged {
		if s.staged[i].ckpt == 0 {
			s.staged[i].ckpt = snap.ID
			s.staged[i].final = fmt.Sprintf("part-%s-%d-%d-%d.parquet", s.run, s.subtask, snap.ID, n)
			n++
		}
	}
	staged := append([]stagedFile(nil), s.staged...)
	s.mu.Unlock()
	p, err := snap.Open(txSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, f := range staged {
		b.Raw("pending")
		b.Value("checkpoint_id").(*array.Int64Builder).Append(int64(f.ckpt))
		b.Value("staged").(*array.StringBuilder).Append(f.staged)
		b.Value("final").(*array.StringBuilder).Append(f.final)
		b.Value("rows").(*array.Int64Builder).Append(f.rows)
		b.Value("size").(*array.Int64Builder).Append(f.size)
	}
	return p.WriteRows(b)
}

// Commit publishes the staged files of checkpoints up to id, in order.
func (s TxSink) Commit(id uint64) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.mu.Lock()
	var due []stagedFile
	for _, f := range s.staged {
		if f.ckpt == 0 || f.ckpt > id {
			break
		}
		due = append(due, f)
	}
	s.mu.Unlock()
	for i, f := range due {
		if err := s.publish(f); err != nil {
			s.drop(i)
			return fmt.Errorf("checkpoint %d: %w", id, err)
		}
	}
	s.drop(len(due))
	return nil
}

// drop forgets the first n staged files (published).
func (s TxSink) drop(n int) {
	s.mu.Lock()
	s.staged = append(s.staged[:0], s.staged[n:]...)
	s.mu.Unlock()
}

// RestoreState finishes what the restored checkpoint staged (see TxSink).
func (s TxSink) RestoreState(r *engine.Restore) error {
	if !s.tx {
		return s.errorf("restore without transactions")
	}
	par := max(r.Parallelism, 1)
	var files []stagedFile
	for _, part := range r.Parts {
		k := part.Subtask
		if k != r.Subtask && !(k >= par && k%par == r.Subtask) {
			continue
		}
		for _, rec := range part.Records {
			slot, _ := rec.Column(0).(*array.String)
			if slot == nil {
				return s.errorf("%s: no slot column", part.Path)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				if slot.Value(i) != "pending" {
					continue
				}
				ck, _ := checkpoint.Column(rec, "checkpoint_id").(*array.Int64)
				st, _ := checkpoint.Column(rec, "staged").(*array.String)
				fin, _ := checkpoint.Column(rec, "final").(*array.String)
				rows, _ := checkpoint.Column(rec, "rows").(*array.Int64)
				size, _ := checkpoint.Column(rec, "size").(*array.Int64)
				if ck == nil || st == nil || fin == nil || rows == nil || size == nil || !safeName(st.Value(i)) || !safeName(fin.Value(i)) {
					return s.errorf("%s: bad pending row %d", part.Path, i)
				}
				files = append(files, stagedFile{ckpt: uint64(ck.Value(i)), staged: st.Value(i), final: fin.Value(i), rows: rows.Value(i), size: size.Value(i)})
			}
		}
	}
	for _, f := range files {
		if err := s.publish(f); err != nil {
			return fmt.Errorf("restoring checkpoint %d: %w", r.ID, err)
		}
	}
	s.started = true
	return s.cleanStaging(par)
}

// safeName accepts the relative names a checkpoint records.
func safeName(n string) bool {
	return n != "" && !strings.HasPrefix(n, "/") && !strings.Contains(n, "..") && !strings.Contains(n, "\\")
}
