package cluster

// running: the attempt runs with no checkpoint in flight. The interval
// begins a checkpoint, the end of every subtask begins the final one, a
// stop or a triggered savepoint begins the savepoint; the job is finished
// once every Worker is done.
func (ctl *controller) running() phase {
	a := ctl.a
	for {
		select {
		case <-a.tick:
			if !a.finalWanted {
				return ctl.begin("checkpoint", phaseCheckpointing)
			}
		case ev := <-ctl.j.events:
			if ctl.stale(ev) {
				continue
			}
			switch ev.kind {
			case evStop:
				if ctl.stopRequested(ev) {
					return ctl.begin("savepoint", phaseStopping)
				}
			case evSavepoint:
				if ctl.savepointRequested(ev) {
					return ctl.begin("savepoint", phaseCheckpointing)
				}
			case evFinished:
				if ctl.onFinished(ev) {
					return ctl.begin("final", phaseCheckpointing)
				}
			case evAck: // of no checkpoint in flight
			default:
				if next, ok := ctl.onAttemptEvent(ev); ok {
					return next
				}
			}
		}
	}
}
