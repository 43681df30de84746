package cluster

import (
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/lineage"
)

// jobLineage is a job's OpenLineage state on its controller: the job's
// datasets (from its plan, once), the run of the current attempt, and
// the parent run id all its attempts carry.
type jobLineage struct {
	job    *lineage.Job
	parent string
	run    *lineage.Run
	// ck is the newest completed checkpoint RUNNING was considered for.
	ck uint64
}

// lineageStep sends the OpenLineage events of the controller's move from
// p to next (runJob calls it for each, before the attempt ends). Every
// attempt is a run of its own: START once it is deployed, RUNNING on its
// completed checkpoints (the client rate-limits), FAIL when it fails (the
// job restarts as a new run, or has failed), COMPLETE when the job
// finished, ABORT when it was cancelled or stopped with a savepoint. A Coordinator that lost the
// leadership ends its run with FAIL: the new leader deploys a new
// attempt.
func (ctl *controller) lineageStep(p, next phase) {
	lc := ctl.c.cfg.Lineage
	if lc == nil {
		return
	}
	if ctl.ol == nil {
		ctl.ol = ctl.newJobLineage()
	}
	ol := ctl.ol
	switch next {
	case phaseRunning:
		if p == phaseScheduling {
			ol.run = lc.NewRun(ol.job, ol.parent)
			ol.run.Start()
			ol.ck = ctl.a.completed
			return
		}
	case phaseRestarting, phaseFailed:
		ol.run.Fail(ctl.reason)
		ol.run = nil
		return
	case phaseFenced:
		ol.run.Fail("the Coordinator lost the leadership; the new leader runs the job as a new attempt")
		ol.run = nil
		return
	case phaseFinished:
		// A stop with savepoint finishes the job before its input ended
		// (without the final checkpoint): for lineage it is stopped.
		if a := ctl.a; p == phaseStopping && a != nil && !a.finalDone {
			ol.run.Abort()
		} else {
			ol.run.Complete()
		}
		ol.run = nil
		return
	case phaseCanceled:
		ol.run.Abort()
		ol.run = nil
		return
	}
	if a := ctl.a; a != nil && a.completed > ol.ck {
		ol.ck = a.completed
		ol.run.Checkpoint()
	}
}

// newJobLineage reads the job's datasets from its plan; a table its
// connector cannot name is logged and left out.
func (ctl *controller) newJobLineage() *jobLineage {
	c, j := ctl.c, ctl.j
	var plan pb.Plan
	ol := &jobLineage{parent: lineage.NewRunID()}
	if err := proto.Unmarshal(j.plan, &plan); err != nil {
		c.logf("job_id=%s: OpenLineage: reading the plan: %v", j.id, err)
	}
	job, errs := lineage.JobOf(&plan, c.cfg.Connectors, j.name, j.req.SQL)
	for _, err := range errs {
		c.logf("job_id=%s: OpenLineage: %v", j.id, err)
	}
	ol.job = job
	return ol
}
