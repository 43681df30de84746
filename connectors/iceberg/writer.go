package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Row groups are cut at this many buffered Arrow bytes or rows.
const (
	rowGroupBytes   = 64 << 20
	maxRowGroupRows = 1 << 20
)

// writer is the part Sink and TxSink share: it writes the rows of one
// subtask into Parquet data files in the table's data directory, closes a
// file at target_file_size and when asked (roll), and commits closed
// files as snapshots (commitFiles).
type writer struct {
	cfg         *config
	subtask     int
	parallelism int
	schema      *arrow.Schema // the Clink table's
	mem         memory.Allocator
	ctx         context.Context

	// Set by open, on first use.
	cat     catalog.Catalog
	fio     iceio.WriteFileIO
	dataDir string // the table's data directory, a URI without a trailing slash
	lay     *layout

	tx      bool
	started bool // orphans cleaned up (fresh) or restored
	gen     int64
	seq     int64 // the next file's sequence number
	cur     *openFile

	mu sync.Mutex
	// staged are the closed files: not yet committed (without
	// checkpoints), or not yet handed to the ledger by a pre-commit.
	staged     []dataFile
	lastCommit time.Time
	runs       []runState             // other subtasks' runs this one adopted (restore)
	restored   map[int]runState       // the restored checkpoint's runs (ReadState)
	l          *txn.Ledger[*dataFile] // with transactions (TxSink)
	// commitMu makes commits one at a time and keeps Close from closing
	// the catalog under one.
	commitMu sync.Mutex

	rowsWritten        atomic.Int64
	filesCommitted     atomic.Int64
	snapshotsCommitted atomic.Int64
}

// dataFile is a closed data file.
type dataFile struct {
	subtask    int
	gen, seq   int64
	path       string
	rows, size int64
}

// runState is what a checkpoint says of one subtask's run: every data
// file of a generation below gen, or of gen below next, is committed or
// listed as pending.
type runState struct {
	subtask int
	gen     int64
	next    int64
}

// openFile is the data file rows go into.
type openFile struct {
	f          *syncCloser
	fw         *pqarrow.FileWriter
	out        *countingWriter
	path       string
	seq        int64
	rows       int64
	groupBytes int64 // Arrow bytes buffered in the open row group
}

func (w *writer) errorf(format string, args ...any) error { return w.cfg.errorf(format, args...) }

// open opens the catalog and the table (creating it if allowed) and
// checks that the Clink table's columns fit the table's. Subtasks and
// processes that start together race to create the catalog's tables, the
// namespace and the table; a failure is retried a few times.
func (w *writer) open() error {
	if w.cat != nil {
		return nil
	}
	sc, err := newSchema(w.schema)
	if err != nil {
		return w.errorf("%w", err)
	}
	wait := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var final bool
		final, err = w.openOnce(sc)
		var oe *connectors.OptionError
		if err == nil || final || errors.As(err, &oe) || attempt == 4 {
			break
		}
		time.Sleep(wait/2 + rand.N(wait/2+1))
		wait *= 2
	}
	if err != nil {
		return w.errorf("%w", err)
	}
	return nil
}

// openOnce tries once; final says that trying again cannot help (the
// table does not exist, or does not fit).
func (w *writer) openOnce(sc *ib.Schema) (final bool, err error) {
	cat, err := openCatalog(w.ctx, w.cfg)
	if err != nil {
		return false, err
	}
	tbl, err := loadTable(w.ctx, cat, w.cfg, sc)
	if err == nil {
		final = true
		err = w.useTable(tbl)
	} else {
		final = errors.Is(err, catalog.ErrNoSuchTable)
	}
	if err != nil {
		closeCatalog(cat)
		return final, err
	}
	w.cat = cat
	return false, nil
}

// useTable takes the table's layout, file IO and data directory.
func (w *writer) useTable(tbl *table.Table) error {
	if !tbl.Spec().IsUnpartitioned() {
		return fmt.Errorf("the table is partitioned (%s); the iceberg sink writes unpartitioned tables only", tbl.Spec())
	}
	lay, err := newLayout(w.schema, tbl.Schema())
	if err != nil {
		return err
	}
	fsys, err := tbl.FS(w.ctx)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("the table's file system (%T) cannot write files", fsys)
	}
	if _, ok := fsys.(iceio.ListableIO); !ok {
		return fmt.Errorf("the table's file system (%T) cannot list files", fsys)
	}
	dir := tbl.Properties()[table.WriteDataPathKey]
	if dir == "" {
		dir = trimSlash(tbl.Location()) + "/data"
	}
	w.lay, w.fio, w.dataDir = lay, wfs, trimSlash(dir)
	return nil
}

func trimSlash(s string) string {
	for len(s) > 1 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// start runs on first use (not when the job is planned: a cluster plans
// jobs in processes that do not run them). Unless a restore did it, it
// opens the table, deletes this sink's data files of this subtask (and of
// the subtasks beyond the parallelism it covers) that no snapshot
// references, and picks a new generation.
func (w *writer) start() error {
	if w.started {
		return nil
	}
	if err := w.open(); err != nil {
		return err
	}
	gen, err := w.cleanup(nil, nil)
	if err != nil {
		return err
	}
	w.gen, w.seq, w.started = gen+1, 0, true
	return nil
}

// Write appends the batch's live rows to the open file, beginning one if
// needed, and closes the file when it reaches target_file_size.
func (w *writer) Write(b *vector.Batch) error {
	defer b.Release()
	if err := w.start(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	c := b.Compact(w.mem)
	if c != b {
		defer c.Release()
	}
	rec, err := w.lay.convert(w.ctx, w.mem, c.Rec)
	if err != nil {
		return w.errorf("%w", err)
	}
	defer rec.Release()
	if w.cur == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	f := w.cur
	if err := f.fw.WriteBuffered(rec); err != nil {
		return w.errorf("writing %s: %w", f.path, err)
	}
	f.rows += rec.NumRows()
	w.rowsWritten.Add(rec.NumRows())
	f.groupBytes += recordBytes(rec)
	if f.groupBytes >= rowGroupBytes {
		f.groupBytes = 0
		if err := f.fw.NewBufferedRowGroupChecked(); err != nil {
			return w.errorf("writing %s: %w", f.path, err)
		}
	}
	if f.out.n+f.groupBytes >= w.cfg.targetSize {
		return w.roll()
	}
	return nil
}

// fileName is a data file's name: the sink's tag, the subtask, the
// generation and the sequence number make it unique.
func (w *writer) fileName(subtask int, gen, seq int64) string {
	return fmt.Sprintf("%s-%d-%d-%d.parquet", w.cfg.fileTag, subtask, gen, seq)
}

func (w *writer) begin() error {
	seq := w.seq
	w.seq++
	path := w.dataDir + "/" + w.fileName(w.subtask, w.gen, seq)
	fw, err := w.fio.Create(path)
	if err != nil {
		return w.errorf("creating %s: %w", path, err)
	}
	sc := &syncCloser{FileWriter: fw}
	out := &countingWriter{w: sc}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(w.cfg.codec),
		parquet.WithAllocator(w.mem),
		parquet.WithMaxRowGroupLength(maxRowGroupRows),
		parquet.WithCreatedBy("clink"),
	)
	pw, err := pqarrow.NewFileWriter(w.lay.file, out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(w.mem)))
	if err != nil {
		fw.Close()
		w.fio.Remove(path)
		return w.errorf("%w", err)
	}
	w.cur = &openFile{f: sc, fw: pw, out: out, path: path, seq: seq}
	return nil
}

// roll closes the open file (its footer written, flushed to stable
// storage) and stages it for the next commit.
func (w *writer) roll() error {
	f := w.cur
	if f == nil {
		return nil
	}
	w.cur = nil
	if err := f.fw.Close(); err != nil {
		w.fio.Remove(f.path)
		return w.errorf("closing %s: %w", f.path, err)
	}
	w.mu.Lock()
	w.staged = append(w.staged, dataFile{subtask: w.subtask, gen: w.gen, seq: f.seq, path: f.path, rows: f.rows, size: f.out.n})
	w.mu.Unlock()
	return nil
}

// abort drops the open file.
func (w *writer) abort() error {
	f := w.cur
	if f == nil {
		return nil
	}
	w.cur = nil
	f.fw.Close()
	return w.fio.Remove(f.path)
}

// commitStaged commits every closed file in one snapshot (without
// checkpoints) and forgets them.
func (w *writer) commitStaged() error {
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	w.mu.Lock()
	files := append([]dataFile(nil), w.staged...)
	w.mu.Unlock()
	if len(files) > 0 {
		if err := w.commitFiles(w.subtask, 0, files); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.staged = append(w.staged[:0], w.staged[len(files):]...)
	w.lastCommit = time.Now()
	w.mu.Unlock()
	return nil
}

// Stats counts the rows this run wrote and the files and snapshots it
// committed.
func (w *writer) Stats() map[string]int64 {
	return map[string]int64{"rows_written": w.rowsWritten.Load(), "files_committed": w.filesCommitted.Load(),
		"snapshots_committed": w.snapshotsCommitted.Load()}
}

// Close drops a file still open (a job that stopped before its final
// commit); closed files stay for recovery to commit or delete.
func (w *writer) Close() error {
	err := w.abort()
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	if w.cat != nil {
		if cerr := closeCatalog(w.cat); err == nil {
			err = cerr
		}
		w.cat = nil
	}
	return err
}

// syncCloser flushes a local file to stable storage before closing it
// (an object store's upload completes at Close).
type syncCloser struct{ iceio.FileWriter }

func (s *syncCloser) Close() error {
	if f, ok := s.FileWriter.(interface{ Sync() error }); ok {
		if err := f.Sync(); err != nil {
			s.FileWriter.Close()
			return err
		}
	}
	return s.FileWriter.Close()
}

type countingWriter struct {
	w *syncCloser
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Close() error { return c.w.Close() }

var _ io.WriteCloser = (*countingWriter)(nil)

// recordBytes is the size of rec's buffers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	var add func(d arrow.ArrayData)
	add = func(d arrow.ArrayData) {
		for _, b := range d.Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
		for _, c := range d.Children() {
			add(c)
		}
	}
	for _, c := range rec.Columns() {
		add(c.Data())
	}
	return n
}

// Sink writes data files and commits them at every checkpoint barrier
// (Flush), every commit_interval_ms and at the end of input: at least
// once ('delivery_guarantee' = 'at_least_once' or 'none'). A restarted
// job writes the rows after its checkpoint again.
type Sink struct{ *writer }

var (
	_ engine.Sink          = Sink{}
	_ engine.StatsReporter = Sink{}
)

// Write writes the batch and commits when commit_interval_ms has passed
// since the last commit.
func (s Sink) Write(b *vector.Batch) error {
	if err := s.writer.Write(b); err != nil {
		return err
	}
	return s.commitIfDue()
}

// Flush closes the open file and commits every closed one.
func (s Sink) Flush() error {
	if err := s.start(); err != nil {
		return err
	}
	if err := s.roll(); err != nil {
		return err
	}
	return s.commitStaged()
}

func (s Sink) commitIfDue() error {
	s.mu.Lock()
	if s.lastCommit.IsZero() {
		s.lastCommit = time.Now()
	}
	due := time.Since(s.lastCommit) >= s.cfg.interval
	s.mu.Unlock()
	if !due {
		return nil
	}
	return s.Flush()
}
