// Command gen writes the reference sensor workload as JSON lines.
//
// Usage:
//
//	gen [-out FILE] [-sensors 8] [-ticks 305 | -n N] [-start 2026-03-01T08:00:00Z]
//	    [-late-sensor 3] [-late-by 2]
//
// The workload is a pure function of the flags; it is defined precisely in
// examples/sensors/README.md. The same flags given to verify describe the
// same workload.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	if err := generate(*out, c, stdout); err != nil {
		fmt.Fprintf(stderr, "gen: %v\n", err)
		return 1
	}
	return 0
}

func generate(out string, c workload.Config, stdout io.Writer) error {
	if out == "" || out == "-" {
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
	if err := workload.Write(f, c); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
