package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/clink-dev/clink/bench"
)

// cmdBenchCheckpoint measures what checkpoints cost: the sensors job's
// throughput with a checkpoint every second against none (same binary,
// same file, runs interleaved, median CPU of each), and the window state's
// checkpoint size per group, snapshot and restore times.
func cmdBenchCheckpoint(args []string) int {
	fs := flag.NewFlagSet("bench checkpoint", flag.ContinueOnError)
	n := fs.Int64("n", 10_000_000, "readings in the throughput runs")
	sensors := fs.Int("sensors", 1000, "sensors in the throughput runs")
	runs := fs.Int("runs", 3, "runs of each configuration")
	groups := fs.Int("groups", 100_000, "open window groups in the state-size measurement")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := benchCheckpoint(*n, *sensors, *runs, *groups); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func benchCheckpoint(n int64, sensors, runs, groups int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "clink-bench-ck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "readings.jsonl")
	fmt.Fprintf(os.Stderr, "generating %d readings (%d sensors)\n", n, sensors)
	cfg, err := bench.WriteSensors(data, n, sensors)
	if err != nil {
		return err
	}
	events := cfg.Readings()
	sql := bench.SensorsSQL(data, "blackhole")
	var plain, ck []bench.Measure
	completed := 0
	for i := 0; i < runs; i++ {
		m, err := bench.RunProcess(context.Background(), "no checkpoints", events, self, "run", "--quiet", "-e", sql)
		if err != nil {
			return err
		}
		plain = append(plain, m)
		cdir := filepath.Join(dir, fmt.Sprintf("ck%d", i))
		m, err = bench.RunProcess(context.Background(), "checkpoint every 1 s", events, self, "run", "--quiet",
			"--checkpoint-dir", cdir, "--checkpoint-interval-ms", "1000", "--checkpoints-retained", "1000", "-e", sql)
		if err != nil {
			return err
		}
		ck = append(ck, m)
		done, _ := filepath.Glob(filepath.Join(cdir, "chk-*", "_metadata.json"))
		completed += len(done)
	}
	median := func(ms []bench.Measure) bench.Measure {
		sort.Slice(ms, func(i, j int) bool { return ms[i].CPU < ms[j].CPU })
		return ms[len(ms)/2]
	}
	p, c := median(plain), median(ck)
	fmt.Printf("checkpoint benchmark: sensors job, %d readings, %d sensors, file -> blackhole, median of %d runs each\n\n", events, sensors, runs)
	fmt.Printf("%-28s %14s %16s %12s %10s\n", "run", "events/s", "events/CPU-s", "peak RSS MB", "wall s")
	for _, m := range []bench.Measure{p, c} {
		fmt.Printf("%-28s %14.0f %16.0f %12.1f %10.2f\n", m.Label, m.EventsPerSec(), m.EventsPerCPUSec(), float64(m.PeakRSSKB)/1024, m.Wall.Seconds())
	}
	fmt.Printf("\nwith checkpoints / without, events per CPU-second: %.3fx (%d checkpoints completed over %d runs, incl. each run's final one)\n",
		c.EventsPerCPUSec()/p.EventsPerCPUSec(), completed, runs)
	st, err := bench.CheckpointState(filepath.Join(dir, "state"), groups)
	if err != nil {
		return err
	}
	fmt.Printf("window state: %d groups -> %d bytes (%.1f B per group, zstd), snapshot %.1f ms, restore %.1f ms (read, verify, rebuild)\n",
		st.Groups, st.Bytes, st.BytesPerGroup, float64(st.Snapshot.Microseconds())/1000, float64(st.Restore.Microseconds())/1000)
	return nil
}
