package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/flight/cluster"
)

// `clink savepoint JOB_ID` and `clink stop JOB_ID` (Flink's names): a
// savepoint of a job running on a Coordinator, the job running on or
// stopped after it. Both print the savepoint's directory on stdout once it
// is complete and its output published.

func cmdSavepoint(args []string) int { return savepointCmd("savepoint", args) }

func cmdStop(args []string) int { return savepointCmd("stop", args) }

func savepointCmd(name string, args []string) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var coord coordinatorFlags
	coord.register(fs, "127.0.0.1:6123", "the Coordinator at HOST:PORT (its Flight port, 6123, or its HTTP API's, 8081); with HA Coordinators, a comma-separated list: whichever leads")
	dir := fs.String("dir", "", "the directory the savepoint goes into (default: the job's savepoint directory, execution.checkpointing.savepoint-dir or the Coordinator's --savepoint-dir)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: clink %s JOB_ID [--coordinator HOST:PORT] [--dir DIR]\n", name)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	addr, err := coord.address(fs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	req := &cluster.SavepointRequest{Job: cluster.JobID(fs.Arg(0)), Stop: name == "stop"}
	if *dir != "" {
		// The Coordinator resolves the path: make it this shell's.
		if req.Dir, err = checkpoint.AbsLoc(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := cluster.TriggerSavepoint(ctx, addr, os.Getenv("CLINK_AUTH_TOKEN"), req, coord.opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "clink: job %s: savepoint complete (checkpoint %d); job %s\n", resp.Job, resp.Checkpoint, resp.State)
	fmt.Println(resp.Savepoint)
	return 0
}
