package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
)

// cmdSavepointCheck (`clink savepoint check`, also spelled
// `clink savepoint-check`) says whether a job would restore a savepoint or
// checkpoint, operator by operator, as `clink run` decides it
// (checkpoint.Compare): restored, new, dropped or incompatible, and why.
// It exits 0 when the restore would be accepted, 1 when refused, 2 on a
// usage error (docs/checkpoints.md#changing-a-job).
func cmdSavepointCheck(args []string) int {
	fs := newFlagSet("savepoint check", "(--savepoint PATH | --checkpoint-dir DIR [--id N]) [--allow-non-restored-state] FILE.sql | -e SQL | --plan FILE")
	savepoint := fs.String("savepoint", "", "the savepoint or checkpoint to check: a chk-<id> directory, or a checkpoint directory (its newest)")
	var sf stateFlags
	fs.StringVar(&sf.dir, "checkpoint-dir", "", "a checkpoint directory: check its newest complete checkpoint (or --id)")
	fs.Uint64Var(&sf.id, "id", 0, "with --checkpoint-dir: the checkpoint to check (chk-N)")
	allow := fs.Bool("allow-non-restored-state", false, "check as `clink run --allow-non-restored-state` restores: dropped state is accepted")
	var src source
	src.register(fs)
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	var loc []string
	if *savepoint != "" {
		loc = []string{*savepoint}
	}
	path, id, err := sf.location(loc)
	if err != nil {
		return fail("savepoint-check", &usageError{err.Error() + " (--savepoint PATH or --checkpoint-dir DIR [--id N])"})
	}
	reg := builtin.Registry()
	plan, err := src.load(fs, reg)
	if err != nil {
		return fail("savepoint-check", err)
	}
	cp, err := stateio.Open(path, id)
	if err == nil {
		err = cp.Verify()
	}
	if err != nil {
		return fail("savepoint-check", err)
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 1024, Linger: time.Millisecond, Mem: memory.NewGoAllocator(), Stdout: io.Discard, Stderr: io.Discard, Parallelism: 1}
	ops, err := planner.StateOperators(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt})
	if err != nil {
		return fail("savepoint-check", err)
	}
	fp, err := substrait.Fingerprint(plan)
	if err != nil {
		return fail("savepoint-check", err)
	}
	if savepointReport(os.Stdout, cp, ops, fp, *allow) {
		return 0
	}
	return 1
}

// savepointReport prints the restore's report and says whether the
// restore would be accepted.
func savepointReport(w io.Writer, cp *checkpoint.Checkpoint, ops []checkpoint.OperatorInfo, fp string, allow bool) bool {
	m := cp.Manifest
	fmt.Fprintf(w, "checkpoint %d of job %s (%s)\n", m.CheckpointID, m.Job, cp.Path)
	same := "the same"
	if m.Fingerprint != fp {
		same = "another"
	}
	fmt.Fprintf(w, "plan: %s, this job's %s (%s plan)\n", m.Fingerprint, fp, same)
	if m.Operators == nil {
		// An earlier build's manifest names no signatures: restore then
		// needs the same plan, as it did.
		ok := m.Fingerprint == fp
		fmt.Fprintln(w, "the checkpoint lists no operator signatures (written by an earlier build): the plan must be the same")
		if ok {
			fmt.Fprintln(w, "restore: accepted")
		} else {
			fmt.Fprintln(w, "restore: refused (another plan)")
		}
		return ok
	}
	ms := checkpoint.Compare(m.Operators, ops, allow)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tKIND\tSTATE\tWHY")
	refused := 0
	for _, x := range ms {
		why := x.Reason
		switch {
		case x.Match == checkpoint.New && x.Kind == "source":
			why = "starts per its startup options"
		case x.Match == checkpoint.New:
			why = "starts with empty state"
		case x.Match == checkpoint.Dropped && !x.Refused && x.Kind != "source":
			why += " (--allow-non-restored-state)"
		}
		state := x.Match.String()
		if x.Refused {
			state += " (refused)"
			refused++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Operator, x.Kind, state, why)
	}
	tw.Flush()
	if refused > 0 {
		fmt.Fprintf(w, "restore: refused (%d operators)\n", refused)
		return false
	}
	fmt.Fprintln(w, "restore: accepted")
	return true
}
