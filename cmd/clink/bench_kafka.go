package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/clink-dev/clink/bench"
)

func cmdBenchKafka(args []string) int {
	fs := flag.NewFlagSet("bench kafka", flag.ContinueOnError)
	n := fs.Int64("n", 5_000_000, "readings preloaded into the topic")
	sensors := fs.Int("sensors", 1000, "sensors in the workload")
	partitions := fs.Int("partitions", 4, "partitions of the topic")
	runs := fs.Int("runs", 3, "runs per measurement (the median by CPU is reported)")
	dir := fs.String("dir", "", "where to write the generated data (default: a temporary directory, removed after)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, cleanup, err := benchSetup(dir, "clink-bench-kafka-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	defer cleanup()
	res, err := bench.RunKafka(context.Background(), bench.KafkaConfig{
		Self: self, Readings: *n, Sensors: *sensors, Partitions: *partitions, Runs: *runs, Dir: *dir, Log: os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	bench.FormatKafka(os.Stdout, res, *sensors, *partitions)
	return 0
}

// benchSetup returns this executable (the benchmarks run it as child
// processes) and, when *dir is empty, points it at a new temporary
// directory that cleanup removes.
func benchSetup(dir *string, prefix string) (self string, cleanup func(), err error) {
	if self, err = os.Executable(); err != nil {
		return "", nil, err
	}
	cleanup = func() {}
	if *dir == "" {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", nil, err
		}
		*dir, cleanup = d, func() { os.RemoveAll(d) }
	}
	return self, cleanup, nil
}
