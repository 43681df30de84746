package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// jobAttempt is one deployment of a job, from its scheduling to its end;
// only the job's controller uses it.
type jobAttempt struct {
	ref     attemptRef
	assign  map[int]string   // subtask -> Worker id
	workers map[string][]int // Worker id -> its subtasks
	restore uint64           // the checkpoint it restored (0: none)

	// tick is the checkpoint interval (nil without checkpoints); timeout
	// checks the pending checkpoint's age.
	tick            <-chan time.Time
	ticker, timeout *time.Ticker

	pending  *pendingCk
	finished map[string]bool // Workers whose subtasks all ended
	done     map[string]bool // Workers whose part of the attempt ended
	// late and skipped sum the done Workers' counts.
	late, skipped int64
	// finalWanted: every subtask finished, the final checkpoint is due;
	// finalDone: it completed.
	finalWanted, finalDone bool
	// completed is the attempt's newest completed checkpoint: triggers
	// carry it, so that a Worker's deltas build on it.
	completed uint64

	// Stop with savepoint: stopReply is its caller, stopped receives the
	// savepoint once every Worker published it.
	stopReply, stopped chan stopResult
	savepointBegun     bool
	stopDir            string // where the stop's savepoint goes ("": the job's savepoint directory)

	// A triggered savepoint (the job runs on) waiting for the checkpoint
	// in flight: spReply is its caller, spDir where it goes.
	spReply chan stopResult
	spDir   string
}

// endAttempt stops the attempt's timers and frees its slots.
func (ctl *controller) endAttempt() {
	a := ctl.a
	ctl.a = nil
	ctl.ckFlush()
	if a.ticker != nil {
		a.ticker.Stop()
	}
	if a.timeout != nil {
		a.timeout.Stop()
	}
	ctl.c.release(a.assign)
}

// stale: an event of a replaced attempt (cancel and stop are the job's).
func (ctl *controller) stale(ev event) bool {
	return ev.kind != evCancel && ev.kind != evStop && ev.kind != evSavepoint && ev.kind != evFenced && ev.attempt != ctl.a.ref.Attempt
}

// onAttemptEvent handles what every live phase handles alike: cancel, a
// lost Worker or failed call, a Worker's end. ok false: the attempt goes
// on in the same phase.
func (ctl *controller) onAttemptEvent(ev event) (next phase, ok bool) {
	switch ev.kind {
	case evCancel:
		return ctl.cancel(ev), true
	case evFenced:
		return phaseFenced, true
	case evLost, evCallFailed:
		return ctl.fail(ev.err), true
	case evDone:
		return ctl.onDone(ev)
	}
	return 0, false
}

// onDone notes that a Worker's part of the attempt ended. With an error
// the attempt failed; once every Worker is done (and the final checkpoint
// completed, when there are checkpoints) the job is finished.
func (ctl *controller) onDone(ev event) (phase, bool) {
	c, j, a := ctl.c, ctl.j, ctl.a
	if ev.err != "" {
		return ctl.fail(fmt.Sprintf("%s: %s", ev.worker, ev.err)), true
	}
	a.done[ev.worker] = true
	a.late += ev.late
	a.skipped += ev.skipped
	if len(a.done) < len(a.workers) || (j.store != nil && !a.finalDone) {
		return 0, false
	}
	c.mu.Lock()
	j.late, j.skipped = a.late, a.skipped
	c.mu.Unlock()
	if a.stopReply != nil {
		a.stopReply <- stopResult{err: fmt.Errorf("job %s finished before the savepoint", j.id)}
	}
	ctl.savepointsFailed(fmt.Errorf("job %s finished before the savepoint", j.id))
	return phaseFinished, true
}

// onFinished notes that a Worker's subtasks all ended. true: they all
// have, and the final checkpoint is to begin now (else it follows the
// pending checkpoint).
func (ctl *controller) onFinished(ev event) bool {
	j, a := ctl.j, ctl.a
	a.finished[ev.worker] = true
	if len(a.finished) < len(a.workers) || j.store == nil || a.finalWanted {
		return false
	}
	a.finalWanted = true
	if a.spReply != nil { // a savepoint of a finished job is its final checkpoint
		a.spReply <- stopResult{err: fmt.Errorf("job %s is finishing (every input ended): no savepoint", j.id)}
		a.spReply = nil
	}
	return a.pending == nil
}

// stopRequested takes a stop-with-savepoint request, or answers why not.
func (ctl *controller) stopRequested(ev event) bool {
	j, a := ctl.j, ctl.a
	switch {
	case j.store == nil:
		ev.reply <- stopResult{err: fmt.Errorf("job %s takes no checkpoints (no checkpoint directory): cannot stop with a savepoint", j.id)}
		return false
	case a.stopReply != nil || a.finalWanted:
		ev.reply <- stopResult{err: fmt.Errorf("job %s is already stopping or finishing", j.id)}
		return false
	}
	a.stopReply = ev.reply
	a.stopped = make(chan stopResult, 1)
	a.stopDir = ev.dir
	return true
}

// cancel ends the attempt on the user's request, abandoning the pending
// checkpoint; a stop waiting for its savepoint is told.
func (ctl *controller) cancel(ev event) phase {
	a := ctl.a
	if a.pending != nil {
		a.pending.w.Abort()
		ctl.c.recordCk(ctl.j, a.pending, "FAILED", "job cancelled", nil)
		ctl.ckFailed(a.pending.id, "job cancelled")
	}
	if a.stopReply != nil {
		a.stopReply <- stopResult{err: fmt.Errorf("job %s was cancelled before its savepoint completed", ctl.j.id)}
	}
	ctl.savepointsFailed(fmt.Errorf("job %s was cancelled before its savepoint completed", ctl.j.id))
	ctl.cancelAll()
	if ev.reply != nil {
		ev.reply <- stopResult{}
	}
	return phaseCanceled
}

// fail ends the attempt for reason: the pending checkpoint is abandoned,
// a stop waiting for a savepoint gets the reason, and the job restarts.
func (ctl *controller) fail(reason string) phase {
	a := ctl.a
	if a.pending != nil {
		a.pending.w.Abort()
		ctl.c.recordCk(ctl.j, a.pending, "FAILED", "attempt failed: "+reason, nil)
		ctl.ckFailed(a.pending.id, "attempt failed: "+reason)
		if a.pending.stop != nil {
			a.pending.stop <- stopResult{err: errors.New(reason)}
		}
	}
	if a.stopReply != nil {
		a.stopReply <- stopResult{err: errors.New(reason)}
	}
	ctl.savepointsFailed(errors.New(reason))
	if !ctl.c.leadingFor(ctl.j) {
		return phaseFenced
	}
	ctl.cancelAll()
	ctl.reason = reason
	return phaseRestarting
}

// cancelAll stops the attempt on its Workers and waits for them.
func (ctl *controller) cancelAll() {
	c, a := ctl.c, ctl.a
	var wg sync.WaitGroup
	for wid := range a.workers {
		cl, ok := c.client(wid)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := call(ctx, cl, actCancel, &a.ref, nil); err != nil {
				c.unreachable(wid, err)
				ctl.logf("job_id=%s: cancelling attempt %d on %s: %v", ctl.j.id, a.ref.Attempt, wid, err)
			}
		}()
	}
	wg.Wait()
}
