package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// scheduling waits for a free slot per subtask, then deploys a new
// attempt restoring the job's restore point.
func (ctl *controller) scheduling() phase {
	assign, ok := ctl.c.schedule(ctl.j)
	if !ctl.c.leadingFor(ctl.j) {
		if ok {
			ctl.c.release(assign)
		}
		return phaseFenced
	}
	if !ok {
		return phaseCanceled
	}
	return ctl.startAttempt(assign)
}

// startAttempt deploys the next attempt on assign; running once every
// Worker took its subtasks.
func (ctl *controller) startAttempt(assign map[int]string) phase {
	c, j := ctl.c, ctl.j
	start := time.Now()
	c.mu.Lock()
	j.attempt++
	a := &jobAttempt{ref: attemptRef{Job: j.id, Attempt: j.attempt, Epoch: j.epoch}, assign: assign, workers: attemptWorkers(assign),
		finished: map[string]bool{}, done: map[string]bool{}}
	c.mu.Unlock()
	ctl.a = a
	ctl.ckLog.newAttempt()
	restore, err := c.restorePoint(j)
	if err != nil {
		ctl.reason = err.Error()
		return phaseRestarting
	}
	a.restore = restore
	j.based, j.base = true, restore
	if restore != 0 && j.fromSP != nil && restore == j.fromSP.ID {
		ctl.logf("job_id=%s restore point: checkpoint %d (savepoint %s)", j.id, restore, j.fromSP.Path)
		c.mu.Lock()
		j.restoredIDs = append(j.restoredIDs, restore)
		c.mu.Unlock()
	} else if restore != 0 {
		ctl.logf("job_id=%s restore point: checkpoint %d", j.id, restore)
		c.mu.Lock()
		j.restoredIDs = append(j.restoredIDs, restore)
		c.mu.Unlock()
	} else if j.store != nil {
		ctl.logf("job_id=%s starting fresh (no checkpoint to restore)", j.id)
	}
	if err := ctl.deploy(); err != nil {
		return ctl.fail(err.Error())
	}
	c.mu.Lock()
	j.state = StateRunning
	c.mu.Unlock()
	c.persist(j)
	ctl.logf("job_id=%s attempt %d running: %d subtasks on %d workers", j.id, a.ref.Attempt, j.parallelism, len(a.workers))
	if restore != 0 {
		c.spanRestore(j, a.ref.Attempt, restore, start)
	}
	if j.store != nil {
		a.ticker = time.NewTicker(j.interval)
		a.tick = a.ticker.C
	}
	a.timeout = time.NewTicker(time.Second)
	return phaseRunning
}

// deploy hands every Worker of the attempt its subtasks, all at once. Its
// error is the first failure: a Worker lost since scheduling, or a deploy
// call's error.
func (ctl *controller) deploy() error {
	c, j, a := ctl.c, ctl.j, ctl.a
	if !c.leadingFor(j) {
		return fmt.Errorf("job %s: %w (epoch %d is over)", j.id, ErrNotLeader, j.epoch)
	}
	peers := map[int]string{}
	c.mu.Lock()
	for s, wid := range a.assign {
		if w, ok := c.workers[wid]; ok {
			peers[s] = w.addr
		}
	}
	c.mu.Unlock()
	// The calls fail concurrently with each other and with this loop.
	var mu sync.Mutex
	var first error
	failed := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for wid, subtasks := range a.workers {
		cl, ok := c.client(wid)
		if !ok {
			failed(fmt.Errorf("worker lost: %s", wid))
			break
		}
		req := &deployReq{attemptRef: a.ref, Name: j.name, Plan: j.plan, Parallelism: j.parallelism, Subtasks: subtasks, Peers: peers,
			BatchSize: j.batchSize, LingerMS: j.lingerMS}
		if j.store != nil {
			req.Checkpoints = &ckSpec{Dir: j.ckDir, Restore: a.restore, Fingerprint: j.fingerprint, AllowNonRestoredState: j.allowNonRestored, Full: !j.incremental}
			// New checkpoints get ids after the savepoint's, so it is the
			// restore point exactly until this job completes one.
			if j.fromSP != nil && a.restore == j.fromSP.ID {
				req.Checkpoints.RestoreDir = j.fromSP.Path
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := call(ctx, cl, actDeploy, req, nil); err != nil {
				c.unreachable(wid, err)
				failed(fmt.Errorf("deploying on %s: %w", wid, err))
			}
		}()
	}
	wg.Wait()
	return first
}

// schedule waits until the Workers have a free slot per subtask, then
// assigns subtasks to Workers round-robin (by Worker id). false: the job
// was cancelled meanwhile.
func (c *Coordinator) schedule(j *job) (map[int]string, bool) {
	said := false
	for {
		c.mu.Lock()
		var ids []string
		free := 0
		for id, w := range c.workers {
			if w.slots > w.used {
				ids = append(ids, id)
				free += w.slots - w.used
			}
		}
		if free >= j.parallelism {
			sort.Strings(ids)
			assign := map[int]string{}
			for s, k := 0, 0; s < j.parallelism; k++ {
				w := c.workers[ids[k%len(ids)]]
				if w.used < w.slots {
					assign[s] = w.id
					w.used++
					s++
				}
			}
			j.assign = assign
			c.mu.Unlock()
			return assign, true
		}
		wait := c.capacity
		restart := j.restarts > 0
		c.mu.Unlock()
		if !said {
			said = true
			if restart {
				c.logf("job_id=%s restart waiting for capacity: %d slots needed, %d free", j.id, j.parallelism, free)
			} else {
				c.logf("job_id=%s waiting for capacity: %d slots needed, %d free", j.id, j.parallelism, free)
			}
		}
		select {
		case <-wait:
		case ev := <-j.events:
			if ev.kind == evFenced {
				return nil, false
			}
			if ev.kind == evCancel || ev.kind == evStop {
				if ev.reply != nil {
					ev.reply <- stopResult{err: fmt.Errorf("job %s was not running; cancelled without a savepoint", j.id)}
				}
				return nil, false
			}
			if ev.kind == evSavepoint {
				ev.reply <- stopResult{err: fmt.Errorf("job %s is not running (waiting for slots): no savepoint", j.id)}
			}
		}
	}
}

// release frees the slots of an attempt.
func (c *Coordinator) release(assign map[int]string) {
	c.mu.Lock()
	for _, wid := range assign {
		if w, ok := c.workers[wid]; ok && w.used > 0 {
			w.used--
		}
	}
	c.capacityChangedLocked()
	c.mu.Unlock()
}

// attemptWorkers maps each Worker of an attempt to its subtasks.
func attemptWorkers(assign map[int]string) map[string][]int {
	out := map[string][]int{}
	for s, w := range assign {
		out[w] = append(out[w], s)
	}
	for _, ss := range out {
		sort.Ints(ss)
	}
	return out
}
