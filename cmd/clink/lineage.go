package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/substrait/planner"
)

// openLineage is the process's OpenLineage client as the OPENLINEAGE_*
// variables configure it (docs/observability.md), nil when off. A bad
// setting is reported on stderr and leaves lineage off: lineage never
// stops a job.
func openLineage(stderr io.Writer) *lineage.Client {
	lc, err := lineage.FromEnv(versionString(), func(format string, args ...any) {
		fmt.Fprintf(stderr, "clink: "+format+"\n", args...)
	})
	if err != nil {
		fmt.Fprintf(stderr, "clink: OpenLineage off: %v\n", err)
	}
	return lc
}

// jobLineage is what an embedded run reports its lineage with.
type jobLineage struct {
	client *lineage.Client
	name   string
	sql    string
}

// runJob runs job, sending its OpenLineage run events when ol has a
// client: START as it starts, RUNNING on completed checkpoints (rate
// limited by the client), then COMPLETE when its input ended, ABORT when
// it was stopped (a signal) and FAIL with the error otherwise.
func runJob(ctx context.Context, job *planner.Job, plan *pb.Plan, reg *connectors.Registry, stderr io.Writer, ol *jobLineage) ([]*engine.Stats, error) {
	if ol == nil || ol.client == nil {
		return job.Run(ctx)
	}
	lj, errs := lineage.JobOf(plan, reg, ol.name, ol.sql)
	if stderr == nil {
		stderr = os.Stderr
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "clink: OpenLineage: %v\n", err)
	}
	run := ol.client.NewRun(lj, "")
	if ck := job.Checkpoint; ck != nil {
		prev := ck.OnComplete
		ck.OnComplete = func(id uint64) {
			if prev != nil {
				prev(id)
			}
			run.Checkpoint()
		}
	}
	run.Start()
	stats, err := job.Run(ctx)
	interrupted := false
	for _, s := range stats {
		interrupted = interrupted || (s != nil && s.Interrupted)
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
		run.Abort()
	case err != nil:
		run.Fail(err.Error())
	case interrupted:
		run.Abort()
	default:
		run.Complete()
	}
	return stats, err
}
