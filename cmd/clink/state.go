package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/grpc/metadata"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/builtin"
	ckconn "github.com/clink-dev/clink/connectors/checkpoint"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/flight/flightsql"
	"github.com/clink-dev/clink/substrait/sql"
)

// The state tools read checkpoints as data (docs/state-tools.md).

// stateFlags name a checkpoint and what of it to read.
type stateFlags struct {
	dir      string
	id       uint64
	operator string
	slot     string
}

func (f *stateFlags) register(fs *flag.FlagSet, withID bool) {
	fs.StringVar(&f.dir, "checkpoint-dir", "", "a checkpoint directory: read its newest complete checkpoint (or --id)")
	fs.StringVar(&f.dir, "dir", "", "the same as --checkpoint-dir")
	if withID {
		fs.Uint64Var(&f.id, "id", 0, "with --checkpoint-dir: the checkpoint to read (chk-N)")
	}
	fs.StringVar(&f.operator, "operator", "", "read only this operator's parts")
	fs.StringVar(&f.slot, "slot", "", "read only the rows of this slot")
}

// jobFlags are --job N and the Coordinator's address: read a running
// job's newest completed checkpoint, pinned by the Coordinator (so that
// retention keeps it) until the read ends.
type jobFlags struct {
	job string
	cf  coordinatorFlags
}

func (f *jobFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.job, "job", "", "a running job: read its newest completed checkpoint, pinned by the Coordinator (--coordinator) until the read ends")
	f.cf.register(fs, "127.0.0.1:8081", "with --job: the Coordinator, its HTTP API (8081) or Flight (6123) address (HA: a comma-separated list)")
}

// pin asks the Coordinator to pin the job's newest completed checkpoint;
// the path is the checkpoint's directory, release ends the pin.
func (f *jobFlags) pin(fs *flag.FlagSet) (path string, release func(), err error) {
	addr, err := f.cf.address(fs)
	if err != nil {
		return "", nil, &usageError{err.Error()}
	}
	resp, release, err := cluster.PinCheckpoint(context.Background(), addr, os.Getenv("CLINK_AUTH_TOKEN"), f.job, f.cf.opts...)
	if err != nil {
		return "", nil, fmt.Errorf("job %s: %w", f.job, err)
	}
	fmt.Fprintf(os.Stderr, "clink: job %s: reading checkpoint %d (%s), pinned until done\n", f.job, resp.Checkpoint, resp.Path)
	return resp.Path, release, nil
}

func (f *stateFlags) selection() stateio.Selection {
	return stateio.Selection{Operator: f.operator, Slot: f.slot}
}

// location is the checkpoint path and id the flags and positional
// arguments name: --checkpoint-dir D [--id N], or one PATH (a chk-<id>
// directory or a checkpoint directory).
func (f *stateFlags) location(args []string) (string, uint64, error) {
	switch {
	case f.dir != "" && len(args) > 0:
		return "", 0, errors.New("give either --checkpoint-dir or a checkpoint path, not both")
	case f.dir != "":
		return f.dir, f.id, nil
	case len(args) == 1:
		return args[0], f.id, nil
	case len(args) > 1:
		return "", 0, fmt.Errorf("one checkpoint path expected, got %d arguments", len(args))
	}
	return "", 0, errors.New("give a checkpoint: --checkpoint-dir DIR [--id N] or the path of a chk-<id> directory")
}

func (f *stateFlags) open(args []string) (*checkpoint.Checkpoint, error) {
	path, id, err := f.location(args)
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	return stateio.Open(path, id)
}

// parseInterspersed parses flags that may follow positional arguments
// (clink state-cat chk-3 --slot s).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// fail prints err and returns the exit code: 2 for usage errors, else 1.
func fail(cmd string, err error) int {
	fmt.Fprintf(os.Stderr, "clink %s: %v\n", cmd, err)
	var ue *usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: clink %s %s\n\nflags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

func cmdStateCat(args []string) int {
	fs := newFlagSet("state-cat", "[--checkpoint-dir DIR [--id N] | PATH | --job N [--coordinator ADDR]] [--operator OP] [--slot S] [--format table|json] [--limit N]")
	var sf stateFlags
	sf.register(fs, true)
	var jf jobFlags
	jf.register(fs)
	format := fs.String("format", "table", "table (the manifest summary, then one line per row) or json (one object per row)")
	limit := fs.Int("limit", 0, "print at most this many rows (0: all)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if *format != "table" && *format != "json" {
		return fail("state-cat", &usageError{fmt.Sprintf("--format must be table or json, not %q", *format)})
	}
	if jf.job != "" {
		if len(pos) > 0 || sf.dir != "" || sf.id != 0 {
			return fail("state-cat", &usageError{"--job reads the job's newest completed checkpoint: give no checkpoint path, --checkpoint-dir or --id with it"})
		}
		path, release, err := jf.pin(fs)
		if err != nil {
			return fail("state-cat", err)
		}
		defer release()
		pos = []string{path}
	}
	c, err := sf.open(pos)
	if err != nil {
		return fail("state-cat", err)
	}
	err = stateio.Cat(os.Stdout, c, stateio.CatOptions{Selection: sf.selection(), JSON: *format == "json", Limit: *limit})
	if err != nil {
		return fail("state-cat", err)
	}
	return 0
}

func cmdStateExport(args []string) int {
	fs := newFlagSet("state-export", "[--format parquet|arrow|iceberg] --out DIR|FILE.parquet [--checkpoint-dir|--dir DIR [--id N] | PATH | --job N [--coordinator ADDR]] [--operator OP] [--slot S]")
	var sf stateFlags
	sf.register(fs, true)
	var jf jobFlags
	jf.register(fs)
	format := fs.String("format", "parquet", "parquet (a ZSTD Parquet file per part), arrow (an uncompressed Arrow IPC file per part) or iceberg (a snapshot of table clink.<operator> per operator)")
	out := fs.String("out", "", "the output directory (for iceberg: the default catalog DIR/catalog.db and the warehouse DIR/warehouse); for parquet, a FILE.parquet instead: one file with every part's rows")
	catalog := fs.String("iceberg-catalog", "", "iceberg: the SQL catalog, sqlite://PATH or postgres://USER:PASSWORD@HOST/DB (default sqlite://OUT/catalog.db)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	f := stateio.Format(*format)
	ice := *format == "iceberg"
	switch {
	case f != stateio.Parquet && f != stateio.Arrow && !ice:
		return fail("state-export", &usageError{fmt.Sprintf("--format must be parquet, arrow or iceberg, not %q", *format)})
	case *out == "":
		return fail("state-export", &usageError{"give the output directory: --out DIR"})
	case *catalog != "" && !ice:
		return fail("state-export", &usageError{"--iceberg-catalog is for --format iceberg"})
	}
	// --out FILE.parquet (not an existing directory): one file.
	single := strings.HasSuffix(strings.ToLower(*out), ".parquet") && !dirExists(*out)
	if single && f != stateio.Parquet {
		return fail("state-export", &usageError{fmt.Sprintf("--out %s is a Parquet file: it is for --format parquet; give --format %s a directory", *out, *format)})
	}
	if jf.job != "" {
		if len(pos) > 0 || sf.dir != "" || sf.id != 0 {
			return fail("state-export", &usageError{"--job reads the job's newest completed checkpoint: give no checkpoint path, --checkpoint-dir or --id with it"})
		}
		path, release, err := jf.pin(fs)
		if err != nil {
			return fail("state-export", err)
		}
		defer release()
		pos = []string{path}
	}
	c, err := sf.open(pos)
	if err != nil {
		return fail("state-export", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var done []stateio.Exported
	what := "file"
	switch {
	case single:
		var e stateio.Exported
		e, err = stateio.ExportFile(ctx, c, stateio.FileOptions{Selection: sf.selection(), Path: *out, NewParquetWriter: parquet.NewWriter})
		if err == nil {
			done = append(done, e)
		}
	case ice:
		what = "table snapshot"
		done, err = exportIceberg(ctx, c, sf.selection(), *out, *catalog)
	case f == stateio.Parquet:
		done, err = stateio.Export(ctx, c, stateio.ExportOptions{Selection: sf.selection(), Format: f, Dir: *out, WriteParquet: parquet.Write})
	default:
		done, err = stateio.Export(ctx, c, stateio.ExportOptions{Selection: sf.selection(), Format: f, Dir: *out})
	}
	for _, e := range done {
		fmt.Printf("%s\t%d rows\n", e.Path, e.Rows)
	}
	if err != nil {
		return fail("state-export", err)
	}
	if len(done) != 1 {
		what += "s"
	}
	fmt.Fprintf(os.Stderr, "clink state-export: checkpoint %d (%s): %d %s written\n", c.ID, c.Path, len(done), what)
	return 0
}

func cmdStateDiff(args []string) int {
	fs := newFlagSet("state-diff", "A B | --checkpoint-dir DIR --from N --to M  [--operator OP] [--slot S] [--verbose]")
	var sf stateFlags
	sf.register(fs, false)
	from := fs.Uint64("from", 0, "with --checkpoint-dir: the older checkpoint")
	to := fs.Uint64("to", 0, "with --checkpoint-dir: the newer checkpoint (default the newest complete)")
	verbose := fs.Bool("verbose", false, "print the added, removed and changed rows")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	var pa, pb string
	var ia, ib uint64
	switch {
	case sf.dir != "" && len(pos) == 0 && *from != 0:
		pa, ia, pb, ib = sf.dir, *from, sf.dir, *to
	case sf.dir == "" && len(pos) == 2 && *from == 0 && *to == 0:
		pa, pb = pos[0], pos[1]
	default:
		return fail("state-diff", &usageError{"give two checkpoints: A B (chk-<id> directories) or --checkpoint-dir DIR --from N [--to M]"})
	}
	a, err := stateio.Open(pa, ia)
	if err != nil {
		return fail("state-diff", err)
	}
	b, err := stateio.Open(pb, ib)
	if err != nil {
		return fail("state-diff", err)
	}
	diffs, err := stateio.Diff(a, b, sf.selection())
	if err != nil {
		return fail("state-diff", err)
	}
	fmt.Printf("checkpoint %d -> %d\n", a.ID, b.ID)
	if err := stateio.WriteDiff(os.Stdout, diffs, *verbose); err != nil {
		return fail("state-diff", err)
	}
	return 0
}

func cmdStateQuery(args []string) int {
	fs := newFlagSet("state-query", `[--checkpoint-dir DIR [--id N] | PATH | --job N --coordinator HOST:PORT] [--operator OP] [--slot S] --sql "SELECT ... FROM state ..."`)
	var sf stateFlags
	sf.register(fs, true)
	query := fs.String("sql", "", "the query; its table 'state' holds the checkpoint's state rows")
	showDDL := fs.Bool("print-ddl", false, "print the CREATE TABLE statement of 'state' and exit")
	job := fs.String("job", "", "a running job's state (its newest completed checkpoint), read through the Coordinator's Flight SQL endpoint (--coordinator)")
	var cf coordinatorFlags
	cf.register(fs, "127.0.0.1:8081", "with --job: the Coordinator: its HTTP API (8081), its Flight address (6123) or its Flight SQL address")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if *query == "" && !*showDDL {
		return fail("state-query", &usageError{`give the query: --sql "SELECT ... FROM state"`})
	}
	if *job != "" {
		return stateQueryJob(fs, &cf, *job, *query, len(pos) > 0 || sf.dir != "" || sf.operator != "" || sf.slot != "" || *showDDL)
	}
	path, id, err := sf.location(pos)
	if err != nil {
		return fail("state-query", &usageError{err.Error()})
	}
	if abs, err := checkpoint.AbsLoc(path); err == nil {
		path = abs
	}
	opts := map[string]string{"path": path}
	if id != 0 {
		opts["id"] = strconv.FormatUint(id, 10)
	}
	if sf.operator != "" {
		opts["operator"] = sf.operator
	}
	if sf.slot != "" {
		opts["slot"] = sf.slot
	}
	ddl, notes, err := ckconn.DDL("state", opts)
	if err != nil {
		return fail("state-query", err)
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "clink state-query: note:", n)
	}
	if *showDDL {
		fmt.Println(ddl + ";")
		return 0
	}
	script := ddl + ";\n"
	reg := builtin.Registry()
	plan, err := sql.Compile(script+*query, reg)
	if err != nil {
		return fail("state-query", userPos(err, strings.Count(script, "\n"), *query))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = execute(ctx, plan, reg, connectors.Runtime{BatchSize: 8192, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil && !(errors.Is(err, context.Canceled) && ctx.Err() != nil) {
		return fail("state-query", err)
	}
	return 0
}

// userPos makes an error in the user's query point into the query rather
// than into the script with the generated CREATE TABLE before it.
func userPos(err error, lines int, query string) error {
	var se *sql.Error
	if errors.As(err, &se) && se.Pos.Line > lines {
		e := *se
		e.Pos.Line -= lines
		e.Pos.Offset -= len(se.Src) - len(query)
		e.Src = query
		return &e
	}
	return err
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// stateQueryJob runs state-query --job N: the query over the job's state
// on the Coordinator's Flight SQL endpoint, its rows as JSON lines.
func stateQueryJob(fs *flag.FlagSet, cf *coordinatorFlags, job, query string, local bool) int {
	if local {
		return fail("state-query", &usageError{"--job reads a running job through the Coordinator: give it with --coordinator and --sql only (no checkpoint path, --operator, --slot or --print-ddl; FROM job_" + job + ".<operator> reads one operator)"})
	}
	addr, err := cf.address(fs)
	switch {
	case err != nil:
		return fail("state-query", &usageError{err.Error()})
	case addr == "":
		return fail("state-query", &usageError{"--job needs the Coordinator's Flight SQL address: --coordinator HOST:PORT"})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := dialSQL(addr, cf.opts)
	if err != nil {
		return fail("state-query", err)
	}
	defer cl.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, flightsql.JobHeader, job)
	if err := runSQL(ctx, cl, query, true, os.Stdout); err != nil {
		return fail("state-query", err)
	}
	return 0
}
