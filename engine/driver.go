package engine

import (
	"context"
	"reflect"

	"github.com/clink-dev/clink/vector"
)

// task is what the driver feeds: a node's head (a chain behind one input,
// a binary operator behind two) or an exchange's downstream end (the
// merge of every upstream subtask's channel, local or carried by Flight).
type task interface {
	// data receives a batch of input in (owned by the callee).
	data(in int, b *vector.Batch) error
	// watermark receives the task's watermark each time it rises: the
	// minimum over the inputs that have neither ended nor gone idle.
	watermark(wm int64) error
	// status receives the task's watermark status each time it changes:
	// idle once every input that has not ended is idle, active again as
	// soon as one is not (before anything that input delivers next).
	status(idle bool) error
	// barrier receives checkpoint barrier id once every input has
	// delivered it or ended: every row before the barrier on every input
	// has been delivered, and no row after it.
	barrier(id uint64) error
}

// driver is the one place that reads a task's inputs and aligns them. It
// serves every task of the runtime: a node's chain (one input), a binary
// operator (two), and an exchange's downstream end (p upstream subtasks,
// in process or behind Flight edges, which write the same channels).
//
//   - Data passes as it arrives, tagged with its input.
//   - The watermark is the minimum over the inputs that have not ended
//     and are not idle (KindIdle .. KindActive; Flink's WatermarkStatus);
//     it is delivered when it rises, never lowered. While every input
//     that has not ended is idle the watermark holds and the task is told
//     it is idle; it is told it is active again before the first message
//     of an input that speaks again. Only the status messages change an
//     input's status (as in Flink): a source says it is active before its
//     rows.
//   - Barriers are aligned: an input that delivered barrier n is not read
//     until every other input has delivered n too or ended; then the task
//     gets n once.
//   - An input closed without having ended means the job is stopping: no
//     barrier can align any more, so barriers are dropped from then on and
//     the other inputs are read to their end.
type driver struct {
	in []<-chan Message
	// ctx, when set, stops the driver when it is done (an exchange's
	// channels are never closed); without it, inputs are read until they
	// close.
	ctx context.Context
	// drain: after the task fails, keep reading the inputs (releasing
	// their batches) until they close, so their producers can finish;
	// without it the driver returns the error at once.
	drain bool
	// fail, when set, runs at the task's first error (it stops the
	// producers, so that draining ends).
	fail func()
	// tick, when set, runs before each message (live counters).
	tick func()
}

// run drives t until every input ended or closed (or ctx is done, or t
// failed without drain). ended reports that every input ended.
func (d *driver) run(t task) (ended bool, err error) {
	n := len(d.in)
	wms := make([]int64, n)
	for i := range wms {
		wms[i] = MinWatermark
	}
	done := make([]bool, n)   // ended
	closed := make([]bool, n) // closed (ended or not)
	idle := make([]bool, n)   // watermark status idle
	outIdle := false          // the status the task was given last
	waiting := make([]uint64, n)
	last := MinWatermark
	stopping := false
	live := n // inputs neither ended nor closed
	rd := make([]<-chan Message, n)

	// align delivers a barrier that every input has delivered or ended
	// with, and unblocks the inputs.
	align := func() error {
		var id uint64
		for _, w := range waiting {
			if w != 0 {
				id = w
			}
		}
		if id == 0 {
			return nil
		}
		for i, w := range waiting {
			if w != id && !done[i] {
				return nil
			}
		}
		for i := range waiting {
			waiting[i] = 0
		}
		if err != nil {
			return nil
		}
		return t.barrier(id)
	}
	rise := func() error {
		wm := MaxWatermark
		active, idling := false, false
		for i, w := range wms {
			switch {
			case done[i]:
			case idle[i]:
				idling = true
			default:
				active = true
				wm = min(wm, w)
			}
		}
		// With every input that has not ended idle, the watermark holds.
		if (idling && !active) || wm <= last || err != nil {
			return nil
		}
		last = wm
		return t.watermark(wm)
	}
	// settle tells the task its status when it changed: idle when every
	// input that has not ended is idle (and one has not), else active.
	settle := func() error {
		all, any := true, false
		for i := range idle {
			if !done[i] {
				any = true
				all = all && idle[i]
			}
		}
		now := any && all
		if !any || now == outIdle || err != nil {
			// (With every input ended the task ends: no status.)
			return nil
		}
		outIdle = now
		return t.status(now)
	}
	// activate makes input i active again: the task hears it (if it was
	// idle) before anything the input delivers next.
	activate := func(i int) error {
		if !idle[i] {
			return nil
		}
		idle[i] = false
		if err := settle(); err != nil {
			return err
		}
		return rise()
	}
	for live > 0 {
		for i := range rd {
			rd[i] = d.in[i]
			if done[i] || closed[i] || waiting[i] != 0 {
				rd[i] = nil
			}
		}
		i, m, ok, stop := d.recv(rd)
		if stop {
			return false, d.ctx.Err()
		}
		if d.tick != nil {
			d.tick()
		}
		if !ok {
			closed[i] = true
			live--
			if !stopping {
				// The job is stopping: drop any half-aligned barrier and
				// read the other inputs to their end.
				stopping = true
				clear(waiting)
			}
			continue
		}
		if err != nil {
			if m.Batch != nil {
				m.Batch.Release()
			}
			continue
		}
		var terr error
		switch m.Kind {
		case KindData:
			terr = t.data(i, m.Batch)
		case KindWatermark:
			if m.Watermark > wms[i] {
				wms[i] = m.Watermark
			}
			terr = rise()
		case KindIdle:
			if !idle[i] {
				// The watermark may rise without this input; then the
				// task hears that it is idle, if every input is.
				idle[i] = true
				if terr = rise(); terr == nil {
					terr = settle()
				}
			}
		case KindActive:
			terr = activate(i)
		case KindBarrier:
			if !stopping {
				waiting[i] = m.Checkpoint
				terr = align()
			}
		case KindEnd:
			done[i] = true
			live--
			if terr = rise(); terr == nil {
				terr = settle()
			}
			if terr == nil && !stopping {
				terr = align()
			}
		}
		if terr != nil {
			err = terr
			if d.fail != nil {
				d.fail()
			}
			if !d.drain {
				return false, err
			}
		}
	}
	for _, e := range done {
		if !e {
			return false, err
		}
	}
	return true, err
}

// recv receives from one of the non-nil channels; stop reports that
// d.ctx is done. Two inputs or fewer select directly; more go through
// reflect.Select, once per message (a message is a batch of up to
// thousands of rows, so the cost is per batch, not per row).
func (d *driver) recv(chans []<-chan Message) (i int, m Message, ok, stop bool) {
	var dc <-chan struct{}
	if d.ctx != nil {
		dc = d.ctx.Done()
	}
	switch len(chans) {
	case 1:
		select {
		case m, ok = <-chans[0]:
			return 0, m, ok, false
		case <-dc:
			return -1, m, false, true
		}
	case 2:
		select {
		case m, ok = <-chans[0]:
			return 0, m, ok, false
		case m, ok = <-chans[1]:
			return 1, m, ok, false
		case <-dc:
			return -1, m, false, true
		}
	}
	cases := make([]reflect.SelectCase, 0, len(chans)+1)
	idx := make([]int, 0, len(chans))
	for k, c := range chans {
		if c != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
			idx = append(idx, k)
		}
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(dc)})
	k, v, ok := reflect.Select(cases)
	if k == len(idx) {
		return -1, m, false, true
	}
	if !ok {
		return idx[k], m, false, false
	}
	return idx[k], v.Interface().(Message), true, false
}
