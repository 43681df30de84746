package planner

import (
	"context"
	"sync"

	"github.com/clink-dev/clink/engine"
)

// Run executes every pipeline of the job concurrently and returns their
// stats in order. The first error cancels the others.
func (j *Job) Run(ctx context.Context) ([]*engine.Stats, error) {
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	stats := make([]*engine.Stats, len(j.Pipelines))
	errs := make([]error, len(j.Pipelines))
	var wg sync.WaitGroup
	for i, p := range j.Pipelines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[i], errs[i] = p.Run(ctx2)
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && ctx2.Err() == nil || err != nil && ctx.Err() == nil {
			return stats, err
		}
	}
	return stats, nil
}
