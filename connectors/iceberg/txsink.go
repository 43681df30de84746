package iceberg

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the exactly-once mode (the default), on the two-phase-commit
// ledger (connectors/txn): one append snapshot per checkpoint and sink
// subtask, tagged with the checkpoint (see the package comment). Rows go
// into the open data file; PreCommit (at every checkpoint barrier, and at
// the end of input) closes it, so that a file never spans two
// checkpoints, and hands the files closed since the previous barrier to
// the ledger, which records them under the checkpoint, with this
// subtask's generation and next sequence number; Commit(id) commits the
// files of checkpoints <= id, one snapshot per checkpoint, unless the
// snapshot exists.
//
// A restore commits what the restored checkpoint lists as pending (each
// checkpoint's files of each subtask in one snapshot, unless it exists),
// then deletes the sink's files that nothing accounts for, and starts a
// new generation. It covers this subtask and the subtasks k >=
// parallelism with k mod parallelism = this one, whose run states it keeps
// in its own checkpoints until a subtask k exists again.
//
// Without checkpoints (no StartTransactions) it behaves as Sink.
type TxSink struct{ *writer }

var (
	_ engine.TwoPhaseSink   = TxSink{}
	_ engine.StatsReporter  = TxSink{}
	_ txn.System[*dataFile] = (*txSystem)(nil)
	_ txn.Extra             = (*txSystem)(nil)
)

// StartTransactions switches to two-phase commit.
func (s TxSink) StartTransactions() error {
	s.tx = true
	s.l = txn.New(fmt.Sprintf("iceberg sink '%s' (table %s)", s.cfg.clinkTable, s.cfg), (*txSystem)(s.writer), txCodec, s.subtask, s.parallelism)
	return s.l.StartTransactions()
}

// Write writes the batch into the open file; without checkpoints it also
// commits every commit_interval_ms.
func (s TxSink) Write(b *vector.Batch) error {
	if err := s.writer.Write(b); err != nil {
		return err
	}
	if s.tx {
		return nil
	}
	return Sink(s).commitIfDue()
}

// Flush, without checkpoints, closes the open file and commits; with them
// it does nothing (Commit commits).
func (s TxSink) Flush() error {
	if s.tx {
		return nil
	}
	return Sink(s).Flush()
}

// PreCommit closes the open file: it is complete and durable, and
// invisible until its checkpoint's snapshot references it.
func (s TxSink) PreCommit() error {
	if !s.tx {
		return s.errorf("%w", txn.ErrNoTransactions)
	}
	return s.l.PreCommit()
}

// Abort drops the open file; closed ones stay for recovery.
func (s TxSink) Abort() error { return s.abort() }

// SnapshotState records every file not yet committed under its
// checkpoint.
func (s TxSink) SnapshotState(snap *engine.Snapshot) error {
	if !s.tx {
		return nil
	}
	return s.l.SnapshotState(snap)
}

// Commit commits the files of checkpoints up to id, one snapshot per
// checkpoint, in order. Redone, it finds the snapshots and does nothing.
func (s TxSink) Commit(id uint64) error {
	if !s.tx {
		return nil
	}
	return s.l.Commit(id)
}

// RestoreState commits what the restored checkpoint lists and cleans up
// (see TxSink).
func (s TxSink) RestoreState(r *engine.Restore) error {
	if !s.tx {
		return s.errorf("restore without transactions")
	}
	return s.l.RestoreState(r)
}

// tableName names the table in the checkpoint: catalog.namespace.table.
func (w *writer) tableName() string {
	return w.cfg.catName + "." + strings.Join(w.cfg.ident(), ".")
}

// txSystem is the sink's side of the ledger: data files committed by
// snapshots tagged with their checkpoint.
type txSystem writer

// PreCommit closes the open file and returns the files closed since the
// last call.
func (x *txSystem) PreCommit() ([]*dataFile, error) {
	w := (*writer)(x)
	if err := w.start(); err != nil {
		return nil, err
	}
	if err := w.roll(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	files := make([]*dataFile, len(w.staged))
	for i := range w.staged {
		files[i] = &w.staged[i]
	}
	w.staged = nil
	return files, nil
}

// Commit commits a checkpoint's files, one snapshot per subtask (a
// restore commits those of removed subtasks too).
func (x *txSystem) Commit(id uint64, txns []*dataFile) error {
	w := (*writer)(x)
	if err := w.open(); err != nil {
		return err
	}
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	files := make([]dataFile, len(txns))
	for i, f := range txns {
		files[i] = *f
	}
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i], files[j]
		if a.subtask != b.subtask {
			return a.subtask < b.subtask
		}
		return a.gen < b.gen || (a.gen == b.gen && a.seq < b.seq)
	})
	for i := 0; i < len(files); {
		j := i + 1
		for j < len(files) && files[j].subtask == files[i].subtask {
			j++
		}
		if err := w.commitFiles(files[i].subtask, id, files[i:j]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// Abort drops the open file.
func (x *txSystem) Abort() error { return (*writer)(x).abort() }

// Recover deletes the sink's data files of this subtask's share that
// nothing accounts for (the listed ones are committed now) and starts a
// new generation.
func (x *txSystem) Recover(r *txn.Recovery[*dataFile]) error {
	w := (*writer)(x)
	if r.Checkpoint == 0 {
		return w.start()
	}
	if err := w.open(); err != nil {
		return err
	}
	w.parallelism = r.Parallelism
	runs := map[int]runState{}
	for k, st := range w.restored {
		if r.Owns(k) {
			runs[k] = st
		}
	}
	w.restored = nil
	names := map[string]bool{}
	for _, f := range r.Committed {
		names[path.Base(f.Txn.path)] = true
	}
	maxGen, err := w.cleanup(names, runs)
	if err != nil {
		return fmt.Errorf("restoring checkpoint %d: %w", r.Checkpoint, err)
	}
	gen := maxGen
	if own, ok := runs[w.subtask]; ok {
		gen = max(gen, own.gen)
	}
	w.runs = w.runs[:0]
	for k, st := range runs {
		if k != w.subtask {
			w.runs = append(w.runs, st)
		}
	}
	sort.Slice(w.runs, func(i, j int) bool { return w.runs[i].subtask < w.runs[j].subtask })
	w.gen, w.seq, w.started = gen+1, 0, true
	return nil
}

// Slots: besides the pending files, a subtask's generation and next
// sequence number (this subtask's, and those of removed subtasks it
// adopted), and what was written, so that a restore into another table
// or under another sink id is refused.
func (x *txSystem) Slots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: "run", Raw: true, Values: []arrow.Field{
			{Name: "subtask", Type: arrow.PrimitiveTypes.Int32},
			{Name: "gen", Type: arrow.PrimitiveTypes.Int64},
			{Name: "next_seq", Type: arrow.PrimitiveTypes.Int64},
		}},
		{Name: "sink", Raw: true, Values: []arrow.Field{
			{Name: "sink_id", Type: arrow.BinaryTypes.String},
			{Name: "table", Type: arrow.BinaryTypes.String},
		}},
	}
}

func (x *txSystem) AppendState(b *checkpoint.RowBuilder) {
	w := (*writer)(x)
	next := w.seq
	if w.cur != nil {
		next = w.cur.seq
	}
	runs := append([]runState{{subtask: w.subtask, gen: w.gen, next: next}}, w.runs...)
	for _, r := range runs {
		b.Raw("run")
		b.Value("subtask").(*array.Int32Builder).Append(int32(r.subtask))
		b.Value("gen").(*array.Int64Builder).Append(r.gen)
		b.Value("next_seq").(*array.Int64Builder).Append(r.next)
	}
	b.Raw("sink")
	b.Value("sink_id").(*array.StringBuilder).Append(w.cfg.sinkID)
	b.Value("table").(*array.StringBuilder).Append(w.tableName())
}

func (x *txSystem) ReadState(p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) error {
	w := (*writer)(x)
	switch slot {
	case "run":
		k, _ := checkpoint.Column(rec, "subtask").(*array.Int32)
		gen, _ := checkpoint.Column(rec, "gen").(*array.Int64)
		next, _ := checkpoint.Column(rec, "next_seq").(*array.Int64)
		if k == nil || gen == nil || next == nil {
			return w.errorf("%s: bad run row %d", p.Path, i)
		}
		if w.restored == nil {
			w.restored = map[int]runState{}
		}
		w.restored[int(k.Value(i))] = runState{subtask: int(k.Value(i)), gen: gen.Value(i), next: next.Value(i)}
	case "sink":
		id, _ := checkpoint.Column(rec, "sink_id").(*array.String)
		tbl, _ := checkpoint.Column(rec, "table").(*array.String)
		if id == nil || tbl == nil {
			return w.errorf("%s: bad sink row %d", p.Path, i)
		}
		if id.Value(i) != w.cfg.sinkID || tbl.Value(i) != w.tableName() {
			return w.errorf("checkpoint %d wrote table %s as sink %q, this job writes %s as %q; start it with --fresh, or keep the table and sink_id", p.CheckpointID, tbl.Value(i), id.Value(i), w.tableName(), w.cfg.sinkID)
		}
	}
	return nil
}

// txCodec is a pending file's row: its subtask (whose it is: a part
// may list a removed subtask's), generation, sequence number, path, rows
// and size.
var txCodec = txn.Rows[dataFile]{Columns: []txn.Column[dataFile]{
	txn.Int32("subtask", func(f *dataFile) *int { return &f.subtask }),
	txn.Int64("gen", func(f *dataFile) *int64 { return &f.gen }),
	txn.Int64("seq", func(f *dataFile) *int64 { return &f.seq }),
	txn.String("path", func(f *dataFile) *string { return &f.path }),
	txn.Int64("rows", func(f *dataFile) *int64 { return &f.rows }),
	txn.Int64("size", func(f *dataFile) *int64 { return &f.size }),
}, Valid: func(f *dataFile) bool { return f.path != "" },
	Owner: func(f *dataFile, _ int) int { return f.subtask }}
