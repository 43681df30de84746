package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/clink-dev/clink/checkpoint"
)

// pendingCk is a checkpoint the Coordinator waits for.
type pendingCk struct {
	id      uint64
	attempt int // the attempt that triggered it
	w       *checkpoint.Writer
	acks    map[string][]checkpoint.PartInfo
	ops     map[string][]checkpoint.OperatorInfo // per Worker
	start   time.Time
	kind    string          // checkpoint, final, savepoint
	stop    chan stopResult // stop-with-savepoint waits for it
	// A savepoint's caller (triggered, the job runs on), the directory it
	// goes to and, once written, its path.
	spReply       chan stopResult
	spDir, spPath string
	syncMS        float64 // the longest synchronous snapshot a Worker reported
}

// checkpointing: a checkpoint, periodic or the final one, is in flight
// (one at a time). With every Worker's parts acknowledged it completes;
// older than CheckpointTimeout, it fails the attempt. A stop arriving now
// takes its savepoint after this checkpoint.
func (ctl *controller) checkpointing() phase {
	a := ctl.a
	for {
		select {
		case <-a.tick: // one checkpoint at a time
		case <-a.timeout.C:
			if reason, ok := ctl.expired(); ok {
				return ctl.fail(reason)
			}
		case ev := <-ctl.j.events:
			if ctl.stale(ev) {
				continue
			}
			switch ev.kind {
			case evStop:
				if ctl.stopRequested(ev) {
					return phaseStopping
				}
			case evSavepoint:
				ctl.savepointRequested(ev) // taken after this checkpoint
			case evAck:
				if !ctl.acked(ev) {
					continue
				}
				if err := ctl.complete(); err != nil {
					return ctl.fail(err.Error())
				}
				if a.spReply != nil {
					if err := ctl.trigger("savepoint"); err != nil {
						return ctl.fail(err.Error())
					}
					continue
				}
				if !a.finalWanted || a.finalDone {
					return phaseRunning
				}
				// Every subtask finished while it ran: the final one now.
				if err := ctl.trigger("final"); err != nil {
					return ctl.fail(err.Error())
				}
			case evFinished:
				ctl.onFinished(ev) // the final checkpoint follows this one
			default:
				if next, ok := ctl.onAttemptEvent(ev); ok {
					return next
				}
			}
		}
	}
}

// begin triggers a checkpoint of kind and goes to next (on failure, to
// restarting).
func (ctl *controller) begin(kind string, next phase) phase {
	if err := ctl.trigger(kind); err != nil {
		return ctl.fail(err.Error())
	}
	return next
}

// trigger begins checkpoint kind (checkpoint, final, savepoint) in the
// job's directory and asks every Worker of the attempt for its barrier.
func (ctl *controller) trigger(kind string) error {
	c, j, a := ctl.c, ctl.j, ctl.a
	if err := c.fencedCheck(j); err != nil {
		return err
	}
	if j.nextCk == 0 {
		id, err := j.store.NextID()
		if err != nil {
			return err
		}
		j.nextCk = max(id, a.restore+1)
	}
	id := j.nextCk
	j.nextCk++
	w, err := j.store.Begin(id)
	if err != nil {
		return err
	}
	a.pending = &pendingCk{id: id, attempt: a.ref.Attempt, w: w, acks: map[string][]checkpoint.PartInfo{}, ops: map[string][]checkpoint.OperatorInfo{}, start: time.Now(), kind: kind}
	for wid := range a.workers {
		cl, ok := c.client(wid)
		if !ok {
			return fmt.Errorf("worker lost: %s", wid)
		}
		req := &triggerReq{attemptRef: a.ref, ID: id, Final: kind == "final", Completed: a.completed}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := call(ctx, cl, actTrigger, req, nil); err != nil {
				c.unreachable(wid, err)
				c.post(j, event{kind: evCallFailed, attempt: a.ref.Attempt, worker: wid, err: fmt.Sprintf("checkpoint %d: trigger on %s: %v", id, wid, err)})
			}
		}()
	}
	if kind == "savepoint" {
		// A stop's savepoint also answers a triggered one that waited.
		p := a.pending
		p.spReply, p.spDir, a.spReply = a.spReply, a.spDir, nil
		if a.stopReply != nil {
			p.stop = a.stopped
			p.spDir = a.stopDir
			a.savepointBegun = true
		}
	}
	return nil
}

// operators unions the Workers' operators with state, by name, the
// Workers in the order of their ids (each runs every operator of its
// subtasks: they list much the same).
func (p *pendingCk) operators() []checkpoint.OperatorInfo {
	ids := make([]string, 0, len(p.ops))
	for id := range p.ops {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := []checkpoint.OperatorInfo{}
	seen := map[string]bool{}
	for _, id := range ids {
		for _, o := range p.ops[id] {
			if !seen[o.Operator] {
				seen[o.Operator] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// acked notes a Worker's parts of the pending checkpoint; true: every
// Worker's are in.
func (ctl *controller) acked(ev event) bool {
	p := ctl.a.pending
	if p == nil || p.id != ev.id {
		return false
	}
	p.acks[ev.worker] = ev.parts
	p.ops[ev.worker] = ev.ops
	p.syncMS = max(p.syncMS, ev.syncMS)
	return len(p.acks) == len(ctl.a.workers)
}

// expired reports the pending checkpoint older than CheckpointTimeout.
func (ctl *controller) expired() (string, bool) {
	c, p := ctl.c, ctl.a.pending
	if p == nil || time.Since(p.start) <= c.cfg.CheckpointTimeout {
		return "", false
	}
	ctl.logf("job_id=%s checkpoint %d expired after %s", ctl.j.id, p.id, c.cfg.CheckpointTimeout)
	return fmt.Sprintf("checkpoint %d expired", p.id), true
}

// complete writes the manifest of the pending checkpoint and tells the
// Workers, whose two-phase sinks then publish it; a failed answer arrives
// as evCallFailed. A savepoint goes to the stop once all of them answered.
func (ctl *controller) complete() error {
	c, j, a := ctl.c, ctl.j, ctl.a
	p := a.pending
	a.pending = nil
	var parts []checkpoint.PartInfo
	for _, ps := range p.acks {
		parts = append(parts, ps...)
	}
	if err := c.fencedCheck(j); err != nil {
		c.recordCk(j, p, "FAILED", err.Error(), nil)
		ctl.ckFailed(p.id, err.Error())
		return err
	}
	meta := checkpoint.Meta{Job: j.name, Fingerprint: j.fingerprint, Parts: parts, Operators: p.operators(), Epoch: j.epoch,
		Properties: map[string]string{"job_id": j.id, "attempt": strconv.Itoa(a.ref.Attempt), "kind": p.kind, "leader_epoch": strconv.FormatUint(j.epoch, 10),
			checkpoint.PropSyncDuration: strconv.FormatFloat(p.syncMS, 'f', 3, 64)}}
	if err := p.w.Commit(meta); err != nil {
		c.recordCk(j, p, "FAILED", err.Error(), nil)
		ctl.ckFailed(p.id, err.Error())
		return err
	}
	a.completed = p.id
	if p.kind == "final" {
		a.finalDone = true
	}
	// Before Retain: the savepoint is a copy of this checkpoint.
	var spErr error
	if p.kind == "savepoint" {
		p.spPath, spErr = ctl.writeSavepoint(p)
	}
	if err := j.store.Retain(max(j.retain, 1)); err != nil {
		ctl.logf("job_id=%s: pruning checkpoints: %v", j.id, err)
	}
	c.recordCk(j, p, "COMPLETED", "", parts)
	c.persist(j)
	ctl.ckCompleted(p.id, p.kind, len(parts), time.Since(p.start))
	var wg sync.WaitGroup
	for wid := range a.workers {
		cl, ok := c.client(wid)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := call(ctx, cl, actComplete, &triggerReq{attemptRef: a.ref, ID: p.id}, nil); err != nil {
				c.unreachable(wid, err)
				c.post(j, event{kind: evCallFailed, attempt: a.ref.Attempt, worker: wid, err: fmt.Sprintf("checkpoint %d: complete on %s: %v", p.id, wid, err)})
			}
		}()
	}
	if p.stop != nil || p.spReply != nil {
		go func() {
			wg.Wait()
			r := stopResult{path: p.spPath, id: p.id, err: spErr}
			if p.stop != nil {
				p.stop <- r
			}
			if p.spReply != nil {
				p.spReply <- r
			}
		}()
	}
	return nil
}

// recordCk keeps a checkpoint's outcome for the API.
func (c *Coordinator) recordCk(j *job, p *pendingCk, status, reason string, parts []checkpoint.PartInfo) {
	c.spanCheckpoint(j, p.attempt, p, status, reason, parts)
	r := ckRecord{ID: p.id, Status: status, Triggered: p.start.UTC(), Duration: time.Since(p.start).Milliseconds(), Parts: len(parts), Kind: p.kind, Reason: reason,
		SyncMS: p.syncMS}
	for _, pi := range parts {
		r.Bytes += pi.Bytes
		r.StateSize += pi.Bytes
		for _, c := range pi.Chain {
			r.StateSize += c.Bytes
		}
		if pi.Delta {
			r.Deltas++
		}
	}
	if status == "COMPLETED" {
		r.Path = j.store.Path(p.id)
		r.Savepoint = p.spPath
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	j.history = append(j.history, r)
	if len(j.history) > 20 {
		j.history = j.history[len(j.history)-20:]
	}
	if status == "COMPLETED" {
		j.latest = &r
		j.ckCount++
		if r.Savepoint != "" {
			j.savepoint = r.Savepoint
		}
	} else {
		j.ckFailed++
	}
}
