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
	"github.com/clink-dev/clink/flight/cluster"
)

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
