package file

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	cjson "github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the file sink's exactly-once mode (the default). Without
// checkpoints it appends to its part file like Sink. With checkpoints
// (StartTransactions), rows go to a hidden staging file per transaction
// (.<part>.pending-<run>-<n>, ignored by the file source) that is closed and
// fsynced at each barrier and appended to the part file only when its
// checkpoint completes; nothing uncommitted is ever in the part file.
//
// Its state lists the pre-committed transactions with the part-file offset
// each starts at and its size, and the committed length. A restore appends
// the listed transactions that are still staged (truncating to their
// offset first, so a commit cut short by a crash is redone, not doubled),
// truncates the part file to the restored length (dropping output of later
// checkpoints) and deletes every other staging file.
type TxSink struct {
	name    string // the part file
	plain   *Sink  // without checkpoints
	tx      bool
	started bool // the part file is set up (fresh or restored)
	run     string

	buf []byte
	cur *os.File
	w   *bufio.Writer
	n   int64 // bytes in cur
	seq int

	adopted []adoptedFile // part files of removed subtasks (RestoreState)

	mu        sync.Mutex
	staged    []fileTxn // pre-committed, in order
	committed int64     // part file length with every committed transaction
	next      int64     // where the next transaction starts
}

type adoptedFile struct {
	subtask int
	name    string
	length  int64
}

type fileTxn struct {
	ckpt       uint64 // 0 until a snapshot assigns it
	file       string // staging file base name
	base, size int64
}

var (
	_ engine.TwoPhaseSink = (*TxSink)(nil)
)

func newTxSink(name string) *TxSink {
	var rnd [4]byte
	rand.Read(rnd[:])
	return &TxSink{name: name, run: hex.EncodeToString(rnd[:])}
}

func (s *TxSink) stagingPrefix() string { return stagingPrefix(s.name) }

func stagingPrefix(name string) string {
	return filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".pending-")
}

// open sets the part file up on first use: truncated (a fresh job), unless
// a restore already did.
func (s *TxSink) open() error {
	if s.started {
		return nil
	}
	s.started = true
	if !s.tx {
		f, err := os.Create(s.name)
		if err != nil {
			return err
		}
		s.plain = &Sink{name: s.name, f: f, w: bufio.NewWriterSize(f, 1<<16), opened: true}
		return nil
	}
	if err := os.WriteFile(s.name, nil, 0o644); err != nil {
		return err
	}
	s.committed, s.next = 0, 0
	return s.removeStaging(nil)
}

// removeStaging deletes staging files of this part except keep.
func (s *TxSink) removeStaging(keep map[string]bool) error { return removeStaging(s.name, keep) }

func removeStaging(name string, keep map[string]bool) error {
	names, err := filepath.Glob(stagingPrefix(name) + "*")
	if err != nil {
		return err
	}
	for _, n := range names {
		if !keep[filepath.Base(n)] {
			if err := os.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// StartTransactions switches to two-phase commit (checkpoints are on).
func (s *TxSink) StartTransactions() error {
	s.tx = true
	return nil
}

// Write appends the batch's rows to the part file, or with checkpoints to
// the open transaction's staging file.
func (s *TxSink) Write(b *vector.Batch) error {
	if err := s.open(); err != nil {
		b.Release()
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	if !s.tx {
		return s.plain.Write(b)
	}
	s.buf = cjson.AppendBatch(s.buf[:0], b)
	b.Release()
	if s.cur == nil {
		s.seq++
		f, err := os.Create(fmt.Sprintf("%s%s-%d", s.stagingPrefix(), s.run, s.seq))
		if err != nil {
			return fmt.Errorf("file sink %s: %w", s.name, err)
		}
		s.cur, s.w, s.n = f, bufio.NewWriterSize(f, 1<<16), 0
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	s.n += int64(len(s.buf))
	return nil
}

// PreCommit closes the open transaction: its staging file is flushed and
// fsynced, to be published when a checkpoint that lists it completes.
func (s *TxSink) PreCommit() error {
	if err := s.open(); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	if s.cur == nil {
		return nil
	}
	f := s.cur
	s.cur = nil
	err := s.w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file sink %s: staging: %w", s.name, err)
	}
	s.mu.Lock()
	s.staged = append(s.staged, fileTxn{file: filepath.Base(f.Name()), base: s.next, size: s.n})
	s.next += s.n
	s.mu.Unlock()
	return nil
}

var txSlots = []checkpoint.Slot{
	{Name: "pending", Raw: true, Values: []arrow.Field{
		{Name: "checkpoint_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "file", Type: arrow.BinaryTypes.String},
		{Name: "base", Type: arrow.PrimitiveTypes.Int64},
		{Name: "size", Type: arrow.PrimitiveTypes.Int64},
	}},
	{Name: "committed", Raw: true, Values: []arrow.Field{
		{Name: "part_file", Type: arrow.BinaryTypes.String},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64},
	}},
	// adopted: part files of subtasks that a restore at a lower
	// parallelism removed; this subtask keeps their committed length
	// until a subtask of that index exists again.
	{Name: "adopted", Raw: true, Values: []arrow.Field{
		{Name: "subtask", Type: arrow.PrimitiveTypes.Int32},
		{Name: "part_file", Type: arrow.BinaryTypes.String},
		{Name: "length", Type: arrow.PrimitiveTypes.Int64},
	}},
}

// SnapshotState assigns the pre-committed transactions to this checkpoint
// and records every one not yet committed, and the committed length.
func (s *TxSink) SnapshotState(snap *engine.Snapshot) error {
	if !s.tx {
		return nil
	}
	if err := s.open(); err != nil {
		return err
	}
	s.mu.Lock()
	for i := range s.staged {
		if s.staged[i].ckpt == 0 {
			s.staged[i].ckpt = snap.ID
		}
	}
	staged := append([]fileTxn(nil), s.staged...)
	committed := s.committed
	s.mu.Unlock()
	p, err := snap.Open(txSlots)
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, t := range staged {
		b.Raw("pending")
		b.Value("checkpoint_id").(*array.Int64Builder).Append(int64(t.ckpt))
		b.Value("file").(*array.StringBuilder).Append(t.file)
		b.Value("base").(*array.Int64Builder).Append(t.base)
		b.Value("size").(*array.Int64Builder).Append(t.size)
	}
	b.Raw("committed")
	b.Value("part_file").(*array.StringBuilder).Append(s.name)
	b.Value("length").(*array.Int64Builder).Append(committed)
	for _, a := range s.adopted {
		b.Raw("adopted")
		b.Value("subtask").(*array.Int32Builder).Append(int32(a.subtask))
		b.Value("part_file").(*array.StringBuilder).Append(a.name)
		b.Value("length").(*array.Int64Builder).Append(a.length)
	}
	return p.WriteRows(b)
}

// Commit publishes the transactions of checkpoints up to id, in order.
func (s *TxSink) Commit(id uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.staged) > 0 && s.staged[0].ckpt != 0 && s.staged[0].ckpt <= id {
		if err := s.publish(s.staged[0]); err != nil {
			return err
		}
		t := s.staged[0]
		s.committed = t.base + t.size
		s.staged = s.staged[1:]
	}
	return nil
}

// publish appends staged transaction t at its offset of the part file and
// removes its staging file. Redoing it is harmless.
func (s *TxSink) publish(t fileTxn) error { return publishTo(s.name, t) }

// publishTo appends staged transaction t to part file name at its offset
// and removes its staging file. Redoing it is harmless.
func publishTo(name string, t fileTxn) error {
	stage := filepath.Join(filepath.Dir(name), t.file)
	src, err := os.Open(stage)
	if err != nil {
		return fmt.Errorf("file sink %s: %w", name, err)
	}
	defer src.Close()
	dst, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("file sink %s: %w", name, err)
	}
	err = dst.Truncate(t.base)
	if err == nil {
		_, err = dst.Seek(t.base, io.SeekStart)
	}
	if err == nil {
		var n int64
		n, err = io.Copy(dst, src)
		if err == nil && n != t.size {
			err = fmt.Errorf("staging file %s has %d bytes, the checkpoint says %d", stage, n, t.size)
		}
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file sink %s: publishing %s: %w", name, t.file, err)
	}
	if err := os.Remove(stage); err != nil {
		return fmt.Errorf("file sink %s: %w", name, err)
	}
	return nil
}

// RestoreState finishes what the restored checkpoint pre-committed and
// rolls the part file back to it (see TxSink). A restore at another
// parallelism than the checkpoint's: subtask j also finishes the part
// files of the subtasks k >= parallelism with k mod parallelism = j, and
// keeps their committed lengths in its state (adopted), so that a later
// restore at a higher parallelism hands each back to subtask k.
func (s *TxSink) RestoreState(r *engine.Restore) error {
	if !s.tx {
		return fmt.Errorf("file sink %s: restore without transactions", s.name)
	}
	par := max(r.Parallelism, 1)
	files := map[int]*partFile{} // by the subtask whose part file it is
	for _, part := range r.Parts {
		if err := readTxPart(part, files); err != nil {
			return err
		}
	}
	for k, f := range files {
		own := k == r.Subtask
		if !own && !(k >= par && k%par == r.Subtask) {
			continue
		}
		length, err := f.restore(r.ID)
		if err != nil {
			return err
		}
		if own {
			if f.name != s.name {
				return fmt.Errorf("file sink %s: checkpoint %d wrote this subtask's output to %s (the sink's path changed?)", s.name, r.ID, f.name)
			}
			s.started = true
			s.committed, s.next = length, length
		} else {
			s.adopted = append(s.adopted, adoptedFile{subtask: k, name: f.name, length: length})
		}
	}
	sort.Slice(s.adopted, func(a, b int) bool { return s.adopted[a].subtask < s.adopted[b].subtask })
	if !s.started {
		// No checkpointed subtask had this index: a new part file.
		return s.open()
	}
	return nil
}

// partFile is what a checkpoint says of one subtask's part file.
type partFile struct {
	name   string
	length int64
	txns   []fileTxn
	source string // the state part that said it, for errors
}

// readTxPart adds what one state part says of part files to files: its
// own file (committed length, pending transactions) and those it adopted.
func readTxPart(part *checkpoint.Part, files map[int]*partFile) error {
	get := func(k int) *partFile {
		if files[k] == nil {
			files[k] = &partFile{source: part.Path}
		}
		return files[k]
	}
	for _, rec := range part.Records {
		slot := rec.Column(0).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			switch slot.Value(i) {
			case "pending":
				cid, _ := checkpoint.Column(rec, "checkpoint_id").(*array.Int64)
				file, _ := checkpoint.Column(rec, "file").(*array.String)
				base, _ := checkpoint.Column(rec, "base").(*array.Int64)
				size, _ := checkpoint.Column(rec, "size").(*array.Int64)
				if cid == nil || file == nil || base == nil || size == nil || strings.ContainsAny(file.Value(i), `/\`) {
					return fmt.Errorf("%s: bad pending row %d", part.Path, i)
				}
				f := get(part.Subtask)
				f.txns = append(f.txns, fileTxn{ckpt: uint64(cid.Value(i)), file: file.Value(i), base: base.Value(i), size: size.Value(i)})
			case "committed", "adopted":
				l, _ := checkpoint.Column(rec, "length").(*array.Int64)
				pf, _ := checkpoint.Column(rec, "part_file").(*array.String)
				if l == nil || pf == nil {
					return fmt.Errorf("%s: bad %s row %d", part.Path, slot.Value(i), i)
				}
				k := part.Subtask
				if slot.Value(i) == "adopted" {
					st, _ := checkpoint.Column(rec, "subtask").(*array.Int32)
					if st == nil {
						return fmt.Errorf("%s: bad adopted row %d", part.Path, i)
					}
					k = int(st.Value(i))
				}
				f := get(k)
				f.name = pf.Value(i)
				f.length = max(f.length, l.Value(i))
			}
		}
	}
	return nil
}

// restore recovers the part file: it publishes the listed transactions
// still staged, truncates the file to the committed length and deletes the
// other staging files. It returns the length.
func (f *partFile) restore(id uint64) (int64, error) {
	name := f.name
	if name == "" {
		return 0, fmt.Errorf("%s: pending transactions without a committed row", f.source)
	}
	length := f.length
	sort.Slice(f.txns, func(i, j int) bool { return f.txns[i].base < f.txns[j].base })
	fi, err := os.Stat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	size := int64(0)
	if fi != nil {
		size = fi.Size()
	}
	for _, t := range f.txns {
		stage := filepath.Join(filepath.Dir(name), t.file)
		if _, err := os.Stat(stage); err == nil {
			if err := publishTo(name, t); err != nil {
				return 0, err
			}
			size = t.base + t.size
		} else if size < t.base+t.size {
			return 0, fmt.Errorf("file sink %s: checkpoint %d's transaction %s is neither staged nor in the part file (%d bytes, needs %d)", name, id, t.file, size, t.base+t.size)
		}
		length = max(length, t.base+t.size)
	}
	if size < length {
		return 0, fmt.Errorf("file sink %s: has %d bytes, checkpoint %d committed %d (was the file changed?)", name, size, id, length)
	}
	if err := os.Truncate(name, length); err != nil && !(length == 0 && errors.Is(err, fs.ErrNotExist)) {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	if err := removeStaging(name, nil); err != nil {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	return length, nil
}

// Abort discards the open transaction.
func (s *TxSink) Abort() error {
	if s.cur == nil {
		return nil
	}
	f := s.cur
	s.cur = nil
	f.Close()
	return os.Remove(f.Name())
}

// Flush (without checkpoints) makes everything written durable.
func (s *TxSink) Flush() error {
	if s.tx {
		return nil
	}
	if err := s.open(); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	return s.plain.Flush()
}

// Close closes the files; staged transactions stay for recovery.
func (s *TxSink) Close() error {
	if s.plain != nil {
		return s.plain.Close()
	}
	if s.cur != nil {
		s.w.Flush()
		err := s.cur.Close()
		s.cur = nil
		return err
	}
	return nil
}
