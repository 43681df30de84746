package cluster

import (
	"fmt"
	"time"
)

// ckLog paces a job's log lines about completed checkpoints, which come
// every second or so: a person reads the first completion of each attempt,
// every savepoint and final checkpoint, the first completion after a
// failed checkpoint (the failure is always logged), and otherwise one
// summary per CheckpointLogInterval (docs/cluster.md, "Logs"). The API and
// /metrics have every checkpoint. Only the job's controller uses it.
type ckLog struct {
	// logged: a completion of the current attempt was logged; failed: the
	// job's last checkpoint failed.
	logged, failed bool
	// since is when the last line about checkpoints was written.
	since time.Time
	// The completions not logged yet: n of them, first to last, and the
	// last one's parts and duration.
	n           int
	first, last uint64
	parts       int
	took        time.Duration
}

// newAttempt: the next completion is an attempt's first.
func (l *ckLog) newAttempt() { l.logged = false }

// completed logs or notes checkpoint id of kind, completed with parts in
// took.
func (ctl *controller) ckCompleted(id uint64, kind string, parts int, took time.Duration) {
	c, l := ctl.c, &ctl.ckLog
	every := c.cfg.CheckpointLogInterval < 0
	if every || !l.logged || l.failed || kind != "checkpoint" {
		ctl.ckFlush()
		what := ""
		if kind != "checkpoint" {
			what = kind + ", "
		}
		ctl.logf("job_id=%s checkpoint %d complete (%s%d parts, %s)", ctl.j.id, id, what, parts, took.Round(time.Millisecond))
		l.logged, l.failed, l.since = true, false, time.Now()
		return
	}
	if l.n == 0 {
		l.first = id
	}
	l.n++
	l.last, l.parts, l.took = id, parts, took
	if time.Since(l.since) >= c.cfg.CheckpointLogInterval {
		ctl.ckFlush()
	}
}

// ckFailed logs a failed or abandoned checkpoint (after the summary of
// the completions before it); the next completion is logged at once.
func (ctl *controller) ckFailed(id uint64, reason string) {
	ctl.ckFlush()
	ctl.logf("job_id=%s checkpoint %d failed: %s", ctl.j.id, id, reason)
	ctl.ckLog.failed, ctl.ckLog.since = true, time.Now()
}

// ckFlush writes the summary of the completions not logged yet.
func (ctl *controller) ckFlush() {
	l := &ctl.ckLog
	switch {
	case l.n == 0:
		return
	case l.n == 1:
		ctl.logf("job_id=%s checkpoint %d complete (%d parts, %s)", ctl.j.id, l.last, l.parts, l.took.Round(time.Millisecond))
	default:
		ctl.logf("job_id=%s checkpoints %d-%d complete in the last %s (%d checkpoints; latest %d: %d parts, %s)",
			ctl.j.id, l.first, l.last, roughly(time.Since(l.since)), l.n, l.last, l.parts, l.took.Round(time.Millisecond))
	}
	l.n, l.since = 0, time.Now()
}

// roughly is d in whole seconds ("60s"), or milliseconds below one.
func roughly(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%ds", int64(d.Round(time.Second)/time.Second))
}
