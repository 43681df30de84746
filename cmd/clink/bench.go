package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/clink-dev/clink/bench"
)

func cmdBench(args []string) int {
	if len(args) > 0 && args[0] == "kafka" {
		return cmdBenchKafka(args[1:])
	}
	if len(args) > 0 && args[0] == "formats" {
		return cmdBenchFormats(args[1:])
	}
	if len(args) > 0 && args[0] == "checkpoint" {
		return cmdBenchCheckpoint(args[1:])
	}
	if len(args) > 0 && args[0] == "nexmark" {
		return cmdBenchNexmark(args[1:])
	}
	if len(args) > 0 && args[0] == "produce" {
		return cmdBenchProduce(args[1:])
	}
	if len(args) > 0 && args[0] == "shuffle" {
		return cmdBenchShuffle(args[1:])
	}
	if len(args) > 0 && args[0] == "otel" {
		return cmdBenchOTel(args[1:])
	}
	if len(args) > 0 && args[0] == "recovery" {
		return cmdBenchRecovery(args[1:])
	}
	if len(args) == 0 || args[0] != "sensors" {
		fmt.Fprintln(os.Stderr, "usage: clink bench sensors [-n READINGS] [-sensors N] [-dir DIR]\n       clink bench kafka [-n READINGS] [-sensors N] [-partitions P] [-runs R]\n       clink bench formats [-n READINGS] [-sensors N] [-runs R]\n       clink bench checkpoint [-n READINGS] [-sensors N] [-runs R] [-groups G]\n       clink bench shuffle [-n READINGS] [-sensors N]\n       clink bench recovery [-runs R] [-rate ROWS_PER_S]\n       clink bench otel [-n READINGS] [-sensors N] [-rounds R]\n       clink bench nexmark [--query q5|all] [--events 10M] [--via-kafka] [--results DIR] [--doc FILE]\n       clink bench produce [--brokers B] [--table bid|auction|person|all] [--topic T] [--events N]")
		return 2
	}
	fs := flag.NewFlagSet("bench sensors", flag.ContinueOnError)
	n := fs.Int64("n", 10_000_000, "readings in the throughput run")
	sensors := fs.Int("sensors", 1000, "sensors in the throughput run")
	dir := fs.String("dir", "", "where to write the generated data (default: a temporary directory, removed after)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if err := benchSensors(*n, *sensors, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func benchSensors(n int64, sensors int, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "clink-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	big := filepath.Join(dir, "readings-big.jsonl")
	fmt.Fprintf(os.Stderr, "generating %d readings (%d sensors) into %s\n", n, sensors, big)
	cfg, err := bench.WriteSensors(big, n, sensors)
	if err != nil {
		return err
	}
	events := cfg.Readings()
	small := filepath.Join(dir, "readings-tutorial.jsonl")
	tut, err := bench.WriteSensors(small, 2440, 8)
	if err != nil {
		return err
	}
	ctx := context.Background()

	// The hand-written limit, in this process.
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	windows, err := bench.HandLoop(big, 3000)
	if err != nil {
		return err
	}
	hand := bench.Measure{Label: "hand-written Go loop", Events: events, Wall: time.Since(start), OutputRows: windows}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	hand.CPU = time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())

	engine, err := bench.RunProcess(ctx, "clink run (file -> blackhole)", events, self, "run", "--quiet", "-e", bench.SensorsSQL(big, "blackhole"))
	if err != nil {
		return err
	}
	// Start-up dominates the tutorial run: take the median of five.
	var runs []bench.Measure
	for i := 0; i < 5; i++ {
		m, err := bench.RunProcess(ctx, "clink run tutorial (file -> print)", tut.Readings(), self, "run", "--quiet", "-e", bench.SensorsSQL(small, "print"))
		if err != nil {
			return err
		}
		runs = append(runs, m)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].FirstResult < runs[j].FirstResult })
	tutorial := runs[len(runs)/2]

	fmt.Printf("sensors benchmark: %d readings, %d sensors, 10 s tumbling windows, COUNT/AVG/MIN/MAX\n\n", events, sensors)
	fmt.Printf("%-36s %14s %12s %16s %12s %10s\n", "run", "events/s", "CPU s/M ev", "events/CPU-s", "peak RSS MB", "wall s")
	for _, m := range []bench.Measure{hand, engine} {
		rss := "-"
		if m.PeakRSSKB > 0 {
			rss = fmt.Sprintf("%.1f", float64(m.PeakRSSKB)/1024)
		}
		fmt.Printf("%-36s %14.0f %12.3f %16.0f %12s %10.2f\n", m.Label, m.EventsPerSec(), m.CPUPerMillion(), m.EventsPerCPUSec(), rss, m.Wall.Seconds())
	}
	fmt.Printf("\nengine / hand loop, events per CPU-second: %.2fx\n", engine.EventsPerCPUSec()/hand.EventsPerCPUSec())
	fmt.Printf("tutorial workload (%d readings): first result %.1f ms after process start (median of 5), %d rows, peak RSS %.1f MB, wall %.1f ms\n",
		tutorial.Events, float64(tutorial.FirstResult.Microseconds())/1000, tutorial.OutputRows, float64(tutorial.PeakRSSKB)/1024, float64(tutorial.Wall.Microseconds())/1000)
	return nil
}
