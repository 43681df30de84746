package clickhouse

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Sink buffers rows (as JSONEachRow lines for HTTP, as column values for
// the native protocol) and inserts them batch_rows at a time; a partly filled batch goes out batch_interval_ms after its first
// row (from a timer goroutine), at every checkpoint (SnapshotState) and on
// Flush. Inserts run one at a time, in the order the rows were written.
//
// A failed insert fails the job: its error is returned by the Write,
// Flush or SnapshotState that sent it or, for the timer's inserts, by the
// next call. The rows of a failed insert are not kept: the job restarts
// from its last checkpoint, which every row after it follows.
type Sink struct {
	name     string
	cfg      *config
	protocol string // http or native: what the port answered at submission
	w        writer
	// ctx is cancelled by Close: it abandons an insert in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below
	rows   int        // rows buffered in w
	gen    uint64     // bumped when buf is emptied: older timers are stale
	timer  *time.Timer
	err    error // the first failed insert
	closed bool

	sendMu sync.Mutex // one insert at a time

	written atomic.Int64
	inserts atomic.Int64
}

var (
	_ engine.Sink          = (*Sink)(nil)
	_ engine.Stateful      = (*Sink)(nil)
	_ engine.StatsReporter = (*Sink)(nil)
)

// writer is one protocol's buffer and INSERT. The Sink serializes its
// calls: append and cut under the Sink's mu, insert under sendMu.
type writer interface {
	// append encodes b's live rows onto the buffer: all of them or, on an
	// error naming the column and value, none.
	append(b *vector.Batch) error
	// cut takes the first n buffered rows off the buffer (all of them when
	// n is the number buffered).
	cut(n int) any
	// insert sends one INSERT of a cut part.
	insert(ctx context.Context, part any) error
	// reset drops the buffer.
	reset()
	close()
}

// newSink finds the protocol, reads the table's columns and maps the Clink
// columns onto them.
func newSink(t *connectors.Table, c *config) (*Sink, error) {
	protocol, nc, err := detect(c)
	if err != nil {
		return nil, err
	}
	var w writer
	if protocol == protoNative {
		w, err = newNativeWriter(t, c, nc)
	} else {
		w, err = newHTTPWriter(t, c)
	}
	if err != nil {
		return nil, err
	}
	s := &Sink{name: t.Name, cfg: c, protocol: protocol, w: w}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// httpWriter buffers JSONEachRow lines for INSERT ... FORMAT JSONEachRow.
type httpWriter struct {
	cl    *client
	enc   *encoder
	query string // INSERT INTO db.table (columns) FORMAT JSONEachRow
	buf   []byte // buffered rows, '\n'-terminated
	rows  int
}

func newHTTPWriter(t *connectors.Table, c *config) (*httpWriter, error) {
	cl := newClient(c)
	cols, err := cl.describe(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", c, err)
	}
	enc, err := newEncoder(t.Schema, c, cols)
	if err != nil {
		return nil, err
	}
	return &httpWriter{cl: cl, enc: enc, query: "INSERT INTO " + c.qualified() + " (" + columnList(cols, t.Schema) + ") FORMAT JSONEachRow"}, nil
}

func (w *httpWriter) append(b *vector.Batch) error {
	before := len(w.buf)
	buf, err := w.enc.appendBatch(w.buf, b)
	if err != nil {
		w.buf = buf[:before]
		return err
	}
	w.buf = buf
	w.rows += b.Len()
	return nil
}

func (w *httpWriter) cut(n int) any {
	if n >= w.rows {
		body := w.buf
		w.buf, w.rows = nil, 0
		return body
	}
	// The body and the remainder share the array: appends to the remainder
	// write after both.
	end := 0
	for range n {
		end += bytes.IndexByte(w.buf[end:], '\n') + 1
	}
	body := w.buf[:end:end]
	w.buf = w.buf[end:]
	w.rows -= n
	return body
}

func (w *httpWriter) insert(ctx context.Context, part any) error {
	_, err := w.cl.do(ctx, w.query, part.([]byte))
	return err
}

func (w *httpWriter) reset() { w.buf, w.rows = nil, 0 }
func (w *httpWriter) close() { w.cl.http.CloseIdleConnections() }

// nativeWriter buffers one value slice per column for a native INSERT.
type nativeWriter struct {
	nc    *nativeClient
	enc   *nativeEncoder
	query string // INSERT INTO db.table (columns)
	cols  [][]any
}

func newNativeWriter(t *connectors.Table, c *config, nc *nativeClient) (*nativeWriter, error) {
	cols, err := nc.describe(context.Background())
	if err != nil {
		nc.conn.Close()
		return nil, fmt.Errorf("reading the columns of %s (native protocol, server %s): %w", c, nc.version, err)
	}
	enc, err := newNativeEncoder(t.Schema, c, cols)
	if err != nil {
		nc.conn.Close()
		return nil, err
	}
	return &nativeWriter{nc: nc, enc: enc, query: "INSERT INTO " + c.qualified() + " (" + columnList(cols, t.Schema) + ")"}, nil
}

func (w *nativeWriter) append(b *vector.Batch) error {
	cols, err := w.enc.appendBatch(w.cols, b)
	w.cols = cols
	return err
}

func (w *nativeWriter) cut(n int) any {
	part := make([][]any, len(w.cols))
	for c, vals := range w.cols {
		if n >= len(vals) {
			part[c], w.cols[c] = vals, nil
			continue
		}
		part[c], w.cols[c] = vals[:n:n], vals[n:]
	}
	return part
}

func (w *nativeWriter) insert(ctx context.Context, part any) error {
	return w.nc.insert(ctx, w.query, part.([][]any))
}

func (w *nativeWriter) reset() { w.cols = nil }
func (w *nativeWriter) close() { w.nc.conn.Close() }

// Stats reports rows ClickHouse acknowledged and INSERTs sent.
func (s *Sink) Stats() map[string]int64 {
	return map[string]int64{"rows_written": s.written.Load(), "inserts": s.inserts.Load()}
}

// Write buffers the batch's live rows and inserts every full batch.
func (s *Sink) Write(b *vector.Batch) error {
	defer b.Release()
	if b.Kinds != nil {
		// The planner refuses changelogs for this sink (no AcceptsUpdates).
		return fmt.Errorf("clickhouse sink '%s': cannot write a changelog", s.name)
	}
	n := b.Len()
	s.mu.Lock()
	if err := s.failedLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.w.append(b); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("clickhouse sink '%s' (%s): %w", s.name, s.cfg, err)
	}
	if s.rows == 0 && n > 0 {
		gen := s.gen
		s.timer = time.AfterFunc(s.cfg.interval, func() { s.onTimer(gen) })
	}
	s.rows += n
	full := s.rows >= s.cfg.rows
	s.mu.Unlock()
	if full {
		return s.send(false)
	}
	return nil
}

// failedLocked is the error that stopped the sink, or nil.
func (s *Sink) failedLocked() error {
	if s.closed {
		return fmt.Errorf("clickhouse sink '%s': closed", s.name)
	}
	return s.err
}

// onTimer sends the buffer whose first row armed the timer, unless it went
// out already (the generation moved on).
func (s *Sink) onTimer(gen uint64) {
	s.mu.Lock()
	stale := gen != s.gen || s.closed || s.err != nil
	s.mu.Unlock()
	if !stale {
		_ = s.send(true) // the error is kept for the next call
	}
}

// send inserts the buffered rows: every full batch, and with all the
// partly filled one too.
func (s *Sink) send(all bool) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for {
		s.mu.Lock()
		if err := s.failedLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
		part, n := s.cutLocked(all)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if err := s.insert(part, n); err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
			return err
		}
	}
}

// cutLocked takes the first batch_rows rows off the buffer, or with all
// whatever it holds. A buffer emptied this way disarms its timer; a
// remainder keeps it, since its first row came after the one that armed
// it.
func (s *Sink) cutLocked(all bool) (any, int) {
	if s.rows == 0 || (!all && s.rows < s.cfg.rows) {
		return nil, 0
	}
	if s.rows <= s.cfg.rows {
		part, n := s.w.cut(s.rows), s.rows
		s.rows = 0
		s.gen++
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		return part, n
	}
	s.rows -= s.cfg.rows
	return s.w.cut(s.cfg.rows), s.cfg.rows
}

// insert sends one INSERT of n rows.
func (s *Sink) insert(part any, n int) error {
	if err := s.w.insert(s.ctx, part); err != nil {
		return fmt.Errorf("clickhouse sink '%s': insert of %d rows into %s: %w", s.name, n, s.cfg, err)
	}
	s.written.Add(int64(n))
	s.inserts.Add(1)
	return nil
}

// Flush inserts every buffered row.
func (s *Sink) Flush() error { return s.send(true) }

// SnapshotState inserts every buffered row, so that a completed checkpoint
// covers only rows ClickHouse holds (at-least-once). The sink keeps no
// state: it writes no part.
func (s *Sink) SnapshotState(*engine.Snapshot) error {
	s.mu.Lock()
	closed := s.closed // a finished sink, snapshotted by a later checkpoint
	s.mu.Unlock()
	if closed {
		return nil
	}
	return s.send(true)
}

// RestoreState does nothing: there is no state, and the rows after the
// restored checkpoint are written again.
func (s *Sink) RestoreState(*engine.Restore) error { return nil }

// Close stops the timer, abandons an insert in flight and waits for it to
// return; rows not yet flushed are dropped (the job failed or was stopped
// without draining).
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.w.reset()
	s.rows = 0
	s.mu.Unlock()
	s.cancel()
	s.sendMu.Lock() // waits for the insert in flight
	s.sendMu.Unlock()
	s.w.close()
	return nil
}
