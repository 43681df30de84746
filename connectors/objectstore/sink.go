package objectstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// writer is the part Sink and TxSink share: it writes the rows of one
// subtask into Parquet files, rolls them by size and time, and uploads
// each closed file to the staging location. Without transactions a
// closed file is published at once; with them (TxSink after
// StartTransactions) it waits in staging for its checkpoint's Commit.
//
// Staged objects are <staging>/<subtask>/<run>-<seq>.parquet, <run> a
// random id of this process's sink; published ones are
// <path>/part-<run>-<subtask>-<checkpoint>-<n>.parquet (n counts the
// files of one checkpoint) with transactions, and
// <path>/part-<run>-<subtask>-<seq>.parquet without. A checkpoint records
// both names of its files, so a re-commit after a crash writes the same
// object again.
type writer struct {
	table       string
	pub, stage  location
	b           bucket
	subtask     int
	parallelism int
	maxBytes    int64
	interval    time.Duration
	codec       compress.Compression
	schema      *arrow.Schema
	mem         memory.Allocator
	ctx         context.Context

	run     string
	tx      bool
	started bool // staging cleaned up (fresh) or restored
	seq     int
	cur     *openFile
	// closed are the files closed and uploaded since the last
	// pre-commit, which hands them to the ledger (with transactions).
	closed []*stagedFile
	l      *txn.Ledger[*stagedFile] // with transactions (TxSink)

	rowsWritten    atomic.Int64
	filesPublished atomic.Int64
}

// openFile is the file rows go into.
type openFile struct {
	up     upload
	pq     *pqFile
	name   string // staging name
	opened time.Time
}

// stagedFile is a closed file in staging. Its final name is given when
// a checkpoint takes it (with transactions).
type stagedFile struct {
	staged string // name under the staging location
	final  string // name under the published location
	rows   int64
	size   int64
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (w *writer) errorf(format string, args ...any) error {
	return fmt.Errorf("parquet sink '%s' (%s): %w", w.table, w.pub, fmt.Errorf(format, args...))
}

// start runs on first use (not when the job is planned: a cluster plans
// jobs in processes that do not run them). Unless a restore did it, it
// deletes the staging objects of this subtask, and of the subtasks beyond
// the parallelism it covers (k mod parallelism = subtask), which a crashed
// earlier run left and no checkpoint lists.
func (w *writer) start() error {
	if w.started {
		return nil
	}
	w.started = true
	return w.cleanStaging(w.parallelism)
}

func (w *writer) cleanStaging(par int) error {
	par = max(par, 1)
	keys, err := w.b.List(w.ctx, w.stage.dirPrefix())
	if err != nil {
		return w.errorf("listing staging %s: %w", w.stage, err)
	}
	for _, k := range keys {
		rel := strings.TrimPrefix(k, w.stage.dirPrefix())
		sub, _, _ := strings.Cut(strings.ReplaceAll(rel, "\\", "/"), "/")
		n, err := strconv.Atoi(sub)
		if err != nil || !(n == w.subtask || (n >= par && n%par == w.subtask)) {
			continue
		}
		if err := w.b.Delete(w.ctx, k); err != nil {
			return w.errorf("deleting staged %s: %w", k, err)
		}
	}
	return nil
}

// Write appends the batch's live rows to the open file, beginning one if
// needed, and rolls it when it is big or old enough.
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
	rec, err := asSchema(c.Rec, w.schema)
	if err != nil {
		return w.errorf("%w", err)
	}
	defer rec.Release()
	if w.cur == nil {
		if err := w.begin(); err != nil {
			return err
		}
	}
	if err := w.cur.pq.write(rec); err != nil {
		return w.errorf("writing %s: %w", w.cur.name, err)
	}
	w.rowsWritten.Add(rec.NumRows())
	if w.cur.pq.size() >= w.maxBytes || time.Since(w.cur.opened) >= w.interval {
		return w.roll()
	}
	return nil
}

func (w *writer) begin() error {
	w.seq++
	name := fmt.Sprintf("%d/%s-%d.parquet", w.subtask, w.run, w.seq)
	up, err := w.b.Create(w.ctx, w.stage.key(name))
	if err != nil {
		return w.errorf("staging %s: %w", name, err)
	}
	pq, err := newPQFile(up, w.schema, w.codec, w.mem)
	if err != nil {
		up.Abort()
		return w.errorf("%w", err)
	}
	w.cur = &openFile{up: up, pq: pq, name: name, opened: time.Now()}
	return nil
}

// roll closes the open file and uploads it to staging; without
// transactions it is published at once.
func (w *writer) roll() error {
	f := w.cur
	if f == nil {
		return nil
	}
	w.cur = nil
	if err := f.pq.close(); err != nil {
		f.up.Abort()
		return w.errorf("closing %s: %w", f.name, err)
	}
	if err := f.up.Commit(w.ctx); err != nil {
		return w.errorf("uploading %s to %s: %w", f.name, w.stage, err)
	}
	sf := stagedFile{staged: f.name, rows: f.pq.rows, size: f.pq.out.n}
	if !w.tx {
		sf.final = fmt.Sprintf("part-%s-%d-%d.parquet", w.run, w.subtask, w.seq)
		return w.publish(sf)
	}
	w.closed = append(w.closed, &sf)
	return nil
}

// publish moves a staged file to its final name; redoing it is harmless.
func (w *writer) publish(f stagedFile) error {
	err := w.b.Move(w.ctx, w.stage.key(f.staged), w.pub.key(f.final))
	if errors.Is(err, errNotFound) {
		return w.errorf("%s is neither staged nor published (was the staging location changed?)", f.final)
	}
	if err != nil {
		return w.errorf("publishing %s as %s: %w", f.staged, f.final, err)
	}
	w.filesPublished.Add(1)
	return nil
}

// abort drops the open file.
func (w *writer) abort() error {
	f := w.cur
	if f == nil {
		return nil
	}
	w.cur = nil
	f.pq.close()
	return f.up.Abort()
}

// Stats counts rows written and files published by this run.
func (w *writer) Stats() map[string]int64 {
	return map[string]int64{"rows_written": w.rowsWritten.Load(), "files_published": w.filesPublished.Load()}
}

// Close drops a file still open (a job that stopped without its final
// flush or pre-commit); staged files stay for recovery.
func (w *writer) Close() error {
	err := w.abort()
	if cerr := w.b.Close(); err == nil {
		err = cerr
	}
	return err
}

// Sink writes Parquet files and publishes each as it is closed (at least
// once: 'delivery_guarantee' = 'at_least_once', or a job without
// checkpoints). A checkpoint barrier flushes: the open file is closed and
// published, so a completed checkpoint covers every row before it.
type Sink struct{ *writer }

var (
	_ engine.Sink          = Sink{}
	_ engine.StatsReporter = Sink{}
)

// Flush closes and publishes the open file.
func (s Sink) Flush() error {
	if err := s.start(); err != nil {
		return err
	}
	return s.roll()
}
