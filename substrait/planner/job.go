package planner

import (
	"context"

	"github.com/clink-dev/clink/engine"
)

// Run executes every pipeline of the job concurrently and returns their
// stats in order. The first error cancels the others. With j.Checkpoint
// set, the job takes checkpoints (and first restores one).
func (j *Job) Run(ctx context.Context) ([]*engine.Stats, error) {
	return engine.RunJob(ctx, j.Pipelines, j.Checkpoint)
}

// Guarantee states the job's end-to-end guarantee.
func (j *Job) Guarantee() string { return engine.Guarantee(j.Pipelines, j.Checkpoint != nil) }
