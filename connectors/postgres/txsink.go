package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the exactly-once sink (delivery_guarantee = 'exactly_once'):
// two-phase commit with PostgreSQL's prepared transactions. The rows
// between two checkpoint barriers go into one database transaction on the
// subtask's connection (COPY, or upsert statements, batch_rows at a time).
// PreCommit, at the barrier, sends the rest and runs PREPARE TRANSACTION
// with the global id
//
//	<prefix>:<subtask>:<seq>
//
// (seq grows by one per transaction of the subtask; the prefix names the
// job's sink table and its target: transaction_id_prefix). A prepared
// transaction is durable, survives the client and a server restart, and is
// invisible. SnapshotState lists the prepared transactions not yet
// committed under the checkpoint, with the subtask's prefix and next seq;
// Commit runs COMMIT PREPARED for those of checkpoints <= id once the
// checkpoint is complete, from a second connection (the first is busy
// with the next transaction).
//
// RestoreState commits the transactions the restored checkpoint lists
// (one no longer prepared was committed before: COMMIT PREPARED is
// idempotent this way) and rolls back every other prepared transaction of
// the prefix in the database: those the failed run prepared after the
// checkpoint, and those of subtasks that no longer exist after a rescale;
// subtask j takes the checkpoint's subtasks k and the prepared
// transactions of subtasks k with k mod parallelism = j. A fresh start
// rolls back what earlier runs left prepared under the prefix the same
// way.
//
// Without checkpoints (no StartTransactions) it refuses rows.
type TxSink struct {
	name    string
	cfg     *config
	tg      *target
	prefix  string
	subtask int
	// ctx is cancelled by Close: it abandons a statement in flight.
	ctx    context.Context
	cancel context.CancelFunc

	*txn.Ledger[*pgTxn]
	conn  *pgx.Conn // the open transaction's (the sink's goroutine only)
	buf   *buffer
	seq   int64         // the next transaction's sequence number
	cur   *pgTxn        // the open transaction (BEGIN sent), or nil
	lines []txn.Lineage // the restored checkpoint's (ReadState)

	ctlMu sync.Mutex // one Commit or recovery at a time
	ctl   *pgx.Conn  // for COMMIT/ROLLBACK PREPARED

	written   atomic.Int64
	committed atomic.Int64
	txns      atomic.Int64
}

// pgTxn is one transaction.
type pgTxn struct {
	gid  string
	seq  int64
	rows int64
}

var (
	_ engine.TwoPhaseSink  = (*TxSink)(nil)
	_ engine.StatsReporter = (*TxSink)(nil)
	_ txn.System[*pgTxn]   = (*txSystem)(nil)
	_ txn.Extra            = (*txSystem)(nil)
)

func newTxSink(t *connectors.Table, c *config, tg *target, conn *pgx.Conn) *TxSink {
	s := &TxSink{name: t.Name, cfg: c, tg: tg, prefix: c.prefix, subtask: t.Runtime.Subtask,
		conn: conn, buf: newBuffer(tg, c.upsert), seq: 1}
	if s.prefix == "" {
		s.prefix = defaultPrefix(t.Name, c.database, tg.table)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.Ledger = txn.New(fmt.Sprintf("postgres sink '%s'", s.name), (*txSystem)(s), txCodec, s.subtask, t.Runtime.Parallelism)
	return s
}

// maxPrefix keeps a global id (at most 199 bytes) with room for the
// subtask and seq.
const maxPrefix = 150

// defaultPrefix is clink-<Clink table>-<database>.<schema>.<table>, with
// characters other than letters, digits and _.-@/+ replaced by '_', and
// shortened with a hash of the whole when long.
func defaultPrefix(table, database string, tn tableName) string {
	full := "clink-" + table + "-" + database + "." + tn.schema + "." + tn.name
	p := sanitize(full)
	if len(p) > maxPrefix {
		h := fnv.New32a()
		h.Write([]byte(full))
		p = fmt.Sprintf("%s~%08x", p[:maxPrefix-9], h.Sum32())
	}
	return p
}

func prefixChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-@/+~", r)
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if prefixChar(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// checkPrefix validates a transaction_id_prefix.
func checkPrefix(p string) error {
	if p == "" || len(p) > maxPrefix {
		return fmt.Errorf("must have 1 to %d characters", maxPrefix)
	}
	for _, r := range p {
		if !prefixChar(r) {
			return fmt.Errorf("'%s' may hold only letters, digits and _ . - @ / + ~ (the global id is <prefix>:<subtask>:<seq>)", p)
		}
	}
	return nil
}

// gid is the global id of transaction seq of a subtask.
func gid(prefix string, subtask int, seq int64) string {
	return prefix + ":" + strconv.Itoa(subtask) + ":" + strconv.FormatInt(seq, 10)
}

// parseGID splits a global id of prefix into subtask and seq.
func parseGID(g, prefix string) (subtask int, seq int64, ok bool) {
	rest, ok := strings.CutPrefix(g, prefix+":")
	if !ok {
		return 0, 0, false
	}
	ks, ss, ok := strings.Cut(rest, ":")
	k, err1 := strconv.Atoi(ks)
	q, err2 := strconv.ParseInt(ss, 10, 64)
	if !ok || err1 != nil || err2 != nil || k < 0 {
		return 0, 0, false
	}
	return k, q, true
}

func (s *TxSink) errorf(format string, args ...any) error {
	return fmt.Errorf("postgres sink '%s': "+format, append([]any{s.name}, args...)...)
}

func (s *TxSink) needCheckpoints() error {
	return s.errorf("delivery_guarantee 'exactly_once' needs checkpoints (clink run --checkpoint-dir)")
}

func (s *TxSink) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, s.cfg.timeout)
}

// Stats reports rows written into transactions, and what this run
// committed.
func (s *TxSink) Stats() map[string]int64 {
	return map[string]int64{"rows_written": s.written.Load(), "rows_committed": s.committed.Load(), "transactions_committed": s.txns.Load()}
}

// Write encodes the batch's rows; a full buffer goes into the open
// transaction, begun if need be.
func (s *TxSink) Write(b *vector.Batch) error {
	defer b.Release()
	if !s.Active() {
		return s.needCheckpoints()
	}
	if err := s.Ready(); err != nil {
		return err
	}
	if err := s.buf.add(b); err != nil {
		return s.errorf("%s: %w", s.tg.where, err)
	}
	if s.buf.len() >= s.cfg.rows {
		return s.sendBuffer()
	}
	return nil
}

// sendBuffer writes the buffer into the open transaction.
func (s *TxSink) sendBuffer() error {
	if s.buf.len() == 0 {
		return nil
	}
	ctx, cancel := s.timeout()
	defer cancel()
	if s.cur == nil {
		if err := s.begin(ctx); err != nil {
			return err
		}
	}
	n, err := s.buf.send(ctx, s.conn.PgConn())
	if err != nil {
		s.buf.reset()
		return s.errorf("transaction %s: %w", s.cur.gid, err)
	}
	s.cur.rows += int64(n)
	s.written.Add(int64(n))
	return nil
}

// begin opens the next transaction.
func (s *TxSink) begin(ctx context.Context) error {
	if s.conn == nil || s.conn.IsClosed() {
		conn, err := s.cfg.connect(ctx)
		if err != nil {
			return s.errorf("%w", err)
		}
		s.conn = conn
	}
	t := &pgTxn{gid: gid(s.prefix, s.subtask, s.seq), seq: s.seq}
	if err := s.conn.PgConn().Exec(ctx, "BEGIN").Close(); err != nil {
		return s.errorf("%s: BEGIN of transaction %s: %s", s.tg.where, t.gid, describe(err))
	}
	s.cur = t
	s.seq++
	return nil
}

// PreCommit sends what is buffered and prepares the open transaction.
func (s *TxSink) PreCommit() error {
	if !s.Active() {
		return s.needCheckpoints()
	}
	if err := s.Ready(); err != nil {
		return err
	}
	if err := s.sendBuffer(); err != nil {
		return err
	}
	return s.Ledger.PreCommit()
}

// Flush is for runs without checkpoints, which this sink refuses.
func (s *TxSink) Flush() error {
	if !s.Active() {
		return s.needCheckpoints()
	}
	return nil
}

// Close closes the connections. An open transaction ends with its
// connection (the server rolls it back); prepared ones stay for recovery.
func (s *TxSink) Close() error {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.conn != nil {
		s.conn.Close(ctx)
		s.conn = nil
	}
	s.cur = nil
	s.ctlMu.Lock()
	if s.ctl != nil {
		s.ctl.Close(ctx)
		s.ctl = nil
	}
	s.ctlMu.Unlock()
	return nil
}

// control returns the connection for COMMIT/ROLLBACK PREPARED (ctlMu
// held), opening it on first use.
func (s *TxSink) control(ctx context.Context) (*pgx.Conn, error) {
	if s.ctl != nil && !s.ctl.IsClosed() {
		return s.ctl, nil
	}
	c, err := s.cfg.connect(ctx)
	if err != nil {
		return nil, err
	}
	s.ctl = c
	return c, nil
}

// commitPrepared runs COMMIT PREPARED; a transaction that is no longer
// prepared was committed before (by an earlier Commit, or a restore).
func (s *TxSink) commitPrepared(g string) error {
	ctx, cancel := s.timeout()
	defer cancel()
	c, err := s.control(ctx)
	if err != nil {
		return err
	}
	err = c.PgConn().Exec(ctx, "COMMIT PREPARED "+quoteLiteral(g)).Close()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42704" { // undefined_object: no such prepared transaction
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %s", s.tg.where, describe(err))
	}
	return nil
}

// rollbackLingering rolls back the prepared transactions in this database
// under the given prefixes whose subtask k has k mod par = subtask, except
// keep (ctlMu held).
func (s *TxSink) rollbackLingering(prefixes []string, par, subtask int, keep map[string]bool) error {
	ctx, cancel := s.timeout()
	defer cancel()
	c, err := s.control(ctx)
	if err != nil {
		return err
	}
	for _, prefix := range prefixes {
		rows, err := c.Query(ctx, "SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE database = current_database() AND left(gid, length($1)) = $1 ORDER BY prepared", prefix+":")
		if err != nil {
			return fmt.Errorf("listing prepared transactions in %s: %w", s.cfg, err)
		}
		gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("listing prepared transactions in %s: %w", s.cfg, err)
		}
		for _, g := range gids {
			k, _, ok := parseGID(g, prefix)
			if !ok || k%par != subtask || keep[g] {
				continue
			}
			err := c.PgConn().Exec(ctx, "ROLLBACK PREPARED "+quoteLiteral(g)).Close()
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "42704" {
				continue // ended meanwhile
			}
			if err != nil {
				return fmt.Errorf("rolling back prepared transaction %s in %s: %s", g, s.cfg, describe(err))
			}
		}
	}
	return nil
}

// txSystem is the sink's side of the ledger: prepared transactions.
type txSystem TxSink

// PreCommit prepares the open transaction (its rows were sent).
func (x *txSystem) PreCommit() ([]*pgTxn, error) {
	s := (*TxSink)(x)
	t := s.cur
	if t == nil {
		return nil, nil // nothing written since the last barrier
	}
	ctx, cancel := s.timeout()
	defer cancel()
	s.cur = nil // a failed PREPARE rolls the transaction back
	if err := s.conn.PgConn().Exec(ctx, "PREPARE TRANSACTION "+quoteLiteral(t.gid)).Close(); err != nil {
		return nil, s.errorf("%s: PREPARE TRANSACTION %s: %s", s.tg.where, t.gid, describe(err))
	}
	return []*pgTxn{t}, nil
}

// Commit runs COMMIT PREPARED for each, from the control connection.
func (x *txSystem) Commit(id uint64, txns []*pgTxn) error {
	s := (*TxSink)(x)
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	for _, t := range txns {
		if err := s.commitPrepared(t.gid); err != nil {
			return s.errorf("committing transaction %s of checkpoint %d: %w", t.gid, id, err)
		}
		s.committed.Add(t.rows)
		s.txns.Add(1)
	}
	return nil
}

// Abort rolls back the open transaction.
func (x *txSystem) Abort() error {
	s := (*TxSink)(x)
	s.buf.reset()
	t := s.cur
	if t == nil {
		return nil
	}
	s.cur = nil
	if s.conn == nil || s.conn.IsClosed() {
		return nil // the server rolled it back with the connection
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.conn.PgConn().Exec(ctx, "ROLLBACK").Close(); err != nil {
		return s.errorf("rolling back transaction %s: %s", t.gid, describe(err))
	}
	return nil
}

// Recover rolls back every prepared transaction of the prefixes (ours,
// and those the checkpoint's subtasks used) in this subtask's share that
// the checkpoint does not list, and continues the subtask's sequence.
func (x *txSystem) Recover(r *txn.Recovery[*pgTxn]) error {
	s := (*TxSink)(x)
	s.ctlMu.Lock()
	defer s.ctlMu.Unlock()
	keep := map[string]bool{}
	for _, t := range r.Committed {
		keep[t.Txn.gid] = true
	}
	prefixes := []string{s.prefix}
	s.seq = 1
	for _, l := range s.lines {
		if !r.Owns(l.Subtask) {
			continue
		}
		if l.Prefix == s.prefix && l.Subtask == s.subtask {
			s.seq = l.Next
		}
		if !slices.Contains(prefixes, l.Prefix) {
			prefixes = append(prefixes, l.Prefix)
		}
	}
	s.lines = nil
	if err := s.rollbackLingering(prefixes, r.Parallelism, r.Subtask, keep); err != nil {
		if r.Checkpoint == 0 {
			return s.errorf("%w", err)
		}
		return s.errorf("restoring checkpoint %d: %w", r.Checkpoint, err)
	}
	return nil
}

// Slots: besides the staged transactions, where each subtask's next
// transaction id starts (its prefix and seq).
func (x *txSystem) Slots() []checkpoint.Slot { return lineages.Slots() }

func (x *txSystem) AppendState(b *checkpoint.RowBuilder) {
	l := txn.Lineage{Subtask: x.subtask, Prefix: x.prefix, Next: x.seq}
	if x.cur != nil { // not pre-committed: a restore must roll it back
		l.Next = x.cur.seq
	}
	lineages.Append(b, l)
}

func (x *txSystem) ReadState(p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) error {
	var err error
	x.lines, err = lineages.Read(x.lines, p, slot, rec, i)
	return err
}

// lineages are the rows of slot next.
var lineages = txn.NewLineages("transaction_id_prefix")

// txCodec is a prepared transaction's row: its global id.
var txCodec = txn.Rows[pgTxn]{Columns: []txn.Column[pgTxn]{
	txn.String("gid", func(t *pgTxn) *string { return &t.gid }),
}, Valid: func(t *pgTxn) bool { return t.gid != "" }}
