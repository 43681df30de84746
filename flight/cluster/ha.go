package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clink-dev/clink/checkpoint"
)

// Highly available Coordinators (docs/cluster.md, High availability).
//
// Several Coordinators share an HA directory. The one holding the lease
// (lease.go) leads: it alone schedules, checkpoints and writes the job
// store (jobstore.go). The others are standbys: they answer every call
// with who leads, and take the lease over when it lapses, with the next
// epoch. A new leader loads the job store and recovers every live job
// from its newest completed checkpoint, after fencing the job's
// checkpoint directory with its epoch.
//
// A leader that cannot renew in time stops acting at once (leadingFor is
// false from then on: no deploy, no checkpoint, no job-store write), ends
// its jobs' controllers without touching them (phaseFenced), forgets its
// Workers, and is a standby again.

// DefaultLease and DefaultLeaseRenew are the lease's defaults: a killed
// leader is replaced within about 3.5 s, and its jobs write again within
// 5 s (docs/performance.md#ha-coordinators-issue-19).
const (
	DefaultLease      = 3 * time.Second
	DefaultLeaseRenew = 500 * time.Millisecond
)

// ErrNotLeader is the error of a call to a standby.
var ErrNotLeader = errors.New("not the leader")

type haState struct {
	lease lease
	renew time.Duration
	jobs  *jobStore

	mu sync.Mutex
	// epoch is this Coordinator's while it leads (0: standby); validUntil
	// ends its leadership unless a renewal moves it (monotonic clock: a
	// process stopped past it finds itself no longer leading).
	epoch      uint64
	validUntil time.Time
	// leader is the last lease record seen as a standby; said what was
	// last logged about it.
	leader *leaseRecord
	said   string
	// vanish (tests): Run ends without giving the lease up, as a killed
	// process; paused (tests): no renewal, as a stopped process.
	vanish bool
	paused bool
}

// checkHADir refuses an HA directory that is not a file-system path: the
// lease needs flock(2) and atomic rename (docs/cluster.md).
func checkHADir(dir string) error {
	if scheme, _, ok := strings.Cut(dir, "://"); ok && scheme != "file" {
		return fmt.Errorf("--ha-dir %s: an object store cannot hold the leader lease yet; give a directory on a shared POSIX file system (docs/cluster.md#high-availability)", dir)
	}
	return nil
}

func newHA(c *Coordinator) (*haState, error) {
	cfg := c.cfg
	if err := checkHADir(cfg.HADir); err != nil {
		return nil, err
	}
	cfg.HADir = strings.TrimPrefix(cfg.HADir, "file://")
	c.cfg.HADir = cfg.HADir
	if err := os.MkdirAll(cfg.HADir, 0o755); err != nil {
		return nil, fmt.Errorf("--ha-dir: %v", err)
	}
	id := cfg.HAID
	if id == "" {
		var b [3]byte
		rand.Read(b[:])
		id = c.FlightAddr() + "-" + hex.EncodeToString(b[:])
	}
	ttl, renew := cfg.LeaseTTL, cfg.LeaseRenew
	if ttl <= 0 {
		ttl = DefaultLease
	}
	if renew <= 0 {
		renew = min(DefaultLeaseRenew, ttl/3)
	}
	if renew >= ttl {
		return nil, fmt.Errorf("the lease renewal (%s) must be shorter than the lease (%s)", renew, ttl)
	}
	js, err := openJobStore(cfg.HADir)
	if err != nil {
		return nil, err
	}
	return &haState{lease: lease{dir: cfg.HADir, id: id, flight: c.FlightAddr(), web: c.HTTPAddr(), ttl: ttl}, renew: renew, jobs: js}, nil
}

// epoch is the leader epoch this Coordinator leads with (0: without HA,
// or a standby).
func (c *Coordinator) epoch() uint64 {
	if c.ha == nil {
		return 0
	}
	c.ha.mu.Lock()
	defer c.ha.mu.Unlock()
	if !time.Now().Before(c.ha.validUntil) {
		return 0
	}
	return c.ha.epoch
}

// leadingFor: this Coordinator still leads with the job's epoch, so it
// may act for the job.
func (c *Coordinator) leadingFor(j *job) bool {
	return c.ha == nil || (j.epoch != 0 && c.epoch() == j.epoch)
}

// notLeader is the answer of a standby to a call only the leader takes
// (nil on the leader).
func (c *Coordinator) notLeader() error {
	if c.ha == nil || c.epoch() != 0 {
		return nil
	}
	c.ha.mu.Lock()
	defer c.ha.mu.Unlock()
	if l := c.ha.leader; l != nil && !l.expired(time.Now()) {
		return fmt.Errorf("%w: this Coordinator (%s) is a standby; the leader is %s at %s (epoch %d)", ErrNotLeader, c.ha.lease.id, l.Holder, l.Flight, l.Epoch)
	}
	return fmt.Errorf("%w: this Coordinator (%s) is a standby; no leader at the moment", ErrNotLeader, c.ha.lease.id)
}

// IsLeader reports whether this Coordinator leads (always without HA).
func (c *Coordinator) IsLeader() bool { return c.ha == nil || c.epoch() != 0 }

// Epoch is the leader epoch (0: a standby, or without HA).
func (c *Coordinator) Epoch() uint64 { return c.epoch() }

// haTick renews the lease (leader) or tries to take it (standby).
func (c *Coordinator) haTick() {
	h := c.ha
	h.mu.Lock()
	epoch, paused := h.epoch, h.paused
	h.mu.Unlock()
	if paused {
		return
	}
	start := time.Now()
	rec, ok, err := h.lease.tryAcquire(epoch)
	switch {
	case err != nil && epoch != 0:
		h.mu.Lock()
		lapsed := !time.Now().Before(h.validUntil)
		h.mu.Unlock()
		if lapsed {
			c.stepDown(fmt.Sprintf("cannot renew the lease: %v", err), false)
		} else {
			c.logf("renewing the lease: %v (retrying)", err)
		}
	case err != nil:
		c.logf("ha: reading the lease: %v", err)
	case ok && epoch != 0:
		h.mu.Lock()
		h.validUntil = start.Add(h.lease.ttl - h.lease.ttl/5)
		h.mu.Unlock()
	case ok:
		// The job ids are known before this Coordinator takes any
		// submission, so that none is given out again.
		recs := c.loadJobs()
		h.mu.Lock()
		h.epoch, h.validUntil, h.leader, h.said = rec.Epoch, start.Add(h.lease.ttl-h.lease.ttl/5), nil, ""
		h.mu.Unlock()
		c.logf("leadership acquired epoch=%d", rec.Epoch)
		for _, r := range recs {
			c.recoverJob(r, rec.Epoch)
		}
	case epoch != 0:
		c.stepDown(fmt.Sprintf("%s took the lease over at epoch %d", rec.Holder, rec.Epoch), false)
		c.standby(rec)
	default:
		c.standby(rec)
	}
}

// standby notes who leads, logging it when that changes.
func (c *Coordinator) standby(rec *leaseRecord) {
	h := c.ha
	h.mu.Lock()
	h.leader = rec
	say := fmt.Sprintf("standby: leader is %s epoch=%d", rec.Holder, rec.Epoch)
	if say == h.said {
		say = ""
	} else {
		h.said = say
	}
	h.mu.Unlock()
	if say != "" {
		c.logf("%s", say)
	}
}

// stepDown ends this Coordinator's leadership: its jobs' controllers end
// without acting (they belong to the next leader), its Workers are
// forgotten (they register with the new leader). release gives the lease
// up for a standby to take at once (a clean shutdown).
func (c *Coordinator) stepDown(why string, release bool) {
	h := c.ha
	h.mu.Lock()
	epoch := h.epoch
	h.epoch, h.validUntil = 0, time.Time{}
	h.mu.Unlock()
	if epoch == 0 {
		return
	}
	if release {
		h.lease.release(epoch)
	}
	c.logf("leadership lost: %s", why)
	c.mu.Lock()
	for _, j := range c.jobs {
		if !terminal(j.state) {
			c.post(j, event{kind: evFenced})
		}
	}
	c.jobs, c.order = map[string]*job{}, nil
	for id, w := range c.workers {
		w.cl.Close()
		delete(c.workers, id)
	}
	c.capacityChangedLocked()
	c.mu.Unlock()
}

// loadJobs reads the job store for a new leader, by id, and moves the
// job-id counter past every id given out. recoverJob then takes each
// over: terminal jobs are listed as they ended, every other job is
// recovered from its newest completed checkpoint.
func (c *Coordinator) loadJobs() []*jobRecord {
	recs, last, err := c.ha.jobs.load()
	if err != nil {
		c.logf("loading the jobs: %v", err)
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].ID < recs[b].ID })
	c.mu.Lock()
	c.nextJob = max(c.nextJob, last)
	c.mu.Unlock()
	return recs
}

// recoverJob takes a job of the store over.
func (c *Coordinator) recoverJob(r *jobRecord, epoch uint64) {
	id := strconv.Itoa(r.ID)
	// An ended job is only listed: it is not planned again.
	var j *job
	err := errors.New("ended")
	if !terminal(r.State) {
		j, _, err = c.newJob(&r.Request, true)
	}
	if err != nil {
		j = &job{req: r.Request, name: r.Name, plan: r.Request.Plan, parallelism: r.Parallelism, ckDir: r.CkDir, events: make(chan event, 64)}
		if !terminal(r.State) {
			r.State, r.Failure = StateFailed, "recovery: "+err.Error()
			r.Ended = time.Now()
			c.logf("job_id=%s cannot be recovered: %v", id, err)
		}
	}
	j.id, j.epoch = id, epoch
	j.state, j.failure, j.errorCount, j.restarts, j.attempt = r.State, r.Failure, r.ErrorCount, r.Restarts, r.Attempt
	j.created, j.ended, j.savepoint, j.history = r.Created, r.Ended, r.Savepoint, r.History
	j.based, j.base, j.restoredIDs = r.Based, r.Base, r.Restored
	j.trace = traceFrom(r.TraceID, r.SpanID)
	live := !terminal(j.state)
	if live && j.store != nil {
		if err := j.store.Fence(epoch); err != nil {
			c.logf("job_id=%s: %v", id, err)
			return
		}
		if latest, ok, err := j.store.Latest(); err == nil && ok && latest > j.base {
			j.based, j.base = true, latest
		}
	}
	if live && j.state == StateRunning {
		j.state = StateRestarting
	}
	c.mu.Lock()
	c.nextJob = max(c.nextJob, r.ID)
	c.jobs[id] = j
	c.order = append(c.order, id)
	c.mu.Unlock()
	if !live {
		c.persist(j)
		return
	}
	if j.based && j.base != 0 {
		c.logf("recovering job_id=%s from checkpoint %d", id, j.base)
	} else {
		c.logf("recovering job_id=%s (no completed checkpoint: from its start)", id)
	}
	c.persist(j)
	go c.runJob(j)
}

// fencedCheck refuses to complete a checkpoint once this Coordinator
// lost the job's epoch.
func (c *Coordinator) fencedCheck(j *job) error {
	if c.leadingFor(j) {
		return nil
	}
	return fmt.Errorf("job %s: this Coordinator no longer leads epoch %d: %w", j.id, j.epoch, checkpoint.ErrFenced)
}
