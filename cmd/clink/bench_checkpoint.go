package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clink-dev/clink/bench"
)

// cmdBenchCheckpoint measures what checkpoints cost: the sensors job's CPU
// with a checkpoint every second against none (same binary, same file,
// runs interleaved, median CPU of each) at several numbers of sensors (open
// window groups), the synchronous pause of every checkpoint, and for one
// window state the bytes of a delta when a fraction of its keys changed
// and the restore of that chain.
func cmdBenchCheckpoint(args []string) int {
	fs := flag.NewFlagSet("bench checkpoint", flag.ContinueOnError)
	n := fs.Int64("n", 10_000_000, "readings in the throughput runs")
	sizes := fs.String("sensors", "1000,200000,1000000", "comma-separated numbers of sensors (open groups per window) of the throughput runs")
	runs := fs.Int("runs", 3, "runs of each configuration")
	groups := fs.Int("groups", 1_000_000, "open window groups in the delta and restore measurement")
	changed := fs.Float64("changed", 0.01, "fraction of the groups that change between the full and the delta checkpoint")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var list []int
	for _, f := range strings.Split(*sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			fmt.Fprintf(os.Stderr, "error: --sensors: %q is not a positive number\n", f)
			return 2
		}
		list = append(list, v)
	}
	if err := benchCheckpoint(*n, list, *runs, *groups, *changed); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func benchCheckpoint(n int64, sizes []int, runs, groups int, changed float64) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "clink-bench-ck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	median := bench.MedianByCPU
	fmt.Printf("checkpoint benchmark: sensors job, %d readings, file -> blackhole, checkpoint every 1 s vs none, median CPU of %d runs each\n\n", n, runs)
	fmt.Printf("%-9s %10s %10s %9s %7s %7s %9s %9s %9s %10s %10s\n", "sensors", "CPU none", "CPU ckpt", "overhead", "ckpts", "deltas", "pause p50", "pause p99", "pause max", "RSS none", "RSS ckpt")
	rss := map[int]int64{} // peak RSS without checkpoints, by sensors
	for _, sensors := range sizes {
		data := filepath.Join(dir, "readings.jsonl")
		fmt.Fprintf(os.Stderr, "generating %d readings (%d sensors)\n", n, sensors)
		cfg, err := bench.WriteSensors(data, n, sensors)
		if err != nil {
			return err
		}
		events := cfg.Readings()
		sql := bench.SensorsSQL(data, "blackhole")
		var plain, ck []bench.Measure
		var pauses []float64
		deltas, completed := 0, 0
		for i := 0; i < runs; i++ {
			m, err := bench.RunProcess(context.Background(), "none", events, self, "run", "--quiet", "-e", sql)
			if err != nil {
				return err
			}
			plain = append(plain, m)
			cdir := filepath.Join(dir, fmt.Sprintf("ck-%d-%d", sensors, i))
			m, err = bench.RunProcess(context.Background(), "ckpt", events, self, "run", "--quiet",
				"--checkpoint-dir", cdir, "--checkpoint-interval-ms", "1000", "--checkpoints-retained", "1000", "-e", sql)
			if err != nil {
				return err
			}
			ck = append(ck, m)
			ps, d, err := bench.Pauses(cdir)
			if err != nil {
				return err
			}
			pauses, deltas, completed = append(pauses, ps...), deltas+d, completed+len(ps)
			os.RemoveAll(cdir)
		}
		os.Remove(data)
		sort.Float64s(pauses)
		q := func(f float64) float64 {
			if len(pauses) == 0 {
				return 0
			}
			return pauses[min(len(pauses)-1, int(f*float64(len(pauses))))]
		}
		p, c := median(plain), median(ck)
		rss[sensors] = p.PeakRSSKB
		fmt.Printf("%-9d %9.2fs %9.2fs %8.1f%% %7d %7d %7.1fms %7.1fms %7.1fms %8.0fMB %8.0fMB\n", sensors, p.CPU.Seconds(), c.CPU.Seconds(),
			100*(c.CPU.Seconds()/p.CPU.Seconds()-1), completed, deltas, q(0.5), q(0.99), q(1), float64(p.PeakRSSKB)/1024, float64(c.PeakRSSKB)/1024)
	}
	if lo, hi := slices.Min(sizes), slices.Max(sizes); hi > lo {
		// The workload's readings of one sensor tick once a second from the
		// same start: with n/sensors <= 10 ticks every sensor's group is in
		// one open window at the end, the peak.
		fmt.Printf("\nin-memory state: (peak RSS at %d sensors - at %d) / %d open groups = %.0f B per open window group\n",
			hi, lo, hi-lo, float64(rss[hi]-rss[lo])*1024/float64(hi-lo))
	}
	k := int(changed * float64(groups))
	dm, err := bench.CheckpointDelta(filepath.Join(dir, "state"), groups, k)
	if err != nil {
		return err
	}
	fmt.Printf("\nwindow state, %d groups: full checkpoint %d B (%.1f B per group) in %.0f ms; after %d groups changed (%.1f%%) a delta of %d B (%.2f%% of the full one) in %.1f ms, pausing the operator %.1f ms; restore of the chain (full + delta) %.0f ms\n",
		groups, dm.FullBytes, float64(dm.FullBytes)/float64(groups), ms(dm.FullSnapshot), k, 100*changed, dm.DeltaBytes,
		100*float64(dm.DeltaBytes)/float64(dm.FullBytes), ms(dm.DeltaSnapshot), ms(dm.Pause), ms(dm.Restore))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
