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
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "clink-bench-kafka-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		defer os.RemoveAll(d)
		*dir = d
	}
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
