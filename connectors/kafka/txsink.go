package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/txn"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// TxSink is the Kafka sink's exactly-once mode (delivery_guarantee =
// 'exactly_once'), Flink's design, on the two-phase-commit ledger
// (connectors/txn). The rows between two checkpoint barriers go into one
// Kafka transaction with its own producer client and its own
// transactional id, <prefix>-<subtask>-<seq>, seq growing by one per
// transaction. PreCommit flushes the open transaction (every record is
// acknowledged, so durable) and keeps it open; the ledger lists it, with
// its producer id and epoch, under the checkpoint; Commit ends it with a
// commit once that checkpoint is complete. A read_committed consumer sees
// a checkpoint's rows then, and never the rows of an aborted transaction.
//
// A restore commits every transaction the restored checkpoint lists, from
// the recorded producer id and epoch (an EndTxn request of its own: the
// client that opened the transaction died with the job), then aborts the
// transactions the failed run opened after the checkpoint: it bumps the
// epoch of <prefix>-<subtask>-<seq> for seq from the checkpoint's next_seq
// upward (InitProducerID aborts an open transaction) and stops at the
// first id the coordinator has never seen (epoch 0). A fresh start aborts
// from seq 1 the same way and begins after the ids earlier runs used.
//
// Without checkpoints (no StartTransactions) it refuses rows.
type TxSink struct {
	reach   *reach // one for every client of the sink
	name    string
	topic   string
	cc      *ClientConfig
	admin   *kgo.Client // metadata and recovery requests
	format  *sinkFormat
	promise func(*kgo.Record, error) // acked, bound once
	prefix  string
	subtask int
	timeout time.Duration // transaction_timeout_ms
	warn    io.Writer

	*txn.Ledger[*kafkaTxn]
	seq   int64 // the next transaction's sequence number
	cur   *kafkaTxn
	lines []txn.Lineage // the restored checkpoint's (ReadState)
	// restoring is the checkpoint RestoreState restores.
	restoring uint64

	written   atomic.Int64 // rows acknowledged
	committed atomic.Int64 // rows committed by this run
	txns      atomic.Int64 // transactions committed by this run

	mu  sync.Mutex
	err error // the first record that failed
}

// kafkaTxn is one transaction and the client that writes it (none for a
// transaction a restored checkpoint lists).
type kafkaTxn struct {
	id    string
	seq   int64
	cl    *kgo.Client
	pid   int64 // known after PreCommit
	epoch int16
	rows  int64
}

var (
	_ engine.TwoPhaseSink   = (*TxSink)(nil)
	_ engine.StatsReporter  = (*TxSink)(nil)
	_ txn.System[*kafkaTxn] = (*txSystem)(nil)
	_ txn.Extra             = (*txSystem)(nil)
)

func newTxSink(t *connectors.Table) (*TxSink, error) {
	if err := checkSink(t); err != nil {
		return nil, err
	}
	cc, err := clientConfig(t.Options)
	if err != nil {
		return nil, err
	}
	timeout := t.Options.Int("transaction_timeout_ms")
	s := &TxSink{name: t.Name, topic: t.Options["topic"], cc: cc, prefix: t.Options["transactional_id_prefix"],
		subtask: t.Runtime.Subtask, timeout: time.Duration(timeout) * time.Millisecond, warn: t.Runtime.Stderr}
	if s.prefix == "" {
		s.prefix = "clink-" + t.Name
	}
	if s.warn == nil {
		s.warn = os.Stderr
	}
	if s.format, err = newSinkFormat(t, cc.timeout()); err != nil {
		return nil, err
	}
	s.promise = s.acked
	s.reach = newReach(fmt.Sprintf("kafka sink '%s' (topic %s)", t.Name, s.topic), strings.Join(cc.Brokers, ","), s.warn)
	if s.admin, err = cc.newClient(s.reach.opt()); err != nil {
		s.reach.close()
		return nil, err
	}
	if _, err := cc.partitions(context.Background(), s.admin, s.topic); err != nil {
		s.admin.Close()
		s.reach.close()
		return nil, err
	}
	s.Ledger = txn.New(fmt.Sprintf("kafka sink '%s'", s.name), (*txSystem)(s), txCodec, s.subtask, t.Runtime.Parallelism)
	return s, nil
}

// txnID names transaction seq of a subtask.
func txnID(prefix string, subtask int, seq int64) string {
	return fmt.Sprintf("%s-%d-%d", prefix, subtask, seq)
}

func (s *TxSink) errorf(format string, args ...any) error {
	return fmt.Errorf("kafka sink '%s': "+format, append([]any{s.name}, args...)...)
}

func (s *TxSink) needCheckpoints() error {
	return s.errorf("delivery_guarantee 'exactly_once' needs checkpoints (clink run --checkpoint-dir)")
}

// Stats reports rows acknowledged (written, not yet visible to
// read_committed consumers) and what this run committed.
func (s *TxSink) Stats() map[string]int64 {
	return map[string]int64{"rows_written": s.written.Load(), "rows_committed": s.committed.Load(), "transactions_committed": s.txns.Load()}
}

func (s *TxSink) acked(r *kgo.Record, err error) {
	if err == nil {
		s.written.Add(1)
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = s.errorf("topic %s partition %d: %w", r.Topic, r.Partition, err)
	}
	s.mu.Unlock()
}

func (s *TxSink) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Write produces the batch's live rows into the open transaction, opening
// one (a new client and transactional id) after each PreCommit.
func (s *TxSink) Write(b *vector.Batch) error {
	defer b.Release()
	if !s.Active() {
		return s.needCheckpoints()
	}
	if err := s.firstErr(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	if s.cur == nil {
		if err := s.begin(); err != nil {
			return err
		}
	}
	o, err := newOutBatch(b, s.topic, s.format, s.promise)
	if err != nil {
		return s.errorf("%v", err)
	}
	s.cur.rows += int64(o.produce(s.cur.cl))
	return nil
}

// begin opens the next transaction.
func (s *TxSink) begin() error {
	if err := s.Ready(); err != nil {
		return err
	}
	id := txnID(s.prefix, s.subtask, s.seq)
	cl, err := s.cc.newClient(
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(s.timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		kgo.DefaultProduceTopic(s.topic),
		s.reach.opt(),
	)
	if err != nil {
		return s.errorf("transaction %s: %w", id, err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return s.errorf("transaction %s: %w", id, err)
	}
	s.cur = &kafkaTxn{id: id, seq: s.seq, cl: cl}
	s.seq++
	return nil
}

// PreCommit stages the open transaction (see txSystem.PreCommit).
func (s *TxSink) PreCommit() error {
	if !s.Active() {
		return s.needCheckpoints()
	}
	return s.Ledger.PreCommit()
}

// RestoreState commits the transactions the checkpoint lists and aborts
// the ones the failed run opened after it (see TxSink).
func (s *TxSink) RestoreState(r *engine.Restore) error {
	s.restoring = r.ID
	return s.Ledger.RestoreState(r)
}

// Flush is for runs without checkpoints, which this sink refuses.
func (s *TxSink) Flush() error {
	if !s.Active() {
		return s.needCheckpoints()
	}
	return nil
}

// Close closes the clients. Closing does not end a transaction: the open
// one (if Abort was not called) and the staged ones stay for recovery or
// the brokers' timeout.
func (s *TxSink) Close() error {
	if s.cur != nil {
		s.cur.cl.Close()
		s.cur = nil
	}
	for _, t := range s.Drain() {
		if t.cl != nil {
			t.cl.Close()
		}
	}
	if s.admin != nil {
		s.admin.Close()
		s.admin = nil
	}
	if s.reach != nil {
		s.reach.close()
	}
	return nil
}

// txSystem is the sink's side of the ledger: Kafka transactions.
type txSystem TxSink

// PreCommit waits until every record of the open transaction is
// acknowledged and keeps the transaction open (staged) for Commit.
func (x *txSystem) PreCommit() ([]*kafkaTxn, error) {
	s := (*TxSink)(x)
	t := s.cur
	if t == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	err := t.cl.Flush(ctx)
	if err == nil {
		err = s.firstErr()
	}
	if err == nil {
		t.pid, t.epoch, err = t.cl.ProducerID(ctx)
	}
	if err != nil {
		return nil, s.errorf("transaction %s: %w", t.id, err)
	}
	s.cur = nil
	return []*kafkaTxn{t}, nil
}

// Commit ends the transactions with a commit: with their clients, or for
// restored ones from their producer id and epoch.
func (x *txSystem) Commit(id uint64, txns []*kafkaTxn) error {
	s := (*TxSink)(x)
	for _, t := range txns {
		if t.cl == nil {
			if err := s.commitListed(id, t); err != nil {
				return err
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
		err := t.cl.EndTransaction(ctx, kgo.TryCommit)
		cancel()
		if err != nil {
			return s.errorf("committing transaction %s of checkpoint %d: %w", t.id, id, err)
		}
		t.cl.Close()
		s.committed.Add(t.rows)
		s.txns.Add(1)
	}
	return nil
}

// commitListed commits a transaction a restored checkpoint lists.
func (s *TxSink) commitListed(id uint64, t *kafkaTxn) error {
	rc, done, err := s.recoveryClient()
	if err == nil {
		defer done()
		err = s.commitRecovered(rc, id, t)
	}
	if err != nil {
		return s.errorf("restoring checkpoint %d: %w", s.restoring, err)
	}
	return nil
}

// Abort aborts the open transaction.
func (x *txSystem) Abort() error {
	s := (*TxSink)(x)
	t := s.cur
	if t == nil {
		return nil
	}
	s.cur = nil
	defer t.cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.cc.timeout())
	defer cancel()
	err := t.cl.AbortBufferedRecords(ctx)
	if err == nil {
		err = t.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	if err != nil {
		return s.errorf("aborting transaction %s: %w", t.id, err)
	}
	return nil
}

// Recover aborts what the failed run (or, on a fresh start, earlier runs
// with the same prefix) left open after the checkpoint, and sets the next
// sequence number: after the checkpoint's for this subtask, or after the
// ids earlier runs used, so that a later restore's probe meets only this
// job's ids.
func (x *txSystem) Recover(r *txn.Recovery[*kafkaTxn]) error {
	s := (*TxSink)(x)
	rc, done, err := s.recoveryClient()
	if err != nil {
		return s.errorf("%w", err)
	}
	defer done()
	if r.Checkpoint == 0 {
		next, err := s.abortLingering(rc, s.prefix, s.subtask, 1)
		if err != nil {
			return s.errorf("%w", err)
		}
		s.seq = next
		return nil
	}
	var lines []txn.Lineage
	for _, l := range s.lines {
		if r.Owns(l.Subtask) {
			lines = append(lines, l)
		}
	}
	s.lines = nil
	own := false
	for _, l := range lines {
		if _, err := s.abortLingering(rc, l.Prefix, l.Subtask, l.Next); err != nil {
			return s.errorf("restoring checkpoint %d: %w", r.Checkpoint, err)
		}
		if l.Prefix == s.prefix && l.Subtask == s.subtask {
			s.seq, own = l.Next, true
		}
	}
	if !own { // a new subtask or prefix: as a fresh start
		next, err := s.abortLingering(rc, s.prefix, s.subtask, 1)
		if err != nil {
			return s.errorf("%w", err)
		}
		s.seq = next
	}
	// A crashed run at a higher parallelism than any the checkpoint knows
	// may have left open transactions of subtasks k >= parallelism, which
	// would hold read_committed consumers back until their timeout: abort
	// the ongoing ones under our prefix whose subtask this one covers
	// (k mod parallelism = subtask) and that no restored lineage names.
	known := map[int]bool{}
	for _, l := range lines {
		if l.Prefix == s.prefix {
			known[l.Subtask] = true
		}
	}
	if err := s.abortOrphans(rc, r.Parallelism, r.Subtask, known); err != nil {
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
var lineages = txn.NewLineages("transactional_id_prefix")

// txCodec is a staged transaction's row: its id, producer id and epoch.
var txCodec = txn.Rows[kafkaTxn]{Columns: []txn.Column[kafkaTxn]{
	txn.String("transactional_id", func(t *kafkaTxn) *string { return &t.id }),
	txn.Int64("producer_id", func(t *kafkaTxn) *int64 { return &t.pid }),
	txn.Int16("producer_epoch", func(t *kafkaTxn) *int16 { return &t.epoch }),
}, Valid: func(t *kafkaTxn) bool { return t.id != "" }}

// abortOrphans aborts the ongoing transactions <prefix>-<k>-<seq> with
// k >= par, k mod par = subtask and k not known, found by listing the
// cluster's ongoing transactions (Kafka 3.0+; on a broker that cannot
// list them, the transaction timeout aborts them instead).
func (s *TxSink) abortOrphans(rc *kgo.Client, par, subtask int, known map[int]bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cc.timeout())
	defer cancel()
	listed, err := kadm.NewClient(s.admin).ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		if s.warn != nil {
			fmt.Fprintf(s.warn, "clink: kafka sink '%s': cannot list ongoing transactions to abort those of removed subtasks (%v); they end at transaction_timeout_ms\n", s.name, err)
		}
		return nil
	}
	for _, t := range listed.Sorted() {
		rest, ok := strings.CutPrefix(t.TxnID, s.prefix+"-")
		if !ok {
			continue
		}
		ks, seqs, ok := strings.Cut(rest, "-")
		k, err1 := strconv.Atoi(ks)
		seq, err2 := strconv.ParseInt(seqs, 10, 64)
		if !ok || err1 != nil || err2 != nil || k < par || k%par != subtask || known[k] {
			continue
		}
		if _, err := s.abortLingering(rc, s.prefix, k, seq); err != nil {
			return err
		}
	}
	return nil
}

// recoveryClient is a client for EndTxn and InitProducerID requests of our
// own. It sends EndTxn at the version the transactions' clients used:
// franz-go uses KIP-890's v5 (which bumps the epoch at each commit) only
// when the cluster has finalized transaction.version 2, and v4 otherwise.
func (s *TxSink) recoveryClient() (*kgo.Client, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cc.timeout())
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, s.admin)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %v", ErrUnreachable, s.cc, err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" && f.MaxVersionLevel >= 2 {
			return s.admin, func() {}, nil
		}
	}
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	cl, err := s.cc.newClient(kgo.MaxVersions(v))
	if err != nil {
		return nil, nil, err
	}
	return cl, cl.Close, nil
}

// retry runs a coordinator request until it answers something other than
// a retriable error (CONCURRENT_TRANSACTIONS while the coordinator
// completes a commit or abort, COORDINATOR_LOAD_IN_PROGRESS, ...), for up
// to deliveryTimeout.
func retry(do func(ctx context.Context) (int16, error)) error {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	for {
		code, err := do(ctx)
		if err != nil {
			return err
		}
		err = kerr.ErrorForCode(code)
		if err == nil || !(errors.Is(err, kerr.ConcurrentTransactions) || kerr.IsRetriable(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still after %s)", err, deliveryTimeout)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// commitRecovered commits a listed transaction without its client. The
// coordinator's answers:
//
//   - none: committed now, or it had been (the same epoch, or with KIP-890
//     the epoch the commit bumped it to: a retry);
//   - PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before Kafka 2.7) or
//     INVALID_PRODUCER_ID_MAPPING: the transactional id has moved on since
//     (a newer epoch, or it expired), so the transaction ended long ago;
//     it counts as done, with a warning, since a transaction the brokers
//     aborted at its timeout answers this way on Kafka before 4.0;
//   - INVALID_TXN_STATE: the coordinator says it was aborted: its rows are
//     lost, an error.
func (s *TxSink) commitRecovered(cl *kgo.Client, ckpt uint64, t *kafkaTxn) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = t.id
	req.ProducerID = t.pid
	req.ProducerEpoch = t.epoch
	req.Commit = true
	err := retry(func(ctx context.Context) (int16, error) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		return resp.ErrorCode, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.InvalidProducerEpoch), errors.Is(err, kerr.InvalidProducerIDMapping):
		fmt.Fprintf(s.warn, "clink: kafka sink '%s': transaction %s of checkpoint %d was ended before (%v); counted as committed. If the brokers aborted it at its timeout instead, its rows are lost: transaction_timeout_ms (%d) must exceed the time a failed job takes to restart\n",
			s.name, t.id, ckpt, err, s.timeout.Milliseconds())
		return nil
	case errors.Is(err, kerr.InvalidTxnState):
		return fmt.Errorf("transaction %s of checkpoint %d was aborted, its rows are lost (did it outlive transaction_timeout_ms = %d?): %w", t.id, ckpt, s.timeout.Milliseconds(), err)
	}
	return fmt.Errorf("committing transaction %s of checkpoint %d: %w", t.id, ckpt, err)
}

// abortLingering aborts the transactions of ids <prefix>-<subtask>-<seq>
// from seq = from upward: InitProducerID bumps an id's epoch, which aborts
// its open transaction and fences its client. It stops at the first id the
// coordinator has never seen (it answers epoch 0; the ids of one run are
// consecutive, so none beyond was used after it) and returns its seq.
// An id forgotten by the coordinator (transactional.id.expiration.ms,
// 7 days idle) also answers 0, but it had no open transaction then, and any
// transaction older than transaction_timeout_ms is aborted by the brokers
// anyway.
func (s *TxSink) abortLingering(cl *kgo.Client, prefix string, subtask int, from int64) (int64, error) {
	for seq := from; ; seq++ {
		id := txnID(prefix, subtask, seq)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(s.timeout.Milliseconds())
		var epoch int16
		err := retry(func(ctx context.Context) (int16, error) {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return 0, err
			}
			epoch = resp.ProducerEpoch
			return resp.ErrorCode, nil
		})
		if errors.Is(err, kerr.InvalidTransactionTimeout) {
			return 0, &connectors.OptionError{Key: "transaction_timeout_ms", Msg: fmt.Sprintf("transaction_timeout_ms = %d is more than the brokers allow (transaction.max.timeout.ms)", s.timeout.Milliseconds())}
		}
		if err != nil {
			return 0, fmt.Errorf("aborting lingering transaction %s: %w", id, err)
		}
		if epoch == 0 {
			return seq, nil
		}
	}
}
