package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Sink is the at-least-once sink. Rows are encoded as they arrive and
// sent batch_rows at a time; a partly filled batch goes out
// batch_interval_ms after its first row (from a timer), at every
// checkpoint barrier (the engine flushes sinks that are not two-phase, so
// a completed checkpoint covers only rows PostgreSQL holds) and at the end
// of input. An append batch is one COPY; an upsert batch one transaction
// of a DELETE and an INSERT ... ON CONFLICT.
//
// A failed write fails the job: its error is returned by the call that
// sent it or, for the timer's sends, by the next call. A restarted job
// writes the rows after its checkpoint again.
type Sink struct {
	name string
	cfg  *config
	tg   *target
	// ctx is cancelled by Close: it abandons a write in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards the fields below; held while sending
	conn   *pgx.Conn
	buf    *buffer
	timer  *time.Timer
	gen    uint64 // bumped when the buffer is sent: older timers are stale
	err    error  // the first failed write
	closed bool

	written atomic.Int64
	sends   atomic.Int64
}

var (
	_ engine.Sink          = (*Sink)(nil)
	_ engine.StatsReporter = (*Sink)(nil)
)

func newSink(t *connectors.Table, c *config, tg *target, conn *pgx.Conn) *Sink {
	s := &Sink{name: t.Name, cfg: c, tg: tg, conn: conn, buf: newBuffer(tg, c.upsert)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Stats reports the rows (upsert: the net changes) PostgreSQL
// acknowledged and the statements or transactions that wrote them.
func (s *Sink) Stats() map[string]int64 {
	return map[string]int64{"rows_written": s.written.Load(), "writes": s.sends.Load()}
}

func (s *Sink) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres sink '%s': "+format, append([]any{s.name}, args...)...)
}

// Write encodes the batch's live rows and sends a full buffer.
func (s *Sink) Write(b *vector.Batch) error {
	defer b.Release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failedLocked(); err != nil {
		return err
	}
	before := s.buf.len()
	if err := s.buf.add(b); err != nil {
		return s.errorf("%s: %w", s.tg.where, err)
	}
	if before == 0 && s.buf.len() > 0 && s.timer == nil {
		gen := s.gen
		s.timer = time.AfterFunc(s.cfg.interval, func() { s.onTimer(gen) })
	}
	if s.buf.len() >= s.cfg.rows {
		return s.sendLocked()
	}
	return nil
}

func (s *Sink) failedLocked() error {
	if s.closed {
		return s.errorf("closed")
	}
	return s.err
}

// onTimer sends the buffer whose first row armed the timer, unless it went
// out already.
func (s *Sink) onTimer(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == s.gen && !s.closed && s.err == nil {
		_ = s.sendLocked() // the error is kept for the next call
	}
}

// sendLocked writes the buffer; a failure is kept and fails every later
// call.
func (s *Sink) sendLocked() error {
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.buf.len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.timeout)
	defer cancel()
	n, err := s.send(ctx)
	if err != nil {
		s.err = s.errorf("%w", err)
		s.buf.reset()
		return s.err
	}
	s.written.Add(int64(n))
	s.sends.Add(1)
	return nil
}

func (s *Sink) send(ctx context.Context) (int, error) {
	if s.conn == nil || s.conn.IsClosed() {
		conn, err := s.cfg.connect(ctx)
		if err != nil {
			return 0, err
		}
		s.conn = conn
	}
	pc := s.conn.PgConn()
	if !s.cfg.upsert {
		return s.buf.send(ctx, pc)
	}
	// The DELETE and the INSERT of an upsert batch commit together.
	if err := pc.Exec(ctx, "BEGIN").Close(); err != nil {
		return 0, fmt.Errorf("%s: BEGIN: %s", s.tg.where, describe(err))
	}
	n, err := s.buf.send(ctx, pc)
	if err == nil {
		if err = pc.Exec(ctx, "COMMIT").Close(); err != nil {
			err = fmt.Errorf("%s: COMMIT: %s", s.tg.where, describe(err))
		}
	}
	if err != nil {
		_ = pc.Exec(ctx, "ROLLBACK").Close()
		return 0, err
	}
	return n, nil
}

// Flush sends every buffered row (at a checkpoint barrier and at the end
// of input).
func (s *Sink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.failedLocked(); err != nil {
		return err
	}
	return s.sendLocked()
}

// Close stops the timer and closes the connection; rows not yet flushed
// are dropped (the job failed or was stopped without draining).
func (s *Sink) Close() error {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.buf.reset()
	if s.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.conn.Close(ctx)
		s.conn = nil
	}
	return nil
}
