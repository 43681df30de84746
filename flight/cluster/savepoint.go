package cluster

import (
	"context"
	"fmt"

	"github.com/clink-dev/clink/checkpoint"
	cflight "github.com/clink-dev/clink/flight"
)

// Savepoints (Flink's): a checkpoint of kind savepoint, taken on request
// while the job runs on (Savepoint) or before it stops (Stop), then copied
// out of the job's checkpoint directory into a directory of its own,
// <savepoint dir>/savepoint-<job name>-<checkpoint id>, that checkpoint
// retention never touches. A job submitted with FromSavepoint restores
// from such a directory (or from a chk-<id> one).

// SavepointRequest asks for a savepoint of a running job (clink savepoint,
// clink stop).
type SavepointRequest struct {
	Job JobID `json:"job"`
	// Dir is the directory the savepoint goes into (Flink's
	// target-directory); "": the job's savepoint directory.
	Dir string `json:"dir,omitempty"`
	// Stop stops the job once the savepoint is published (stop with
	// savepoint).
	Stop bool `json:"stop,omitempty"`
}

// SavepointResponse answers a savepoint request once the savepoint is
// complete and every Worker's sinks published it.
type SavepointResponse struct {
	Job        JobID  `json:"job"`
	Savepoint  string `json:"savepoint"`
	Checkpoint uint64 `json:"checkpoint"`
	State      string `json:"state"`
}

// Savepoint takes a savepoint of running job id into dir ("": its
// savepoint directory); the job keeps running. It returns once the
// savepoint is written and published.
func (c *Coordinator) Savepoint(id, dir string) (*SavepointResponse, error) {
	return c.savepoint(&SavepointRequest{Job: JobID(id), Dir: dir})
}

func (c *Coordinator) savepoint(r *SavepointRequest) (*SavepointResponse, error) {
	id := string(r.Job)
	dir := r.Dir
	if dir != "" {
		abs, err := checkpoint.AbsLoc(dir)
		if err != nil {
			return nil, err
		}
		dir = abs
	}
	j, err := c.liveJob(id)
	if err != nil {
		return nil, err
	}
	kind, state := evSavepoint, StateRunning
	if r.Stop {
		kind, state = evStop, StateFinished
	}
	reply := make(chan stopResult, 1)
	j.events <- event{kind: kind, reply: reply, dir: dir}
	res := <-reply
	if res.err != nil {
		return nil, res.err
	}
	return &SavepointResponse{Job: JobID(id), Savepoint: res.path, Checkpoint: res.id, State: state}, nil
}

// savepointDir is where job j's savepoints go by default: the SQL's
// 'execution.checkpointing.savepoint-dir', else the Coordinator's
// SavepointDir, else <CheckpointDir>/savepoints, else <the job's
// checkpoint directory>/savepoints.
func (c *Coordinator) savepointDir(j *job, settings map[string]string) (string, error) {
	dir := settings["savepoint_dir"]
	switch {
	case dir != "":
	case c.cfg.SavepointDir != "":
		dir = c.cfg.SavepointDir
	case c.cfg.CheckpointDir != "":
		dir = checkpoint.JoinLoc(c.cfg.CheckpointDir, "savepoints")
	default:
		dir = checkpoint.JoinLoc(j.ckDir, "savepoints")
	}
	return checkpoint.AbsLoc(dir)
}

// savepointRequested takes a triggered savepoint's request, or answers why
// not. It waits for the checkpoint in flight, if any.
func (ctl *controller) savepointRequested(ev event) bool {
	j, a := ctl.j, ctl.a
	var err error
	switch {
	case j.store == nil:
		err = fmt.Errorf("job %s takes no checkpoints (no checkpoint directory): cannot take a savepoint", j.id)
	case a.stopReply != nil || a.finalWanted:
		err = fmt.Errorf("job %s is stopping or finishing: no savepoint", j.id)
	case a.spReply != nil:
		err = fmt.Errorf("job %s: a savepoint is already waiting for the checkpoint in flight", j.id)
	}
	if err != nil {
		ev.reply <- stopResult{err: err}
		return false
	}
	a.spReply, a.spDir = ev.reply, ev.dir
	return true
}

// writeSavepoint copies the savepoint p, just committed in the job's
// directory, into its own directory and returns its path.
func (ctl *controller) writeSavepoint(p *pendingCk) (string, error) {
	j := ctl.j
	base := p.spDir
	if base == "" {
		base = j.spDir
	}
	dir := checkpoint.JoinLoc(base, fmt.Sprintf("savepoint-%s-%d", j.name, p.id))
	cp, err := j.store.Open(p.id)
	if err == nil {
		err = checkpoint.WriteSavepoint(cp, dir)
	}
	if err != nil {
		err = fmt.Errorf("savepoint %d (complete as %s): %w", p.id, j.store.Path(p.id), err)
		ctl.logf("job_id=%s %v", j.id, err)
		return "", err
	}
	ctl.logf("job_id=%s savepoint %d: %s", j.id, p.id, dir)
	return dir, nil
}

// savepointsFailed answers the triggered savepoints waiting (in flight or
// for the checkpoint in flight) with err.
func (ctl *controller) savepointsFailed(err error) {
	a := ctl.a
	if p := a.pending; p != nil && p.spReply != nil {
		p.spReply <- stopResult{err: err}
		p.spReply = nil
	}
	if a.spReply != nil {
		a.spReply <- stopResult{err: err}
		a.spReply = nil
	}
}

// TriggerSavepoint asks the Coordinator at addr (its Flight address, or
// its HTTP API's, as for Submit) for a savepoint of a job, or with r.Stop
// to stop it with one.
func TriggerSavepoint(ctx context.Context, addr, token string, r *SavepointRequest, opts ...cflight.Option) (*SavepointResponse, error) {
	resp, _, err := callCoordinator[SavepointResponse](ctx, addr, token, actSavepoint, r, opts...)
	return resp, err
}
