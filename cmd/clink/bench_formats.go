package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clink-dev/clink/bench"
)

// cmdBenchFormats is `clink bench formats`: the sensors query via Kafka
// with JSON, Avro and Protobuf values (issue #18).
func cmdBenchFormats(args []string) int {
	fs := flag.NewFlagSet("bench formats", flag.ContinueOnError)
	n := fs.Int64("n", 2_000_000, "readings preloaded into each topic")
	sensors := fs.Int("sensors", 1000, "sensors in the workload")
	runs := fs.Int("runs", 3, "runs per measurement (the median by CPU is reported)")
	dir := fs.String("dir", "", "where to write the generated data (default: a temporary directory, removed after)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, cleanup, err := benchSetup(dir, "clink-bench-formats-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	defer cleanup()
	res, err := bench.RunFormats(context.Background(), bench.FormatsConfig{Self: self, Readings: *n, Sensors: *sensors, Runs: *runs, Dir: *dir, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	bench.FormatFormats(os.Stdout, res, *sensors)
	return 0
}
