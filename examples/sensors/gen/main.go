// Command gen writes the reference sensor workload as JSON lines.
//
// Usage:
//
//	gen [-out FILE] [-rate R] [-sensors 8] [-ticks 305 | -n N]
//	    [-start 2026-03-01T08:00:00Z] [-late-sensor 3] [-late-by 2]
//
// The workload is a pure function of the flags; it is defined precisely in
// examples/sensors/README.md. The same flags given to verify describe the
// same workload. -rate paces the output in wall-clock time (reading i is
// written i/R seconds after the first), for feeding a running job; it
// changes when lines are written, never which.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes gen with args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "output file (default stdout)")
	rate := fs.Float64("rate", 0, "readings per second, paced in wall-clock time (0: as fast as possible)")
	config := workload.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 2
	}
	if *rate < 0 {
		fmt.Fprintf(stderr, "gen: rate must be >= 0, got %g\n", *rate)
		return 2
	}
	if err := generate(*out, c, *rate, stdout); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 1
	}
	return 0
}

func generate(out string, c workload.Config, rate float64, stdout io.Writer) error {
	if out == "" || out == "-" {
		if rate > 0 {
			// Unbuffered: each line reaches the reader at its time.
			return workload.Write(newPacer(stdout, rate), c)
		}
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := workload.Write(bw, c); err != nil {
			return err
		}
		return bw.Flush()
	}
	if dir := filepath.Dir(out); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	var w io.Writer = f
	if rate > 0 {
		w = newPacer(f, rate)
	}
	if err := workload.Write(w, c); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pacer writes lines to w no faster than rate per second: line i (from 0)
// is written no earlier than i/rate seconds after the first. Lines are
// written whole, one Write each; a line split across calls is written as
// it comes, timed by its first byte.
type pacer struct {
	w           io.Writer
	interval    time.Duration
	start       time.Time
	lines       int64
	atLineStart bool
}

func newPacer(w io.Writer, rate float64) *pacer {
	return &pacer{w: w, interval: time.Duration(float64(time.Second) / rate), atLineStart: true}
}

func (p *pacer) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		if p.atLineStart {
			if p.lines == 0 {
				p.start = time.Now()
			} else if d := time.Until(p.start.Add(time.Duration(p.lines) * p.interval)); d > 0 {
				time.Sleep(d)
			}
			p.lines++
		}
		end := bytes.IndexByte(b, '\n') + 1
		if end == 0 {
			end = len(b)
		}
		m, err := p.w.Write(b[:end])
		n += m
		if err != nil {
			return n, err
		}
		p.atLineStart = b[end-1] == '\n'
		b = b[end:]
	}
	return n, nil
}
