package cluster

import (
	"fmt"
	"slices"
)

// The job controller (Arroyo's, Flink's JobMaster): one goroutine per job
// moves it through phases. Each live phase is one method in a file of its
// own name; it waits for what concerns it and returns the next phase.
// transitions is every move the controller can make; runJob refuses any
// other.
//
// A phase is not the job's status string (the API's CREATED, RUNNING,
// RESTARTING, ...): the phases set that as they go (status in the table
// below).
type phase int

const (
	// scheduling waits for a free slot per subtask and deploys an attempt
	// (status CREATED, or RESTARTING after a failure).
	phaseScheduling phase = iota
	// running: the attempt runs, no checkpoint in flight (RUNNING).
	phaseRunning
	// checkpointing: a checkpoint, periodic, a triggered savepoint or the
	// final one, is in flight (RUNNING).
	phaseCheckpointing
	// stopping: stop with savepoint; the savepoint follows the checkpoint
	// in flight, then its publication ends the attempt (RUNNING).
	phaseStopping
	// restarting: the attempt failed; wait RestartDelay, or give up after
	// MaxRestarts (RESTARTING).
	phaseRestarting
	// The ends: FINISHED (also after stop with savepoint), CANCELED,
	// FAILED.
	phaseFinished
	phaseCanceled
	phaseFailed
	// fenced: this Coordinator lost the leadership (HA); the job is left
	// as it is, to the next leader, with nothing written.
	phaseFenced
)

var phaseNames = [...]string{"scheduling", "running", "checkpointing", "stopping", "restarting", "finished", "canceled", "failed", "fenced"}

func (p phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// transitions: from each phase, where it may go.
//
//	scheduling    -> running (deployed) | restarting (no restore point,
//	                 a deploy failed) | canceled (cancel or stop while
//	                 waiting for slots)
//	running       -> checkpointing (interval; a triggered savepoint; every
//	                 subtask finished: the final checkpoint) | stopping
//	                 (stop: savepoint begun) |
//	                 finished (every Worker done, final checkpoint taken or
//	                 none to take) | restarting | canceled
//	checkpointing -> running (completed) | stopping (stop: the savepoint
//	                 waits for this checkpoint) | restarting | canceled
//	stopping      -> finished (savepoint published, or every Worker done
//	                 first) | restarting | canceled
//	restarting    -> scheduling | failed (MaxRestarts reached) | canceled
//
// Every live phase goes to restarting on a failure (a Worker lost, a
// subtask's error, a failed call, an expired checkpoint), to canceled
// on cancel, and to fenced when this Coordinator lost the leadership.
var transitions = map[phase][]phase{
	phaseScheduling:    {phaseRunning, phaseRestarting, phaseCanceled, phaseFenced},
	phaseRunning:       {phaseCheckpointing, phaseStopping, phaseFinished, phaseRestarting, phaseCanceled, phaseFenced},
	phaseCheckpointing: {phaseRunning, phaseStopping, phaseRestarting, phaseCanceled, phaseFenced},
	phaseStopping:      {phaseFinished, phaseRestarting, phaseCanceled, phaseFenced},
	phaseRestarting:    {phaseScheduling, phaseFailed, phaseCanceled, phaseFenced},
}

// controller drives one job; only runJob's goroutine uses it. The job's
// fields that the API reads are still guarded by Coordinator.mu.
type controller struct {
	c *Coordinator
	j *job
	// a is the current attempt, from its scheduling to its end.
	a *jobAttempt
	// reason is why the last attempt failed.
	reason string
	ckLog  ckLog
	ol     *jobLineage // OpenLineage runs (lineage.go); nil: off
}

// runJob runs a job's attempts until it finishes, is cancelled, or fails
// more often than MaxRestarts.
func (c *Coordinator) runJob(j *job) {
	ctl := &controller{c: c, j: j}
	for p := phaseScheduling; ; {
		next := ctl.step(p)
		if !slices.Contains(transitions[p], next) {
			panic(fmt.Sprintf("job %s: the controller went from %s to %s", j.id, p, next))
		}
		ctl.lineageStep(p, next)
		if ctl.a != nil && !next.live() {
			ctl.endAttempt()
		}
		switch next {
		case phaseFinished:
			c.end(j, StateFinished, "")
			return
		case phaseCanceled:
			c.end(j, StateCanceled, "")
			return
		case phaseFailed:
			c.end(j, StateFailed, ctl.reason)
			return
		case phaseFenced:
			c.logf("job_id=%s left to the new leader (this Coordinator's epoch %d is over)", j.id, j.epoch)
			go func() {
				for ev := range j.events {
					if ev.reply != nil {
						ev.reply <- stopResult{err: fmt.Errorf("job %s: %w", j.id, ErrNotLeader)}
					}
				}
			}()
			return
		}
		p = next
	}
}

// step runs one phase and returns the next.
func (ctl *controller) step(p phase) phase {
	switch p {
	case phaseScheduling:
		return ctl.scheduling()
	case phaseRunning:
		return ctl.running()
	case phaseCheckpointing:
		return ctl.checkpointing()
	case phaseStopping:
		return ctl.stopping()
	case phaseRestarting:
		return ctl.restarting()
	}
	panic(fmt.Sprintf("job %s: no step for phase %s", ctl.j.id, p))
}

// live: an attempt holds slots in this phase.
func (p phase) live() bool {
	return p == phaseScheduling || p == phaseRunning || p == phaseCheckpointing || p == phaseStopping
}
