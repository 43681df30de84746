package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clink-dev/clink/bench/clusterbench"
)

func cmdBenchShuffle(args []string) int {
	fs := flag.NewFlagSet("bench shuffle", flag.ContinueOnError)
	n := fs.Int64("n", 5_000_000, "readings")
	sensors := fs.Int("sensors", 1000, "sensors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "clink-bench-shuffle-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	r, err := clusterbench.RunShuffle(context.Background(), self, dir, *n, *sensors)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	clusterbench.FormatShuffle(os.Stdout, r, *sensors)
	return 0
}

func cmdBenchRecovery(args []string) int {
	fs := flag.NewFlagSet("bench recovery", flag.ContinueOnError)
	runs := fs.Int("runs", 5, "Worker kills")
	rate := fs.Int("rate", 5000, "rows per second into the source topic")
	par := fs.Int("parallelism", 2, "the job's parallelism (1 or 2; three Workers of one slot)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if *par < 1 || *par > 2 {
		fmt.Fprintln(os.Stderr, "error: -parallelism must be 1 or 2")
		return 2
	}
	rs, err := clusterbench.RunRecovery(context.Background(), self, *runs, *rate, *par)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	clusterbench.FormatRecovery(os.Stdout, rs, *rate, *par)
	return 0
}
