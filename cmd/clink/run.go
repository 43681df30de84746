package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/engine"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/substrait"
	"github.com/clink-dev/clink/substrait/planner"
	"github.com/clink-dev/clink/substrait/sql"
)

// source is where a command's SQL or plan comes from.
type source struct {
	expr, plan string
	// text is the SQL load compiled ("" for a plan file).
	text string
}

func (s *source) register(fs *flag.FlagSet) {
	fs.StringVar(&s.expr, "e", "", "SQL to run instead of a file")
	fs.StringVar(&s.plan, "plan", "", "a Substrait plan file (binary or JSON) to run instead of SQL")
}

// load compiles the SQL (file or -e) or reads the plan file.
func (s *source) load(fs *flag.FlagSet, reg *connectors.Registry) (*pb.Plan, error) {
	switch {
	case s.plan != "":
		data, err := os.ReadFile(s.plan)
		if err != nil {
			return nil, err
		}
		var p pb.Plan
		if err := substrait.UnmarshalPlan(data, &p); err != nil {
			if jerr := protojson.Unmarshal(data, &p); jerr != nil {
				return nil, fmt.Errorf("%s is neither a binary nor a JSON Substrait plan: %v", s.plan, err)
			}
		}
		return &p, nil
	case s.expr != "":
		if fs.NArg() > 0 {
			return nil, fmt.Errorf("give either -e SQL or a file, not both")
		}
		s.text = s.expr
		return sql.Compile(s.expr, reg)
	case fs.NArg() == 1:
		data, err := os.ReadFile(fs.Arg(0))
		if err != nil {
			return nil, err
		}
		p, err := sql.Compile(string(data), reg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fs.Arg(0), err)
		}
		s.text = string(data)
		return p, nil
	}
	return nil, fmt.Errorf("give a SQL file, -e SQL or --plan FILE")
}

func cmdRun(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var src source
	src.register(fs)
	batch := fs.Int("batch-size", 8192, "rows per micro-batch")
	linger := fs.Duration("linger", 20*time.Millisecond, "longest a partly filled micro-batch waits")
	quiet := fs.Bool("quiet", false, "do not print the end-of-run summary on stderr")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	var cko checkpointFlags
	cko.register(fs)
	parallelism := fs.Int("parallelism", 1, "subtasks of every operator: sources split their partitions (Kafka) or files, keyed operators their key groups")
	var coord coordinatorFlags
	coord.register(fs, "", "submit the job to the Coordinator at HOST:PORT (its Flight port, 6123, or its HTTP API's, 8081) instead of running it here; with HA Coordinators, a comma-separated list: whichever leads")
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	coordinator, err := coord.address(fs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	reg := builtin.Registry()
	plan, err := src.load(fs, reg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cko.job = jobName(fs, &src, plan)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	settings, err := substrait.JobSettings(plan)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if v, ok := settings["parallelism"]; ok && !set["parallelism"] {
		fmt.Sscan(v, parallelism)
	}
	if err := cko.applySettings(settings, set); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if *parallelism < 1 {
		fmt.Fprintln(os.Stderr, "error: --parallelism must be at least 1")
		return 2
	}
	if coordinator != "" {
		return submit(ctx, coordinator, plan, src.text, cko.job, set, *parallelism, &cko, coord.opts...)
	}
	lc := openLineage(os.Stderr)
	defer lc.Close(lineage.DefaultFlushTimeout)
	stats, err := executeWith(ctx, plan, reg, connectors.Runtime{BatchSize: *batch, Linger: *linger, Stdout: os.Stdout, Stderr: os.Stderr, Parallelism: *parallelism}, &cko, &jobLineage{client: lc, name: cko.job, sql: src.text})
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if !*quiet {
		summarize(stats)
	}
	return 0
}

// execute plans and runs a job to its end, without checkpoints.
func execute(ctx context.Context, plan *pb.Plan, reg *connectors.Registry, rt connectors.Runtime) ([]*engine.Stats, error) {
	return executeWith(ctx, plan, reg, rt, nil, nil)
}

// executeWith plans and runs a job; with ck (and a checkpoint directory)
// it takes checkpoints and resumes from one. It states the job's
// end-to-end guarantee on stderr first. With ol it sends the job's
// OpenLineage events (runJob).
func executeWith(ctx context.Context, plan *pb.Plan, reg *connectors.Registry, rt connectors.Runtime, ck *checkpointFlags, ol *jobLineage) ([]*engine.Stats, error) {
	if rt.Mem == nil {
		rt.Mem = memory.NewGoAllocator()
	}
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	job, err := planner.BuildParallel(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt}, rt.Parallelism)
	if err != nil {
		return nil, err
	}
	if ck != nil {
		if ck.dir != "" {
			if err := engine.CheckCheckpoints(job.Pipelines); err != nil {
				return nil, fmt.Errorf("%w; run without --checkpoint-dir", err)
			}
		}
		if job.Checkpoint, err = ck.config(plan, rt.Stderr); err != nil {
			return nil, err
		}
		if rt.Stderr != nil {
			fmt.Fprintf(rt.Stderr, "clink: job %s: guarantee %s\n", ck.job, job.Guarantee())
		}
	}
	return runJob(ctx, job, plan, reg, rt.Stderr, ol)
}

// validate checks plan as the planner will when the job is submitted,
// without opening a source or sink (planner.Validate), so that explain and
// a cluster client refuse a bad job with submission's own words.
func validate(plan *pb.Plan, reg *connectors.Registry, parallelism int) error {
	funcs := kernels.NewRegistry()
	kernels.RegisterScalar(funcs)
	rt := connectors.Runtime{BatchSize: 1024, Linger: time.Millisecond, Mem: memory.NewGoAllocator(), Stdout: io.Discard, Stderr: io.Discard, Parallelism: parallelism}
	return planner.Validate(plan, planner.Env{Connectors: reg, Funcs: funcs, Runtime: rt})
}

// summarize prints what the user should know about a finished run: late
// rows dropped and bad records skipped.
func summarize(stats []*engine.Stats) {
	var late, skipped, dead, rows int64
	interrupted := false
	for _, s := range stats {
		if s == nil {
			continue
		}
		late += s.Total("late_rows_dropped")
		skipped += s.Total("records_skipped")
		dead += s.Total("records_dead_lettered")
		rows += s.Total("rows_read")
		interrupted = interrupted || s.Interrupted
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d rows read", rows))
	parts = append(parts, fmt.Sprintf("%d late rows dropped", late))
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d bad records skipped", skipped))
	}
	if dead > 0 {
		parts = append(parts, fmt.Sprintf("%d bad records sent to the dead-letter topic", dead))
	}
	state := "finished"
	if interrupted {
		state = "stopped (open windows not flushed)"
	}
	fmt.Fprintf(os.Stderr, "clink: job %s: %s\n", state, strings.Join(parts, ", "))
}

func cmdExplain(args []string) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	var src source
	src.register(fs)
	format := fs.String("format", "text", "text (one line per relation), json or binary (the Substrait protobuf)")
	if err := parseArgs(fs, args); err != nil {
		return 2
	}
	reg := builtin.Registry()
	plan, err := src.load(fs, reg)
	if err == nil {
		err = validate(plan, reg, 1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	switch *format {
	case "text":
		fmt.Print(substrait.Explain(plan))
	case "json":
		out, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(plan)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		fmt.Println(string(out))
	case "binary":
		out, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		os.Stdout.Write(out)
	default:
		fmt.Fprintf(os.Stderr, "error: --format must be text, json or binary, not %q\n", *format)
		return 2
	}
	return 0
}

// submit sends the plan to a Coordinator and prints the job id and its
// guarantee.
func submit(ctx context.Context, addr string, plan *pb.Plan, sqlText, name string, set map[string]bool, parallelism int, cko *checkpointFlags, opts ...cflight.Option) int {
	for _, f := range []string{"batch-size", "linger", "cpuprofile"} {
		if set[f] {
			fmt.Fprintf(os.Stderr, "error: --%s is not supported with --coordinator\n", f)
			return 2
		}
	}
	if err := validate(plan, builtin.Registry(), parallelism); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	// Checkpoint flags travel as the plan's settings, like SET.
	settings, err := substrait.JobSettings(plan)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if set["checkpoint-dir"] {
		abs, err := checkpoint.AbsLoc(cko.dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
		settings["checkpoint_dir"] = abs
	}
	if set["checkpoint-interval-ms"] {
		settings["checkpoint_interval_ms"] = fmt.Sprint(cko.interval.Milliseconds())
	}
	if set["checkpoints-retained"] {
		settings["checkpoints_retained"] = fmt.Sprint(cko.retain)
	}
	if err := substrait.SetJobSettings(plan, settings); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(plan)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if err := cko.checkRestoreFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	req := &cluster.SubmitRequest{Name: name, Plan: data, SQL: sqlText, Fresh: cko.fresh, FromCheckpoint: cko.from, AllowNonRestoredState: cko.allowNonRestored}
	if cko.fromSP != "" {
		// The Coordinator and the Workers read it: make it this shell's.
		if req.FromSavepoint, err = filepath.Abs(cko.fromSP); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	if set["parallelism"] {
		req.Parallelism = parallelism
	}
	resp, err := cluster.Submit(ctx, addr, os.Getenv("CLINK_AUTH_TOKEN"), req, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if resp.Via != "" {
		fmt.Fprintf(os.Stderr, "clink: %s is the Coordinator's HTTP API; submitted to its Flight address %s\n", addr, resp.Via)
	}
	fmt.Fprintf(os.Stderr, "clink: job %s: guarantee %s\n", name, resp.Guarantee)
	if resp.CheckpointDir != "" {
		if resp.FromSavepoint != "" {
			fmt.Fprintf(os.Stderr, "clink: checkpoints: %s; restore point: checkpoint %d (savepoint %s)\n", resp.CheckpointDir, resp.RestorePoint, resp.FromSavepoint)
		} else if resp.RestorePoint != 0 {
			fmt.Fprintf(os.Stderr, "clink: checkpoints: %s; restore point: checkpoint %d\n", resp.CheckpointDir, resp.RestorePoint)
		} else {
			fmt.Fprintf(os.Stderr, "clink: checkpoints: %s; starting fresh\n", resp.CheckpointDir)
		}
	}
	fmt.Printf("job_id=%s\n", resp.Job)
	return 0
}
