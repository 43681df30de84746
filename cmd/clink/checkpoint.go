package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/substrait"
)

// checkpointFlags are clink run's checkpoint options.
type checkpointFlags struct {
	dir      string
	interval time.Duration
	from     uint64
	fromSP   string
	fresh    bool
	retain   int
	job      string
	// allowNonRestored drops the state of operators the job no longer
	// has (Flink's --allowNonRestoredState).
	allowNonRestored bool
	// incremental lets operators write delta parts (Flink's
	// execution.checkpointing.incremental).
	incremental bool
}

func (c *checkpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dir, "checkpoint-dir", "", "take checkpoints into this directory (or s3://, gs://, azure://bucket/prefix), and resume from the newest completed one in it")
	fs.Func("checkpoint-interval-ms", "milliseconds between checkpoints (default 1000)", func(v string) error {
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err != nil || ms <= 0 {
			return fmt.Errorf("must be a positive number of milliseconds")
		}
		c.interval = time.Duration(ms) * time.Millisecond
		return nil
	})
	fs.Uint64Var(&c.from, "from-checkpoint", 0, "resume from this checkpoint id instead of the newest")
	fs.StringVar(&c.fromSP, "from-savepoint", "", "resume from this savepoint directory (or a checkpoint's chk-<id> directory); new checkpoints go to --checkpoint-dir")
	fs.BoolVar(&c.fresh, "fresh", false, "start from the beginning even if the checkpoint directory holds checkpoints")
	fs.IntVar(&c.retain, "checkpoints-retained", 3, "completed checkpoints to keep")
	fs.BoolVar(&c.incremental, "incremental-checkpoints", true, "let operators write only what changed since the last complete checkpoint (SET 'execution.checkpointing.incremental')")
	fs.BoolVar(&c.allowNonRestored, "allow-non-restored-state", false, "restore a checkpoint that holds state of operators this job no longer has, dropping that state")
}

// jobName is the script's or plan file's base name, or for -e SQL the
// name its sinks give it (substrait.JobName: insert-into_<table>,
// collect).
func jobName(fs *flag.FlagSet, src *source, plan *pb.Plan) string {
	switch {
	case fs.NArg() == 1:
		return strings.TrimSuffix(filepath.Base(fs.Arg(0)), filepath.Ext(fs.Arg(0)))
	case src.plan != "":
		return strings.TrimSuffix(filepath.Base(src.plan), filepath.Ext(src.plan))
	}
	return substrait.JobName(plan)
}

// applySettings takes the script's SET values where no flag was given.
func (c *checkpointFlags) applySettings(settings map[string]string, set map[string]bool) error {
	if v, ok := settings["checkpoint_dir"]; ok && !set["checkpoint-dir"] {
		c.dir = v
	}
	if v, ok := settings["checkpoint_interval_ms"]; ok && !set["checkpoint-interval-ms"] {
		var ms int64
		if _, err := fmt.Sscan(v, &ms); err != nil || ms <= 0 {
			return fmt.Errorf("plan setting checkpoint_interval_ms %q", v)
		}
		c.interval = time.Duration(ms) * time.Millisecond
	}
	if v, ok := settings["incremental_checkpoints"]; ok && !set["incremental-checkpoints"] {
		c.incremental = v == "true"
	}
	if v, ok := settings["checkpoints_retained"]; ok && !set["checkpoints-retained"] {
		if _, err := fmt.Sscan(v, &c.retain); err != nil {
			return fmt.Errorf("plan setting checkpoints_retained %q", v)
		}
	}
	return nil
}

// checkRestoreFlags refuses more than one of --from-checkpoint,
// --from-savepoint and --fresh.
func (c *checkpointFlags) checkRestoreFlags() error {
	n := 0
	for _, b := range []bool{c.from != 0, c.fromSP != "", c.fresh} {
		if b {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("give one of --from-checkpoint, --from-savepoint and --fresh")
	}
	return nil
}

// config returns the engine's checkpoint configuration, or nil without a
// checkpoint directory. It picks the checkpoint to resume from and says so.
func (c *checkpointFlags) config(plan *pb.Plan, stderr io.Writer) (*engine.CheckpointConfig, error) {
	if c.dir == "" {
		if c.from != 0 || c.fromSP != "" || c.fresh || c.interval != 0 || c.allowNonRestored {
			return nil, fmt.Errorf("--from-checkpoint, --from-savepoint, --fresh, --checkpoint-interval-ms and --allow-non-restored-state need --checkpoint-dir")
		}
		return nil, nil
	}
	if err := c.checkRestoreFlags(); err != nil {
		return nil, err
	}
	if c.retain < 1 {
		return nil, fmt.Errorf("--checkpoints-retained must be at least 1")
	}
	store, err := checkpoint.NewStore(c.dir, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	fp, err := substrait.Fingerprint(plan)
	if err != nil {
		return nil, err
	}
	cfg := &engine.CheckpointConfig{Store: store, Interval: c.interval, Retain: c.retain, Job: c.job, Fingerprint: fp, AllowNonRestoredState: c.allowNonRestored, Incremental: c.incremental}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	logf := func(format string, args ...any) {
		if stderr != nil {
			fmt.Fprintf(stderr, "clink: "+format+"\n", args...)
		}
	}
	if c.fromSP != "" {
		cp, err := checkpoint.OpenDir(c.fromSP)
		if err == nil {
			err = cp.Verify()
		}
		if err != nil {
			return nil, fmt.Errorf("--from-savepoint: %w", err)
		}
		cfg.Restore = cp
		logf("checkpoints: %s (every %s); restore point: checkpoint %d (savepoint %s)", c.dir, cfg.Interval, cp.ID, c.fromSP)
		return cfg, nil
	}
	id := c.from
	if id == 0 && !c.fresh {
		latest, ok, err := store.Latest()
		if err != nil {
			return nil, err
		}
		if ok {
			id = latest
		}
	}
	if id == 0 {
		logf("checkpoints: %s (every %s); starting fresh", c.dir, cfg.Interval)
		return cfg, nil
	}
	cp, err := store.Open(id)
	if err != nil {
		return nil, fmt.Errorf("%w (choose another with --from-checkpoint, or --fresh)", err)
	}
	if err := cp.Verify(); err != nil {
		return nil, fmt.Errorf("%w (choose another with --from-checkpoint, or --fresh)", err)
	}
	cfg.Restore = cp
	logf("checkpoints: %s (every %s); restore point: checkpoint %d", c.dir, cfg.Interval, id)
	return cfg, nil
}
