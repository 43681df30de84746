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

// Sink buffers rows as JSONEachRow lines and inserts them batch_rows at a
// time; a partly filled batch goes out batch_interval_ms after its first
// row (from a timer goroutine), at every checkpoint (SnapshotState) and on
// Flush. Inserts run one at a time, in the order the rows were written.
//
// A failed insert fails the job: its error is returned by the Write,
// Flush or SnapshotState that sent it or, for the timer's inserts, by the
// next call. The rows of a failed insert are not kept: the job restarts
// from its last checkpoint, which every row after it follows.
type Sink struct {
	name  string
	cfg   *config
	cl    *client
	enc   *encoder
	query string // INSERT INTO db.table (columns) FORMAT JSONEachRow
	// ctx is cancelled by Close: it abandons an insert in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below
	buf    []byte     // buffered rows, '\n'-terminated
	rows   int        // rows in buf
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

// newSink reads the table's columns and maps the Clink columns onto them.
func newSink(t *connectors.Table, c *config) (*Sink, error) {
	cl := newClient(c)
	cols, err := cl.describe(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the columns of %s: %w", c, err)
	}
	enc, err := newEncoder(t.Schema, c, cols)
	if err != nil {
		return nil, err
	}
	s := &Sink{
		name:  t.Name,
		cfg:   c,
		cl:    cl,
		enc:   enc,
		query: "INSERT INTO " + c.qualified() + " (" + enc.columnList(cols, t.Schema) + ") FORMAT JSONEachRow",
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

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
	before := len(s.buf)
	buf, err := s.enc.appendBatch(s.buf, b)
	s.buf = buf
	if err != nil {
		s.buf = s.buf[:before]
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
		body, n := s.cutLocked(all)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		if err := s.insert(body, n); err != nil {
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
func (s *Sink) cutLocked(all bool) ([]byte, int) {
	if s.rows == 0 || (!all && s.rows < s.cfg.rows) {
		return nil, 0
	}
	if s.rows <= s.cfg.rows {
		body, n := s.buf, s.rows
		s.buf, s.rows = nil, 0
		s.gen++
		if s.timer != nil {
			s.timer.Stop()
			s.timer = nil
		}
		return body, n
	}
	// The body and the remainder share the array: appends to the remainder
	// write after both.
	end := 0
	for range s.cfg.rows {
		end += bytes.IndexByte(s.buf[end:], '\n') + 1
	}
	body := s.buf[:end:end]
	s.buf = s.buf[end:]
	s.rows -= s.cfg.rows
	return body, s.cfg.rows
}

// insert sends one INSERT of n rows.
func (s *Sink) insert(body []byte, n int) error {
	if _, err := s.cl.do(s.ctx, s.query, body); err != nil {
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
	s.buf, s.rows = nil, 0
	s.mu.Unlock()
	s.cancel()
	s.sendMu.Lock() // waits for the insert in flight
	s.sendMu.Unlock()
	s.cl.http.CloseIdleConnections()
	return nil
}
