package cluster

import (
	"fmt"
	"time"
)

// restarting: the attempt failed (ctl.reason). After RestartDelay the job
// is scheduled again from its newest completed checkpoint, unless it has
// been restarted MaxRestarts times already.
func (ctl *controller) restarting() phase {
	c, j := ctl.c, ctl.j
	start := time.Now()
	if !c.leadingFor(j) {
		return phaseFenced
	}
	c.mu.Lock()
	j.errorCount++
	j.failure = ctl.reason
	k := j.restarts + 1
	if k > c.cfg.MaxRestarts {
		c.mu.Unlock()
		ctl.logf("job_id=%s failed after %d restarts: %s", j.id, c.cfg.MaxRestarts, ctl.reason)
		return phaseFailed
	}
	j.restarts = k
	j.state = StateRestarting
	c.mu.Unlock()
	ctl.logf("job_id=%s awaiting_restart (attempt %d/%d): %s", j.id, k, c.cfg.MaxRestarts, ctl.reason)
	c.persist(j)
	if !c.restartDelay(j) {
		if !c.leadingFor(j) {
			return phaseFenced
		}
		return phaseCanceled
	}
	if !c.leadingFor(j) {
		return phaseFenced
	}
	c.spanRestart(j, j.attempt, k, ctl.reason, start)
	return phaseScheduling
}

// restartDelay waits RestartDelay before a restart, dropping the failed
// attempt's late events; false: the job was cancelled meanwhile.
func (c *Coordinator) restartDelay(j *job) bool {
	timer := time.NewTimer(c.cfg.RestartDelay)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return true
		case ev := <-j.events:
			if ev.kind == evFenced {
				return false
			}
			if ev.kind == evCancel || ev.kind == evStop {
				if ev.reply != nil {
					ev.reply <- stopResult{err: fmt.Errorf("job %s is restarting; cancelled without a savepoint", j.id)}
				}
				return false
			}
			if ev.kind == evSavepoint {
				ev.reply <- stopResult{err: fmt.Errorf("job %s is restarting: no savepoint", j.id)}
			}
		}
	}
}
