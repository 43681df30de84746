package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// jobStore keeps the jobs of highly available Coordinators under
// <ha dir>/jobs: one JSON file per job (<id>.json, written whole) and the
// last job id given out (last-id), so that ids never repeat across
// leaders. Only the leader writes (persist checks its epoch first).
type jobStore struct {
	dir string
	mu  sync.Mutex
}

// jobRecord is what a new leader needs to take a job over, and to list an
// ended one.
type jobRecord struct {
	ID          int           `json:"id"`
	Name        string        `json:"name"`
	Request     SubmitRequest `json:"request"` // the plan, parallelism, restore choice, batch settings
	Parallelism int           `json:"parallelism"`
	CkDir       string        `json:"checkpoint_dir,omitempty"`
	State       string        `json:"state"`
	Failure     string        `json:"failure,omitempty"`
	ErrorCount  int           `json:"error_count"`
	Restarts    int           `json:"restarts"`
	Attempt     int           `json:"attempt"`
	// Based: an attempt started from Base (0: none); a new leader restores
	// the newest completed checkpoint, else Base.
	Based    bool      `json:"based,omitempty"`
	Base     uint64    `json:"base,omitempty"`
	Restored []uint64  `json:"restored,omitempty"`
	Created  time.Time `json:"created"`
	Ended    time.Time `json:"ended,omitzero"`
	// Savepoint is the last stop's; History the last checkpoints
	// (savepoints among them).
	Savepoint string     `json:"savepoint,omitempty"`
	History   []ckRecord `json:"history,omitempty"`
	Epoch     uint64     `json:"epoch"` // of the leader that wrote it
	// TraceID and SpanID are the job's trace root, so that a new
	// leader's spans join its trace.
	TraceID string `json:"trace_id,omitempty"`
	SpanID  string `json:"span_id,omitempty"`
}

func openJobStore(haDir string) (*jobStore, error) {
	dir := filepath.Join(haDir, "jobs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--ha-dir: %v", err)
	}
	return &jobStore{dir: dir}, nil
}

// load reads every job and the last id given out.
func (s *jobStore) load() ([]*jobRecord, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := 0
	if b, err := os.ReadFile(filepath.Join(s.dir, "last-id")); err == nil {
		last, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, 0, err
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, 0, err
	}
	var out []*jobRecord
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := new(jobRecord)
		if err := json.Unmarshal(b, r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", name, err))
			continue
		}
		last = max(last, r.ID)
		out = append(out, r)
	}
	return out, last, errors.Join(errs...)
}

func (s *jobStore) writeLastID(id int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFileAtomic(filepath.Join(s.dir, "last-id"), []byte(strconv.Itoa(id)+"\n"))
}

func (s *jobStore) write(r *jobRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFileAtomic(filepath.Join(s.dir, strconv.Itoa(r.ID)+".json"), mustJSON(r))
}

// assignIDLocked gives j the next job id; with HA the id is on disk
// before the job exists, so that no later leader gives it out again.
func (c *Coordinator) assignIDLocked(j *job) error {
	id := c.nextJob + 1
	if c.ha != nil {
		if !c.leadingFor(j) {
			return c.notLeader()
		}
		if err := c.ha.jobs.writeLastID(id); err != nil {
			return fmt.Errorf("ha dir: %v", err)
		}
	}
	c.nextJob = id
	j.id = strconv.Itoa(id)
	return nil
}

// persist writes the job's record (with HA, while this Coordinator leads
// with the job's epoch).
func (c *Coordinator) persist(j *job) {
	if c.ha == nil || !c.leadingFor(j) {
		return
	}
	id, _ := strconv.Atoi(j.id)
	c.mu.Lock()
	r := &jobRecord{ID: id, Name: j.name, Request: j.req, Parallelism: j.parallelism, CkDir: j.ckDir, State: j.state, Failure: j.failure,
		ErrorCount: j.errorCount, Restarts: j.restarts, Attempt: j.attempt, Based: j.based, Base: j.base,
		Restored: append([]uint64(nil), j.restoredIDs...), Created: j.created, Ended: j.ended, Savepoint: j.savepoint,
		History: append([]ckRecord(nil), j.history...), Epoch: j.epoch}
	r.TraceID, r.SpanID = traceIDs(j.trace)
	c.mu.Unlock()
	if err := c.ha.jobs.write(r); err != nil {
		c.logf("job_id=%s: writing the job store: %v", j.id, err)
	}
}
