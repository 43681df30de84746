package cluster

// stopping: stop with savepoint. The savepoint follows the checkpoint in
// flight, if any; once every Worker's sinks published it, the attempt is
// cancelled and the job is finished (a job whose Workers are all done
// first is finished too, and the stop is told so).
func (ctl *controller) stopping() phase {
	c, j, a := ctl.c, ctl.j, ctl.a
	for {
		select {
		case <-a.tick: // no more checkpoints
		case <-a.timeout.C:
			if reason, ok := ctl.expired(); ok {
				return ctl.fail(reason)
			}
		case r := <-a.stopped:
			ctl.cancelAll()
			c.mu.Lock()
			j.savepoint = r.path
			c.mu.Unlock()
			a.stopReply <- r
			return phaseFinished
		case ev := <-j.events:
			if ctl.stale(ev) {
				continue
			}
			switch ev.kind {
			case evStop:
				ctl.stopRequested(ev) // refused: already stopping
			case evSavepoint:
				ctl.savepointRequested(ev) // refused: stopping
			case evAck:
				if !ctl.acked(ev) {
					continue
				}
				if err := ctl.complete(); err != nil {
					return ctl.fail(err.Error())
				}
				var err error
				switch {
				case !a.savepointBegun && !a.finalDone:
					err = ctl.trigger("savepoint")
				case a.finalWanted && !a.finalDone:
					err = ctl.trigger("final")
				}
				if err != nil {
					return ctl.fail(err.Error())
				}
			case evFinished:
				if ctl.onFinished(ev) {
					if err := ctl.trigger("final"); err != nil {
						return ctl.fail(err.Error())
					}
				}
			default:
				if next, ok := ctl.onAttemptEvent(ev); ok {
					return next
				}
			}
		}
	}
}
