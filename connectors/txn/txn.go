// Package txn is the one two-phase-commit ledger every exactly-once sink
// uses (engine.TwoPhaseSink). The ledger keeps the bookkeeping: the
// transactions a sink pre-committed (staged: durable, invisible) and the
// checkpoint each belongs to, their rows in the sink's state part, the
// order and idempotency of commits, and recovery on restore. A sink says
// only how to pre-commit, commit, abort and recover in its own system (a
// System): Kafka transactions, PostgreSQL prepared transactions, staged
// files, staged objects, Iceberg snapshots.
//
// The life of a transaction:
//
//   - the sink writes into its open transaction (its own: a producer, a
//     connection, a file);
//   - at a barrier the engine calls PreCommit: the ledger asks the system
//     to stage what is open (System.PreCommit) and keeps what it staged;
//   - SnapshotState assigns the staged transactions without a checkpoint
//     to this one and writes every staged one into the sink's state part
//     (slot "pending": checkpoint_id and the system's columns), with the
//     system's own rows (Extra);
//   - when the checkpoint is complete (its manifest written), Commit(id)
//     commits the staged transactions of checkpoints <= id, a checkpoint
//     at a time and in order (System.Commit, which must be idempotent: a
//     crash may cut it short, and recovery does it again);
//   - RestoreState reads the checkpoint's pending rows of the subtasks
//     this subtask takes over (k mod parallelism = subtask), commits them
//     again (roll forward) and then lets the system roll back everything
//     else it finds staged in that share (System.Recover), including what
//     subtasks that a lower parallelism no longer has left behind. A job
//     that starts without a checkpoint recovers the same way, with nothing
//     to roll forward, on first use.
//
// The ledger is also where the SIGKILL test hook lives (KillEnv): every
// exactly-once sink passes through it at each two-phase point.
package txn

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
)

// System is one sink's side of two-phase commit, in its own system. T is
// its transaction: what it needs to commit one later, also in another
// process after a crash (an id, a file name, a producer epoch).
type System[T any] interface {
	// PreCommit stages the open transaction, if any: what it holds is
	// durable and invisible. It returns the transactions staged since the
	// previous call, in order (none if nothing was written; several when
	// the sink closed files between barriers).
	PreCommit() ([]T, error)
	// Commit makes the staged transactions of checkpoint id visible, in
	// order. It must be idempotent: a transaction may have been committed
	// before (a crash came between the commit and the ledger's record of
	// it). It may run in another goroutine than the writes.
	Commit(id uint64, txns []T) error
	// Abort discards the open transaction (the job stops without
	// finishing); staged ones stay for recovery to decide.
	Abort() error
	// Recover runs after the roll forward of a restore, and on a fresh
	// start (r.Checkpoint 0, nothing committed): it rolls back every
	// staged transaction the system holds of the subtasks r.Owns that
	// r.Committed does not name, and readies the system to begin new
	// ones.
	Recover(r *Recovery[T]) error
}

// Codec writes and reads a staged transaction as a row of the "pending"
// slot, after its checkpoint_id column.
type Codec[T any] interface {
	// Fields are the pending slot's columns after checkpoint_id.
	Fields() []arrow.Field
	// Append sets the row's columns (b.Raw("pending") was called).
	Append(b *checkpoint.RowBuilder, t T)
	// Read reads row i, of state part p, and says which subtask's it is
	// (usually p.Subtask; a part may list a removed subtask's that it
	// adopted).
	Read(p *checkpoint.Part, rec arrow.RecordBatch, i int) (t T, subtask int, err error)
}

// Extra is a System with state of its own beside the pending rows (the
// next transaction id, a committed length): slots after "pending".
type Extra interface {
	Slots() []checkpoint.Slot
	// AppendState adds the system's rows at SnapshotState.
	AppendState(b *checkpoint.RowBuilder)
	// ReadState reads row i of one of its slots, of any subtask's part,
	// at RestoreState, before anything is committed.
	ReadState(p *checkpoint.Part, slot string, rec arrow.RecordBatch, i int) error
}

// Assigner is a System that completes staged transactions when a
// checkpoint takes them (names them after it), before they are recorded.
type Assigner[T any] interface {
	Assign(id uint64, txns []T)
}

// Staged is a pre-committed transaction, the checkpoint that covers it (0
// until a snapshot assigns one) and the subtask that wrote it.
type Staged[T any] struct {
	Checkpoint uint64
	Subtask    int
	Txn        T
}

// Recovery is what System.Recover decides on.
type Recovery[T any] struct {
	// Checkpoint is the restored checkpoint; 0 on a fresh start.
	Checkpoint  uint64
	Subtask     int
	Parallelism int
	// Committed are the restored checkpoint's staged transactions of the
	// subtasks this one owns, in checkpoint order, all committed now.
	Committed []Staged[T]
}

// Owns reports whether this subtask takes over subtask k's transactions:
// its own, and those of subtasks k >= parallelism with k mod parallelism
// = subtask (a crashed run at a higher parallelism left them).
func (r *Recovery[T]) Owns(k int) bool { return Owns(k, r.Subtask, r.Parallelism) }

// Owns reports whether subtask of a job at parallelism par takes over the
// transactions of subtask k.
func Owns(k, subtask, par int) bool { return k >= 0 && k%max(par, 1) == subtask }

// ErrNoTransactions is returned by PreCommit of a ledger that was not
// started (the job runs without checkpoints).
var ErrNoTransactions = errors.New("two-phase commit without checkpoints")

// PendingSlot is the slot of the staged transactions.
const PendingSlot = "pending"

// Ledger is one sink subtask's two-phase-commit bookkeeping. Its methods
// are engine.TwoPhaseSink's: a sink embeds it, or delegates to it. Commit may
// run in another goroutine than the others; everything else runs in the
// sink's goroutine.
type Ledger[T any] struct {
	what    string // the sink, for errors
	sys     System[T]
	codec   Codec[T]
	subtask int
	par     int

	tx    bool // StartTransactions was called
	ready bool // restored or recovered fresh

	commitMu sync.Mutex // one Commit or restore at a time
	mu       sync.Mutex
	staged   []Staged[T] // in order; only Commit removes, from the front

	// The test hook's counters (this process's checkpoints).
	preCommits, snapshots int
	killID                uint64 // the checkpoint of the hook's n-th snapshot
}

// New returns the ledger of a sink's subtask of a job at parallelism
// par; sys may also implement Extra and Assigner. what names the sink in
// the ledger's errors (the system's errors are returned as they are).
func New[T any](what string, sys System[T], codec Codec[T], subtask, par int) *Ledger[T] {
	return &Ledger[T]{what: what, sys: sys, codec: codec, subtask: subtask, par: max(par, 1)}
}

func (l *Ledger[T]) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", l.what, fmt.Errorf(format, args...))
}

// StartTransactions switches the sink to two-phase commit.
func (l *Ledger[T]) StartTransactions() error {
	l.tx = true
	return nil
}

// Active reports whether StartTransactions was called.
func (l *Ledger[T]) Active() bool { return l.tx }

// Ready recovers a fresh job on first use (not when the job is planned:
// a cluster plans jobs in processes that do not run them): unless
// RestoreState ran, the system rolls back what earlier runs left staged
// in this subtask's share. Sinks call it before they begin a transaction.
func (l *Ledger[T]) Ready() error {
	if l.ready || !l.tx {
		return nil
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if err := l.sys.Recover(&Recovery[T]{Subtask: l.subtask, Parallelism: l.par}); err != nil {
		return err
	}
	l.ready = true
	return nil
}

// PreCommit stages the open transaction (at a barrier, and at the end of
// input).
func (l *Ledger[T]) PreCommit() error {
	if !l.tx {
		return l.errorf("%w", ErrNoTransactions)
	}
	if err := l.Ready(); err != nil {
		return err
	}
	l.preCommits++
	hit(BeforePreCommit, l.preCommits, 0)
	txns, err := l.sys.PreCommit()
	if err != nil || len(txns) == 0 {
		return err
	}
	l.mu.Lock()
	for _, t := range txns {
		l.staged = append(l.staged, Staged[T]{Subtask: l.subtask, Txn: t})
	}
	l.mu.Unlock()
	return nil
}

// slots are the part's slots: pending, then the system's.
func (l *Ledger[T]) slots() []checkpoint.Slot {
	pending := checkpoint.Slot{Name: PendingSlot, Raw: true,
		Values: append([]arrow.Field{{Name: "checkpoint_id", Type: arrow.PrimitiveTypes.Int64}}, l.codec.Fields()...)}
	out := []checkpoint.Slot{pending}
	if x, ok := l.sys.(Extra); ok {
		out = append(out, x.Slots()...)
	}
	return out
}

// SnapshotState assigns the staged transactions without a checkpoint to
// this one and records every staged transaction not yet committed, and
// the system's own state.
func (l *Ledger[T]) SnapshotState(snap *engine.Snapshot) error {
	if !l.tx {
		return nil
	}
	if err := l.Ready(); err != nil {
		return err
	}
	l.mu.Lock()
	l.snapshots++
	if hook := killAt(); hook.n == l.snapshots && l.killID == 0 {
		l.killID = snap.ID
	}
	l.mu.Unlock()
	staged := l.Assign(snap.ID)
	p, err := snap.Open(l.slots())
	if err != nil {
		return err
	}
	b := checkpoint.NewRowBuilder(snap.Mem, p.Schema())
	defer b.Release()
	for _, s := range staged {
		b.Raw(PendingSlot)
		b.Value("checkpoint_id").(*array.Int64Builder).Append(int64(s.Checkpoint))
		l.codec.Append(b, s.Txn)
	}
	if x, ok := l.sys.(Extra); ok {
		x.AppendState(b)
	}
	if err := p.WriteRows(b); err != nil {
		return err
	}
	hit(AfterPreCommit, l.snapshots, snap.ID)
	return nil
}

// Assign gives the staged transactions without a checkpoint to
// checkpoint id (SnapshotState does; a benchmark without a store may) and
// returns every staged one.
func (l *Ledger[T]) Assign(id uint64) []Staged[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	var fresh []T
	for i := range l.staged {
		if l.staged[i].Checkpoint == 0 {
			l.staged[i].Checkpoint = id
			fresh = append(fresh, l.staged[i].Txn)
		}
	}
	if a, ok := l.sys.(Assigner[T]); ok && len(fresh) > 0 {
		a.Assign(id, fresh)
	}
	return append([]Staged[T](nil), l.staged...)
}

// Commit commits the staged transactions of checkpoints <= id, one
// checkpoint at a time, in order. Redone, it does nothing more.
func (l *Ledger[T]) Commit(id uint64) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	l.mu.Lock()
	killID := l.killID
	var due []Staged[T]
	for _, s := range l.staged {
		if s.Checkpoint == 0 || s.Checkpoint > id {
			break
		}
		due = append(due, s)
	}
	l.mu.Unlock()
	hook := killAt()
	if killID != 0 && id >= killID {
		hit(AfterManifest, hook.n, id)
	}
	for len(due) > 0 {
		n := 1
		for n < len(due) && due[n].Checkpoint == due[0].Checkpoint {
			n++
		}
		if err := l.sys.Commit(due[0].Checkpoint, txnsOf(due[:n])); err != nil {
			return err
		}
		l.mu.Lock()
		l.staged = l.staged[n:]
		l.mu.Unlock()
		due = due[n:]
	}
	if killID != 0 && id >= killID {
		hit(AfterCommit, hook.n, id)
	}
	return nil
}

func txnsOf[T any](s []Staged[T]) []T {
	out := make([]T, len(s))
	for i := range s {
		out[i] = s[i].Txn
	}
	return out
}

// RestoreState rolls forward what the checkpoint lists for the subtasks
// this one owns (System.Commit, checkpoint by checkpoint in order) and
// then has the system roll back everything else it finds staged in that
// share (System.Recover).
func (l *Ledger[T]) RestoreState(r *engine.Restore) error {
	if !l.tx {
		return l.errorf("restore without transactions")
	}
	rec := &Recovery[T]{Checkpoint: r.ID, Subtask: r.Subtask, Parallelism: max(r.Parallelism, 1)}
	l.par = rec.Parallelism
	x, _ := l.sys.(Extra)
	var listed []Staged[T]
	for _, part := range r.Parts {
		for _, b := range part.Records {
			slot, _ := b.Column(0).(*array.String)
			if slot == nil {
				return l.errorf("%s: no slot column", part.Path)
			}
			for i := 0; i < int(b.NumRows()); i++ {
				if slot.Value(i) != PendingSlot {
					if x != nil {
						if err := x.ReadState(part, slot.Value(i), b, i); err != nil {
							return err
						}
					}
					continue
				}
				ck, _ := checkpoint.Column(b, "checkpoint_id").(*array.Int64)
				if ck == nil || ck.IsNull(i) || ck.Value(i) <= 0 {
					return l.errorf("%s: bad pending row %d", part.Path, i)
				}
				t, k, err := l.codec.Read(part, b, i)
				if err != nil {
					return l.errorf("%s: %w", part.Path, err)
				}
				if rec.Owns(k) {
					listed = append(listed, Staged[T]{Checkpoint: uint64(ck.Value(i)), Subtask: k, Txn: t})
				}
			}
		}
	}
	sort.SliceStable(listed, func(i, j int) bool { return listed[i].Checkpoint < listed[j].Checkpoint })
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	for due := listed; len(due) > 0; {
		n := 1
		for n < len(due) && due[n].Checkpoint == due[0].Checkpoint {
			n++
		}
		if err := l.sys.Commit(due[0].Checkpoint, txnsOf(due[:n])); err != nil {
			return err
		}
		due = due[n:]
	}
	rec.Committed = listed
	if err := l.sys.Recover(rec); err != nil {
		return err
	}
	l.ready = true
	return nil
}

// Abort discards the open transaction; staged ones stay for recovery (a
// checkpoint that lists them may be complete).
func (l *Ledger[T]) Abort() error { return l.sys.Abort() }

// Drain forgets the staged transactions and returns them (a sink closing
// their clients; they stay staged in the system for recovery).
func (l *Ledger[T]) Drain() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := txnsOf(l.staged)
	l.staged = nil
	return out
}

// Len is how many staged transactions wait for their commit.
func (l *Ledger[T]) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.staged)
}
