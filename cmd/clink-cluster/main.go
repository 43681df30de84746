// Command clink-cluster runs Clink's cluster: the Coordinator, Workers,
// job submission and the cluster benchmarks. It is what `clink
// coordinator`, `clink worker`, `clink run --coordinator` and `clink bench
// shuffle|recovery` run: a binary of its own because the cluster's Arrow
// Flight (gRPC) and Prometheus libraries add about 8 MB of resident memory
// and milliseconds to every start, which embedded `clink run` must not
// pay.
//
// Usage:
//
//	clink-cluster coordinator [flags]
//	clink-cluster worker --coordinator HOST:PORT --slots N [flags]
//	clink-cluster submit --coordinator HOST:PORT --plan-file F --name NAME [--parallelism N] [--fresh] [--from-checkpoint ID]
//	clink-cluster bench shuffle|recovery [flags]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/clink-dev/clink/connectors/builtin"
	// Workers run the lake connectors too (Parquet, object stores, Iceberg).
	_ "github.com/clink-dev/clink/connectors/iceberg"
	_ "github.com/clink-dev/clink/connectors/objectstore"
	"github.com/clink-dev/clink/flight/cluster"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "coordinator":
			return cmdCoordinator(args[1:])
		case "worker":
			return cmdWorker(args[1:])
		case "submit":
			return cmdSubmit(args[1:])
		case "bench":
			if len(args) > 1 && args[1] == "shuffle" {
				return cmdBenchShuffle(args[2:])
			}
			if len(args) > 1 && args[1] == "recovery" {
				return cmdBenchRecovery(args[2:])
			}
		}
	}
	fmt.Fprintln(os.Stderr, "usage: clink-cluster coordinator|worker|submit|bench shuffle|bench recovery [flags] (run through clink)")
	return 2
}

// cmdSubmit sends a Substrait plan (a file clink run wrote) to the
// Coordinator, prints the job id on stdout and the guarantee on stderr.
func cmdSubmit(args []string) int {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	coord := fs.String("coordinator", "127.0.0.1:6123", "the Coordinator's Flight address")
	planFile := fs.String("plan-file", "", "the binary Substrait plan")
	name := fs.String("name", "job", "the job's name (its checkpoints go to <checkpoint dir>/<name>)")
	par := fs.Int("parallelism", 0, "subtasks of every operator (0: the plan's, or 1)")
	fresh := fs.Bool("fresh", false, "ignore the checkpoints in the job's directory")
	from := fs.Uint64("from-checkpoint", 0, "resume from this checkpoint")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	data, err := os.ReadFile(*planFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resp, err := cluster.Submit(ctx, *coord, os.Getenv("CLINK_AUTH_TOKEN"), &cluster.SubmitRequest{Name: *name, Plan: data, Parallelism: *par, Fresh: *fresh, FromCheckpoint: *from})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "clink: job %s: guarantee %s\n", *name, resp.Guarantee)
	if resp.CheckpointDir != "" {
		if resp.RestorePoint != 0 {
			fmt.Fprintf(os.Stderr, "clink: checkpoints: %s; restore point: checkpoint %d\n", resp.CheckpointDir, resp.RestorePoint)
		} else {
			fmt.Fprintf(os.Stderr, "clink: checkpoints: %s; starting fresh\n", resp.CheckpointDir)
		}
	}
	fmt.Printf("job_id=%s\n", resp.Job)
	return 0
}

func cmdCoordinator(args []string) int {
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6123", "Arrow Flight address for Workers and job submission")
	httpAddr := fs.String("http-addr", "127.0.0.1:8081", "HTTP API and /metrics address (off: none)")
	dir := fs.String("checkpoint-dir", "", "jobs' checkpoints go to DIR/<job name> unless their SQL sets execution.checkpointing.dir; must be shared with the Workers")
	interval := fs.Duration("checkpoint-interval", time.Second, "default time between checkpoints")
	restarts := fs.Int("max-restarts", 10, "restarts of a failing job before it is FAILED")
	delay := fs.Duration("restart-delay", 200*time.Millisecond, "wait before a restart")
	beat := fs.Duration("heartbeat", 500*time.Millisecond, "the Workers' heartbeat interval; three missed beats lose a Worker")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := cluster.NewCoordinator(cluster.CoordinatorConfig{FlightAddr: *addr, HTTPAddr: *httpAddr, CheckpointDir: *dir,
		Token: os.Getenv("CLINK_AUTH_TOKEN"), Heartbeat: *beat, MaxRestarts: *restarts, RestartDelay: *delay,
		CheckpointInterval: *interval, Connectors: builtin.Registry(), Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func cmdWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	coord := fs.String("coordinator", "127.0.0.1:6123", "the Coordinator's Flight address")
	addr := fs.String("addr", "127.0.0.1:0", "address for control calls and shuffle streams (port 0: any)")
	slots := fs.Int("slots", 1, "subtasks of each job this Worker runs at once")
	id := fs.String("id", "", "the Worker's id (default: a random one)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	w, err := cluster.NewWorker(cluster.WorkerConfig{ID: *id, Coordinator: *coord, Addr: *addr, Slots: *slots,
		Token: os.Getenv("CLINK_AUTH_TOKEN"), Connectors: builtin.Registry(), Stdout: os.Stdout, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}
