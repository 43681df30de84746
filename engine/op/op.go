package op

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// Output receives what an operator produces, in band and in order: rows,
// watermarks and checkpoint barriers. The batch passed to Emit is owned by
// the callee afterwards.
type Output interface {
	Emit(b *vector.Batch) error
	EmitWatermark(wm int64) error
	// EmitBarrier passes checkpoint barrier id on: everything emitted
	// before it belongs to the checkpoint, nothing after it.
	EmitBarrier(id uint64) error
}

// Operator is the one interface every operator implements. Process owns b:
// it passes it on or releases it.
type Operator interface {
	Process(b *vector.Batch, out Output) error
}

// BinaryOperator consumes two inputs (a join, a union). ProcessSide owns b.
// Its watermark is the minimum of its inputs'; it receives it through
// WatermarkHandler when it implements it (and forwards it itself).
type BinaryOperator interface {
	ProcessSide(side int, b *vector.Batch, out Output) error
}

// WatermarkHandler is implemented by operators that act on watermarks
// (window aggregates fire). Without it the watermark is forwarded. A
// handler forwards the watermark itself (out.EmitWatermark) after emitting
// what it released.
type WatermarkHandler interface {
	OnWatermark(wm int64, out Output) error
}

// BarrierHandler is implemented by operators that act on a checkpoint
// barrier. The runtime hands every operator the barrier in band, after
// every row before it: it writes a Stateful operator's state
// (SnapshotState) into checkpoint id, then calls OnBarrier, which emits
// what belongs before the barrier and forwards it (out.EmitBarrier).
// Without it the barrier is forwarded.
type BarrierHandler interface {
	OnBarrier(id uint64, out Output) error
}

// Finisher is implemented by operators that flush at end of input. It runs
// after the final watermark has been delivered.
type Finisher interface {
	Finish(out Output) error
}

// Closer releases an operator's resources when the job stops, finished or not.
type Closer interface {
	Close() error
}

// StatsReporter exposes an operator's counters (late rows, groups, ...).
type StatsReporter interface {
	Stats() map[string]int64
}

// Stateful is implemented by operators, sources and sinks whose state
// checkpoints keep. SnapshotState runs at a checkpoint barrier, after every
// row before it and before any row after it; RestoreState runs once, before
// the job starts, with the state of the checkpoint it resumes from.
type Stateful interface {
	SnapshotState(s *Snapshot) error
	RestoreState(r *Restore) error
}

// Snapshot is what a Stateful writes its state into: at most one part (an
// Arrow IPC file in the documented state format) per operator subtask.
type Snapshot struct {
	// ID is the checkpoint being taken.
	ID uint64
	// MaxParallelism is the number of key groups.
	MaxParallelism int
	// Mem allocates the state records.
	Mem memory.Allocator
	// Open creates the part with the given slots; the caller closes it.
	Open func(slots []checkpoint.Slot) (*checkpoint.PartWriter, error)
	// OpenDelta creates the part as a delta on chain (an earlier part's
	// checkpoint.PartWriter.Chain). nil when this checkpoint must be full:
	// a savepoint, or incremental checkpoints are off.
	OpenDelta func(slots []checkpoint.Slot, chain []checkpoint.PartInfo) (*checkpoint.PartWriter, error)
	// Completed is the newest checkpoint known complete (0: none): a
	// delta builds on the part written for it.
	Completed uint64
	// MaxDeltas bounds a chain's deltas: the snapshot after that many is
	// full again (compaction), so a restore reads a bounded chain.
	MaxDeltas int
	// Go runs the asynchronous half of a snapshot — encoding, compressing
	// and writing what the operator captured at the barrier — while the
	// operator goes on; the checkpoint completes after it. nil: run it
	// before SnapshotState returns.
	Go func(func() error)
}

// Async runs fn as the snapshot's asynchronous half (Go), or now.
func (s *Snapshot) Async(fn func() error) error {
	if s.Go == nil {
		return fn()
	}
	s.Go(fn)
	return nil
}

// Restore is the state of one operator in the checkpoint a job resumes
// from.
type Restore struct {
	// ID is the checkpoint restored.
	ID             uint64
	MaxParallelism int
	// Parallelism and Subtask place this subtask: it keeps the keyed rows
	// of the key groups it owns and the raw rows its operator assigns it.
	Parallelism, Subtask int
	// Parts are every part the operator wrote (one per subtask that had
	// state); empty when it had none.
	Parts []*checkpoint.Part
}

// Owns reports whether this subtask owns key group g.
func (r *Restore) Owns(g int32) bool {
	if r.Parallelism <= 1 {
		return true
	}
	return checkpoint.KeyGroupOwner(r.MaxParallelism, r.Parallelism, g) == r.Subtask
}

// Stateless marks operators that keep nothing between batches (filters,
// projections, unions): a checkpoint needs no state from them. With
// checkpoints on, every operator is Stateful or Stateless.
type Stateless interface {
	Stateless()
}

// Keyed is implemented by operators whose state is partitioned by a key of
// their input: at parallelism > 1 the engine routes each row to the
// subtask that owns its key's key group. KeyColumns are input column
// indexes; none means one global group.
type Keyed interface {
	KeyColumns() []int
}

// KeyedBinary is implemented by binary operators whose state is
// partitioned by a key of each input (a join): at parallelism > 1 each
// input's rows go to the subtask that owns their key's key group.
// SideKeyColumns are the input columns of side 0 (left) or 1 (right); the
// two sides' key columns have the same types, so equal keys hash alike.
type KeyedBinary interface {
	SideKeyColumns(side int) []int
}

// KeyedOutput is implemented by keyed operators whose output rows carry
// their key unchanged: OutputKeyColumns are the output columns holding
// the key, in KeyColumns order (nil: the output is not partitioned by a
// key). At parallelism > 1 a keyed operator downstream whose key is that
// same key needs no exchange: the rows are already on their subtask.
type KeyedOutput interface {
	OutputKeyColumns() []int
}

// Passthrough is implemented by stateless operators that pass columns on
// unchanged: OutputColumn is the first output column that is input
// column c unchanged (-1: none).
type Passthrough interface {
	OutputColumn(c int) int
}
