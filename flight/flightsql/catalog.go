// Package flightsql is the Coordinator's Flight SQL endpoint
// (docs/flightsql.md): the system tables jobs, operators, checkpoints and
// workers, and the state of every running job read from its newest
// completed checkpoint, queried with Clink's own SQL in bounded mode.
//
// It sees the cluster only through Catalog, so it does not depend on the
// Coordinator's internals.
package flightsql

// Catalog is what the endpoint reads of the cluster. Each call returns a
// snapshot the caller may keep.
type Catalog interface {
	Jobs() []Job
	Operators() []Operator
	Checkpoints() []Checkpoint
	Workers() []Worker
}

// Job is a row of table jobs.
type Job struct {
	ID, Name, Status, Guarantee string
	Parallelism, Attempt        int
	Restarts, Failures          int
	// LatestCheckpoint is the newest completed checkpoint's id, 0 before
	// the first.
	LatestCheckpoint uint64
	// StartTime and EndTime are epoch milliseconds (EndTime 0: running).
	StartTime, EndTime int64
	Failure            string
	// StateDir is the job's checkpoint store (chk-<id> directories), ""
	// without checkpoints.
	StateDir string
}

// Operator is a row of table operators: one operator subtask's counters.
type Operator struct {
	Job        string
	Name       string
	Subtask    int
	Worker     string
	RecordsIn  int64
	RecordsOut int64
	// Watermark is epoch milliseconds, nil before the first.
	Watermark      *int64
	LateDropped    int64
	RecordsSkipped int64
}

// Checkpoint is a row of table checkpoints.
type Checkpoint struct {
	Job       string
	ID        uint64
	Status    string
	Kind      string
	Trigger   int64 // epoch milliseconds
	Duration  int64 // milliseconds
	Parts     int
	Bytes     int64
	StateSize int64
	SyncMS    float64
	Path      string
	Failure   string
}

// Worker is a row of table workers.
type Worker struct {
	ID, Addr      string
	Slots, Free   int
	LastHeartbeat int64 // epoch milliseconds
}
