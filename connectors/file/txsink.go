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
	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the file sink's exactly-once mode (the default), on the
// two-phase-commit ledger (connectors/txn). Without checkpoints it appends
// to its part file like Sink. With checkpoints (StartTransactions), rows go
// to a hidden staging file per transaction (.<part>.pending-<run>-<n>,
// ignored by the file source) that is closed and fsynced at each barrier
// (pre-commit) and appended to the part file only when its checkpoint
// completes (commit); nothing uncommitted is ever in the part file.
//
// Its state lists the staged transactions with the part-file offset each
// starts at and its size, and the committed length. A restore appends the
// listed transactions that are still staged (truncating to their offset
// first, so a commit cut short by a crash is redone, not doubled),
// truncates the part file to the restored length (dropping output of later
// checkpoints) and deletes every other staging file. A restore at another
// parallelism than the checkpoint's: subtask j also finishes the part
// files of the subtasks k >= parallelism with k mod parallelism = j, and
// keeps their committed lengths in its state (adopted), so that a later
// restore at a higher parallelism hands each back to subtask k.
type TxSink struct {
	name    string // the part file
	subtask int
	plain   *Sink // without checkpoints
	run     string
	*txn.Ledger[*fileTxn]

	buf []byte
	cur *os.File
	w   *bufio.Writer
	n   int64 // bytes in cur
	seq int

	adopted []adoptedFile     // part files of removed subtasks (Recover)
	files   map[int]*partFile // the restored checkpoint's, by subtask (ReadState)

	mu        sync.Mutex
	committed int64 // part file length with every committed transaction
	next      int64 // where the next transaction starts
}

type adoptedFile struct {
	subtask int
	name    string
	length  int64
}

// fileTxn is a staged transaction: a staging file to append to a part
// file at base.
type fileTxn struct {
	file       string // staging file base name
	base, size int64
	subtask    int // whose part file
}

var (
	_ engine.TwoPhaseSink  = (*TxSink)(nil)
	_ txn.System[*fileTxn] = (*txSystem)(nil)
	_ txn.Extra            = (*txSystem)(nil)
)

func newTxSink(name string, subtask, par int) *TxSink {
	var rnd [4]byte
	rand.Read(rnd[:])
	s := &TxSink{name: name, subtask: subtask, run: hex.EncodeToString(rnd[:])}
	s.Ledger = txn.New("file sink "+name, (*txSystem)(s), txCodec, subtask, par)
	return s
}

func (s *TxSink) stagingPrefix() string { return stagingPrefix(s.name) }

func stagingPrefix(name string) string {
	return filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".pending-")
}

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

// openPlain sets the part file up on first use without checkpoints:
// truncated.
func (s *TxSink) openPlain() error {
	if s.plain != nil {
		return nil
	}
	f, err := os.Create(s.name)
	if err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	s.plain = &Sink{name: s.name, f: f, w: bufio.NewWriterSize(f, 1<<16), opened: true}
	return nil
}

// Write appends the batch's rows to the part file, or with checkpoints to
// the open transaction's staging file.
func (s *TxSink) Write(b *vector.Batch) error {
	if !s.Active() {
		if err := s.openPlain(); err != nil {
			b.Release()
			return err
		}
		return s.plain.Write(b)
	}
	if err := s.Ready(); err != nil {
		b.Release()
		return err
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

// Flush (without checkpoints) makes everything written durable.
func (s *TxSink) Flush() error {
	if s.Active() {
		return nil
	}
	if err := s.openPlain(); err != nil {
		return err
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

// txSystem is the sink's side of the ledger: staging files appended to
// the part file.
type txSystem TxSink

// PreCommit closes the open transaction: its staging file is flushed and
// fsynced, to be published when a checkpoint that lists it completes.
func (x *txSystem) PreCommit() ([]*fileTxn, error) {
	s := (*TxSink)(x)
	if s.cur == nil {
		return nil, nil
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
		return nil, fmt.Errorf("file sink %s: staging: %w", s.name, err)
	}
	t := &fileTxn{file: filepath.Base(f.Name()), base: s.next, size: s.n, subtask: s.subtask}
	s.next += s.n
	return []*fileTxn{t}, nil
}

// partName is the part file of subtask k's transactions.
func (s *TxSink) partName(k int) (string, error) {
	if k == s.subtask {
		return s.name, nil
	}
	if f := s.files[k]; f != nil && f.name != "" {
		return f.name, nil
	}
	return "", fmt.Errorf("file sink %s: the checkpoint lists transactions of subtask %d without its committed row", s.name, k)
}

// Commit appends each staged file at its offset of its part file. A
// transaction whose staging file is gone was published before, if the
// part file holds it.
func (x *txSystem) Commit(id uint64, txns []*fileTxn) error {
	s := (*TxSink)(x)
	for _, t := range txns {
		name, err := s.partName(t.subtask)
		if err != nil {
			return err
		}
		stage := filepath.Join(filepath.Dir(name), t.file)
		if _, err := os.Stat(stage); err == nil {
			if err := publishTo(name, *t); err != nil {
				return err
			}
		} else if fi, err := os.Stat(name); err != nil || fi.Size() < t.base+t.size {
			size := int64(0)
			if fi != nil {
				size = fi.Size()
			}
			return fmt.Errorf("file sink %s: checkpoint %d's transaction %s is neither staged nor in the part file (%d bytes, needs %d)", name, id, t.file, size, t.base+t.size)
		}
		if t.subtask == s.subtask {
			s.mu.Lock()
			s.committed = t.base + t.size
			s.mu.Unlock()
		}
	}
	return nil
}

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

// Abort discards the open transaction.
func (x *txSystem) Abort() error {
	if x.cur == nil {
		return nil
	}
	f := x.cur
	x.cur = nil
	f.Close()
	return os.Remove(f.Name())
}

// Recover rolls the part files of this subtask's share back to what the
// checkpoint committed (the listed transactions are published now) and
// deletes their other staging files; on a fresh start, or for a subtask
// the checkpoint did not have, the part file starts empty.
func (x *txSystem) Recover(r *txn.Recovery[*fileTxn]) error {
	s := (*TxSink)(x)
	files := s.files
	s.files = nil
	own := false
	for k, f := range files {
		if !r.Owns(k) {
			continue
		}
		length, err := f.restore(r, k)
		if err != nil {
			return err
		}
		if k == r.Subtask {
			if f.name != s.name {
				return fmt.Errorf("file sink %s: checkpoint %d wrote this subtask's output to %s (the sink's path changed?)", s.name, r.Checkpoint, f.name)
			}
			own = true
			s.mu.Lock()
			s.committed, s.next = length, length
			s.mu.Unlock()
		} else {
			s.adopted = append(s.adopted, adoptedFile{subtask: k, name: f.name, length: length})
		}
	}
	sort.Slice(s.adopted, func(a, b int) bool { return s.adopted[a].subtask < s.adopted[b].subtask })
	if own {
		return nil
	}
	// A fresh start, or no checkpointed subtask had this index: a new
	// part file.
	if err := os.WriteFile(s.name, nil, 0o644); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	s.mu.Lock()
	s.committed, s.next = 0, 0
	s.mu.Unlock()
	if err := removeStaging(s.name, nil); err != nil {
		return fmt.Errorf("file sink %s: %w", s.name, err)
	}
	return nil
}

// partFile is what a checkpoint says of one subtask's part file.
type partFile struct {
	name   string
	length int64
}

// restore rolls part file f of subtask k back: to its committed length,
// with every listed transaction (published by now) included, and deletes
// the other staging files. It returns the length.
func (f *partFile) restore(r *txn.Recovery[*fileTxn], k int) (int64, error) {
	name := f.name
	length := f.length
	for _, t := range r.Committed {
		if t.Subtask == k {
			length = max(length, t.Txn.base+t.Txn.size)
		}
	}
	fi, err := os.Stat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	size := int64(0)
	if fi != nil {
		size = fi.Size()
	}
	if size < length {
		return 0, fmt.Errorf("file sink %s: has %d bytes, checkpoint %d committed %d (was the file changed?)", name, size, r.Checkpoint, length)
	}
	if err := os.Truncate(name, length); err != nil && !(length == 0 && errors.Is(err, fs.ErrNotExist)) {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	if err := removeStaging(name, nil); err != nil {
		return 0, fmt.Errorf("file sink %s: %w", name, err)
	}
	return length, nil
}

// Slots: besides the staged transactions, the committed length of the
// part file, and of the part files adopted from subtasks that a restore
// at a lower parallelism removed (kept until a subtask of that index
// exists again).
func (x *txSystem) Slots() []checkpoint.Slot {
	return []checkpoint.Slot{
		{Name: "committed", Raw: true, Values: []arrow.Field{
			{Name: "part_file", Type: arrow.BinaryTypes.String},
			{Name: "length", Type: arrow.PrimitiveTypes.Int64},
		}},
		{Name: "adopted", Raw: true, Values: []arrow.Field{
			{Name: "subtask", Type: arrow.PrimitiveTypes.Int32},
			{Name: "part_file", Type: arrow.BinaryTypes.String},
			{Name: "length", Type: arrow.PrimitiveTypes.Int64},
		}},
	}
}

func (x *txSystem) AppendState(b *checkpoint.RowBuilder) {
	x.mu.Lock()
	committed := x.committed
	x.mu.Unlock()
	b.Raw("committed")
	b.Value("part_file").(*array.StringBuilder).Append(x.name)
	b.Value("length").(*array.Int64Builder).Append(committed)
	for _, a := range x.adopted {
		b.Raw("adopted")
		b.Value("subtask").(*array.Int32Builder).Append(int32(a.subtask))
		b.Value("part_file").(*array.StringBuilder).Append(a.name)
		b.Value("length").(*array.Int64Builder).Append(a.length)
	}
}

func (x *txSystem) ReadState(p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) error {
	if slot != "committed" && slot != "adopted" {
		return nil
	}
	l, _ := checkpoint.Column(rec, "length").(*array.Int64)
	pf, _ := checkpoint.Column(rec, "part_file").(*array.String)
	if l == nil || pf == nil {
		return fmt.Errorf("%s: bad %s row %d", p.Path, slot, i)
	}
	k := p.Subtask
	if slot == "adopted" {
		st, _ := checkpoint.Column(rec, "subtask").(*array.Int32)
		if st == nil {
			return fmt.Errorf("%s: bad adopted row %d", p.Path, i)
		}
		k = int(st.Value(i))
	}
	if x.files == nil {
		x.files = map[int]*partFile{}
	}
	f := x.files[k]
	if f == nil {
		f = &partFile{}
		x.files[k] = f
	}
	f.name = pf.Value(i)
	f.length = max(f.length, l.Value(i))
	return nil
}

// txCodec is a staged transaction's row: the staging file, the offset it
// starts at and its size; it is the part's subtask's.
var txCodec = txn.Rows[fileTxn]{Columns: []txn.Column[fileTxn]{
	txn.String("file", func(t *fileTxn) *string { return &t.file }),
	txn.Int64("base", func(t *fileTxn) *int64 { return &t.base }),
	txn.Int64("size", func(t *fileTxn) *int64 { return &t.size }),
}, Valid: func(t *fileTxn) bool { return t.file != "" && !strings.ContainsAny(t.file, `/\`) },
	Owner: func(t *fileTxn, p int) int { t.subtask = p; return p }}
