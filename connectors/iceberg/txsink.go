package iceberg

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the exactly-once mode (the default): one append snapshot per
// checkpoint and sink subtask, tagged with the checkpoint (see the package
// comment). Rows go into the open data file; PreCommit (at every
// checkpoint barrier, and at the end of input) closes it, so that a file
// never spans two checkpoints; SnapshotState assigns the files closed
// since the previous checkpoint to this one and records every file not
// yet committed, and this subtask's generation and next sequence number;
// Commit(id) commits the files of checkpoints <= id, one snapshot per
// checkpoint.
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
	if err := s.start(); err != nil {
		return err
	}
	return s.roll()
}

// Abort drops the open file; closed ones stay for recovery.
func (s TxSink) Abort() error { return s.abort() }

var txSlots = []checkpoint.Slot{
	{Name: "pending", Raw: true, Values: []arrow.Field{
		{Name: "checkpoint_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "subtask", Type: arrow.PrimitiveTypes.Int32},
		{Name: "gen", Type: arrow.PrimitiveTypes.Int64},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "path", Type: arrow.BinaryTypes.String},
		{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
		{Name: "size", Type: arrow.PrimitiveTypes.Int64},
	}},
	// run: a subtask's generation and next sequence number (this
	// subtask's, and those of removed subtasks it adopted).
	{Name: "run", Raw: true, Values: []arrow.Field{
		{Name: "subtask", Type: arrow.PrimitiveTypes.Int32},
		{Name: "gen", Type: arrow.PrimitiveTypes.Int64},
		{Name: "next_seq", Type: arrow.PrimitiveTypes.Int64},
	}},
	// sink: what was written, so that a restore into another table or
	// under another sink id is refused.
	{Name: "sink", Raw: true, Values: []arrow.Field{
		{Name: "sink_id", Type: arrow.BinaryTypes.String},
		{Name: "table", Type: arrow.BinaryTypes.String},
	}},
}

// SnapshotState assigns the files closed since the previous snapshot to
// this checkpoint and records every file not yet committed.
func (s TxSink) SnapshotState(snap *engine.Snapshot) error {
	if !s.tx {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	s.mu.Lock()
	for i := range s.staged {
		if s.staged[i].ckpt == 0 {
			s.staged[i].ckpt = snap.ID
		}
	}
	staged := append([]dataFile(nil), s.staged...)
	s.mu.Unlock()
	next := s.seq
	if s.cur != nil {
		next = s.cur.seq
	}
	runs := append([]runState{{subtask: s.subtask, gen: s.gen, next: next}}, s.runs...)
	p, err := snap.Open(txSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, f := range staged {
		b.Raw("pending")
		b.Value("checkpoint_id").(*array.Int64Builder).Append(int64(f.ckpt))
		b.Value("subtask").(*array.Int32Builder).Append(int32(f.subtask))
		b.Value("gen").(*array.Int64Builder).Append(f.gen)
		b.Value("seq").(*array.Int64Builder).Append(f.seq)
		b.Value("path").(*array.StringBuilder).Append(f.path)
		b.Value("rows").(*array.Int64Builder).Append(f.rows)
		b.Value("size").(*array.Int64Builder).Append(f.size)
	}
	for _, r := range runs {
		b.Raw("run")
		b.Value("subtask").(*array.Int32Builder).Append(int32(r.subtask))
		b.Value("gen").(*array.Int64Builder).Append(r.gen)
		b.Value("next_seq").(*array.Int64Builder).Append(r.next)
	}
	b.Raw("sink")
	b.Value("sink_id").(*array.StringBuilder).Append(s.cfg.sinkID)
	b.Value("table").(*array.StringBuilder).Append(s.tableName())
	return p.WriteRows(b)
}

// tableName names the table in the checkpoint: catalog.namespace.table.
func (s TxSink) tableName() string {
	return s.cfg.catName + "." + strings.Join(s.cfg.ident(), ".")
}

// Commit commits the files of checkpoints up to id, one snapshot per
// checkpoint, in order. Redone, it finds the snapshots and does nothing.
func (s TxSink) Commit(id uint64) error {
	return s.commitDue(func(f dataFile) bool { return f.ckpt != 0 && f.ckpt <= id })
}

// RestoreState commits what the restored checkpoint lists as pending
// (each checkpoint's files of each subtask in one snapshot, unless it
// exists), then deletes the sink's files that nothing accounts for, and
// starts a new generation. It covers this subtask and the subtasks k >=
// parallelism with k mod parallelism = this one, whose run states it keeps
// in its own checkpoints until a subtask k exists again.
func (s TxSink) RestoreState(r *engine.Restore) error {
	if !s.tx {
		return s.errorf("restore without transactions")
	}
	if err := s.open(); err != nil {
		return err
	}
	par := max(r.Parallelism, 1)
	s.parallelism = par
	mine := func(k int) bool { return k == r.Subtask || (k >= par && k%par == r.Subtask) }
	var pending []dataFile
	runs := map[int]runState{}
	for _, part := range r.Parts {
		for _, rec := range part.Records {
			slot, _ := rec.Column(0).(*array.String)
			if slot == nil {
				return s.errorf("%s: no slot column", part.Path)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				switch slot.Value(i) {
				case "pending":
					f, err := pendingRow(rec, i)
					if err != nil {
						return s.errorf("%s: %w", part.Path, err)
					}
					if mine(f.subtask) {
						pending = append(pending, f)
					}
				case "run":
					k, _ := checkpoint.Column(rec, "subtask").(*array.Int32)
					gen, _ := checkpoint.Column(rec, "gen").(*array.Int64)
					next, _ := checkpoint.Column(rec, "next_seq").(*array.Int64)
					if k == nil || gen == nil || next == nil {
						return s.errorf("%s: bad run row %d", part.Path, i)
					}
					if mine(int(k.Value(i))) {
						runs[int(k.Value(i))] = runState{subtask: int(k.Value(i)), gen: gen.Value(i), next: next.Value(i)}
					}
				case "sink":
					id, _ := checkpoint.Column(rec, "sink_id").(*array.String)
					tbl, _ := checkpoint.Column(rec, "table").(*array.String)
					if id == nil || tbl == nil {
						return s.errorf("%s: bad sink row %d", part.Path, i)
					}
					if id.Value(i) != s.cfg.sinkID || tbl.Value(i) != s.tableName() {
						return s.errorf("checkpoint %d wrote table %s as sink %q, this job writes %s as %q; start it with --fresh, or keep the table and sink_id", r.ID, tbl.Value(i), id.Value(i), s.tableName(), s.cfg.sinkID)
					}
				}
			}
		}
	}
	// Commit in checkpoint order, one snapshot per checkpoint and subtask.
	sort.SliceStable(pending, func(i, j int) bool {
		a, b := pending[i], pending[j]
		if a.ckpt != b.ckpt {
			return a.ckpt < b.ckpt
		}
		if a.subtask != b.subtask {
			return a.subtask < b.subtask
		}
		return a.gen < b.gen || (a.gen == b.gen && a.seq < b.seq)
	})
	names := map[string]bool{}
	for i := 0; i < len(pending); {
		j := i + 1
		for j < len(pending) && pending[j].ckpt == pending[i].ckpt && pending[j].subtask == pending[i].subtask {
			j++
		}
		if err := s.commitFiles(pending[i].subtask, pending[i].ckpt, pending[i:j]); err != nil {
			return fmt.Errorf("restoring checkpoint %d: %w", r.ID, err)
		}
		for _, f := range pending[i:j] {
			names[path.Base(f.path)] = true
		}
		i = j
	}
	maxGen, err := s.cleanup(names, runs)
	if err != nil {
		return fmt.Errorf("restoring checkpoint %d: %w", r.ID, err)
	}
	gen := maxGen
	if own, ok := runs[s.subtask]; ok {
		gen = max(gen, own.gen)
	}
	s.runs = s.runs[:0]
	for k, st := range runs {
		if k != s.subtask {
			s.runs = append(s.runs, st)
		}
	}
	sort.Slice(s.runs, func(i, j int) bool { return s.runs[i].subtask < s.runs[j].subtask })
	s.gen, s.seq, s.started = gen+1, 0, true
	return nil
}

// pendingRow reads row i of a "pending" slot.
func pendingRow(rec arrow.RecordBatch, i int) (dataFile, error) {
	ck, _ := checkpoint.Column(rec, "checkpoint_id").(*array.Int64)
	k, _ := checkpoint.Column(rec, "subtask").(*array.Int32)
	gen, _ := checkpoint.Column(rec, "gen").(*array.Int64)
	seq, _ := checkpoint.Column(rec, "seq").(*array.Int64)
	p, _ := checkpoint.Column(rec, "path").(*array.String)
	rows, _ := checkpoint.Column(rec, "rows").(*array.Int64)
	size, _ := checkpoint.Column(rec, "size").(*array.Int64)
	if ck == nil || k == nil || gen == nil || seq == nil || p == nil || rows == nil || size == nil || p.Value(i) == "" {
		return dataFile{}, fmt.Errorf("bad pending row %d", i)
	}
	return dataFile{ckpt: uint64(ck.Value(i)), subtask: int(k.Value(i)), gen: gen.Value(i), seq: seq.Value(i),
		path: p.Value(i), rows: rows.Value(i), size: size.Value(i)}, nil
}
