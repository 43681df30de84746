// Package conformance is the contract test every source and sink runs.
// It drives the clink binary as a user would (clink run --checkpoint-dir,
// killed and started again) and checks what the target system holds with
// an independent recomputation of the expected output:
//
//   - restore: a run stops at a checkpoint (killed right after it is
//     committed) and the next one, at the same parallelism, resumes from it;
//   - rescale: the next run restores at another parallelism (1→3, 3→1);
//   - SIGKILL at each two-phase point of a checkpoint (connectors/txn
//     kills the process itself there, deterministically: KillEnv): before
//     the pre-commit, after it (staged, checkpoint incomplete), after the
//     manifest (checkpoint complete, external commit not done) and after the
//     external commit; sinks also take one kill at a random moment.
//
// After every kill the committed output must be right so far (nothing
// wrong, nothing twice); after the last run, complete and exact.
//
// A connector's test calls RunSinks or RunSource with a small adapter:
// the table options against its test server and how to read back what is
// committed, with the system's own client.
package conformance

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clink-dev/clink/connectors/txn"
)

// Env is what every part of the suite runs with.
type Env struct {
	// Bin is the clink binary.
	Bin string
	// Workload is the input of the sink tests (streamed into the dev
	// broker), the query and its check.
	Workload Workload
	// Interval is the checkpoint interval (default 100 ms).
	Interval time.Duration
	// Seed drives the random-timing kill (default CLINK_KILL_SEED, else
	// the clock; logged).
	Seed uint64
}

// Record is one Kafka record of a workload.
type Record struct {
	Partition  int32
	Key, Value []byte
}

// Workload is a stream and the independent check of a query's output.
type Workload struct {
	// Columns are the input table's columns, With its source options
	// beyond the connector's (event time, watermark lag).
	Columns, With string
	// Partitions of the input topic; Records in the order produced, at
	// Rate records a second.
	Partitions int
	Records    []Record
	Rate       int
	// OutColumns are the output table's columns; Query selects them FROM
	// input.
	OutColumns, Query string
	// Check reports whether rows (JSON lines, one object per output row)
	// are the query's exact output, or with partial a part of it: no row
	// wrong, unexpected or twice.
	Check func(rows []byte, partial bool) (report string, ok bool)
}

// Sink is a sink's adapter.
type Sink struct {
	Name string
	// With is the WITH (...) body of the output table named table.
	With func(t *testing.T, table string) string
	// Env is added to clink run's environment (secrets given as env://).
	Env []string
	// Committed reads back what the system holds committed of table, as
	// JSON lines keyed by column name, with the system's own client.
	Committed func(t *testing.T, table string) []byte
	// After, if set, checks the system's own invariants after the last
	// run (one snapshot per checkpoint, nothing left half-published, ...).
	After func(t *testing.T, table string)
}

// step is one run of the job: at parallelism par, killed by the ledger at
// point of its n-th checkpoint (or at a random moment after its first
// checkpoint, or, last, when the output is complete).
type step struct {
	name   string
	par    int
	point  txn.Point
	n      int // the run's checkpoint to kill at (default killCheckpoint)
	random bool
}

// sinkSteps cover every kill point, a restore at the same parallelism and
// both rescales; the last run (at parallelism 2) completes the output.
var sinkSteps = []step{
	{name: "kill-before-precommit", par: 1, point: txn.BeforePreCommit},
	{name: "restore/kill-after-commit", par: 1, point: txn.AfterCommit},
	{name: "rescale-1to3/kill-after-precommit", par: 3, point: txn.AfterPreCommit},
	{name: "kill-after-manifest", par: 3, point: txn.AfterManifest},
	{name: "kill-after-commit", par: 3, point: txn.AfterCommit},
	{name: "rescale-3to1/kill-random", par: 1, random: true},
	{name: "rescale-1to2/final", par: 2},
}

// killCheckpoint is the checkpoint of each run at which the ledger kills
// it: the second, so that the run restored from one first.
const killCheckpoint = 2

// RunSinks runs the sink suite: one job reads env.Workload from the dev
// broker and writes the query's output into every sink (one table and
// INSERT each; usually one sink, or one system's several stores), while
// it is killed at each two-phase point, restored and rescaled.
func RunSinks(t *testing.T, env Env, sinks ...Sink) {
	w := env.Workload
	addr := Broker(t, env.Bin, fmt.Sprintf("input:%d", w.Partitions))
	script := fmt.Sprintf("CREATE TABLE input (%s) WITH ('connector' = 'kafka', 'brokers' = '%s', 'topic' = 'input'%s);\n",
		w.Columns, addr, optsAfter(w.With))
	var envv []string
	names := make([]string, len(sinks))
	for i, s := range sinks {
		names[i] = fmt.Sprintf("out%d", i)
		script += fmt.Sprintf("CREATE TABLE %s (%s) WITH (%s);\nINSERT INTO %s %s;\n", names[i], w.OutColumns, s.With(t, names[i]), names[i], w.Query)
		envv = append(envv, s.Env...)
	}
	j := newJob(t, env, script, envv)
	produced := make(chan error, 1)
	go func() { produced <- Stream(addr, "input", w.Records, w.Rate) }()
	check := func(partial bool) (string, bool) {
		var reports []string
		ok := true
		for i, s := range sinks {
			r, good := w.Check(s.Committed(t, names[i]), partial)
			reports = append(reports, s.Name+": "+strings.TrimSpace(r))
			ok = ok && good
		}
		return strings.Join(reports, "\n"), ok
	}
	for i, st := range sinkSteps {
		last := i == len(sinkSteps)-1
		if last {
			if err := <-produced; err != nil {
				t.Fatalf("streaming the workload: %v", err)
			}
		}
		ok := t.Run(st.name, func(t *testing.T) {
			switch {
			case last:
				j.runUntil(t, st.par, func() bool { _, ok := check(false); return ok })
			case st.random:
				j.runKilledRandomly(t, st.par)
			default:
				j.runKilledAt(t, st.par, st.point, killCheckpoint, false)
			}
			if i > 0 && !strings.Contains(j.last, "restore point: checkpoint") {
				t.Errorf("the run did not restore from a checkpoint:\n%s", j.last)
			}
			if report, ok := check(!last); !ok {
				t.Fatalf("after %s: committed output:\n%s\nclink stderr:\n%s", st.name, report, j.logs.String())
			} else {
				t.Logf("%s", report)
			}
		})
		if !ok {
			return
		}
	}
	for i, s := range sinks {
		if s.After != nil {
			s.After(t, names[i])
		}
	}
}

// optsAfter makes extra WITH options follow others (", " + opts).
func optsAfter(opts string) string {
	if strings.TrimSpace(opts) == "" {
		return ""
	}
	return ", " + opts
}

// job is one pipeline's checkpoint directory and script, run again and
// again.
type job struct {
	env     Env
	sqlFile string
	ckdir   string
	environ []string
	logs    *syncBuffer // every run's stderr
	last    string      // the last run's
	rng     *rand.Rand
}

func newJob(t *testing.T, env Env, script string, environ []string) *job {
	t.Helper()
	dir := t.TempDir()
	j := &job{env: env, sqlFile: filepath.Join(dir, "job.sql"), ckdir: filepath.Join(dir, "checkpoints"),
		environ: append(os.Environ(), environ...), logs: &syncBuffer{}}
	if err := os.WriteFile(j.sqlFile, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if j.env.Interval <= 0 {
		j.env.Interval = 100 * time.Millisecond
	}
	seed := env.Seed
	if s := os.Getenv("CLINK_KILL_SEED"); s != "" && seed == 0 {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("random kill seed %d (CLINK_KILL_SEED=%d repeats it)", seed, seed)
	j.rng = rand.New(rand.NewPCG(seed, 0xc0f0))
	return j
}

// proc is a running clink run.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan error
}

func (j *job) start(t *testing.T, par int, extraEnv ...string) *proc {
	t.Helper()
	cmd := exec.Command(j.env.Bin, "run", "--quiet", "--parallelism", strconv.Itoa(par), "--checkpoint-dir", j.ckdir,
		"--checkpoint-interval-ms", strconv.Itoa(int(j.env.Interval.Milliseconds())), j.sqlFile)
	cmd.Env = append(append([]string{}, j.environ...), extraEnv...)
	p := &proc{cmd: cmd, stderr: &syncBuffer{tee: j.logs}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	fmt.Fprintf(j.logs, "--- clink run --parallelism %d %s\n", par, strings.Join(extraEnv, " "))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	return p
}

// runTimeout bounds one run that waits for a kill point.
const runTimeout = 2 * time.Minute

// runKilledAt runs the job until the ledger kills it at point of its
// n-th checkpoint. A bounded job may end first (ended is true then).
func (j *job) runKilledAt(t *testing.T, par int, point txn.Point, n int, bounded bool) (ended bool) {
	t.Helper()
	p := j.start(t, par, txn.KillAt(point, n))
	var err error
	select {
	case err = <-p.exited:
	case <-time.After(runTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		j.last = p.stderr.String()
		t.Fatalf("not killed at %s within %s:\n%s", point, runTimeout, j.last)
	}
	j.last = p.stderr.String()
	if err == nil && bounded {
		t.Logf("the job ended before its kill point %s", point)
		return true
	}
	if !killedBySIGKILL(p.cmd) || !strings.Contains(j.last, "SIGKILL at "+string(point)) {
		t.Fatalf("clink run should die at the test hook's %s (%v):\n%s", point, err, j.last)
	}
	return false
}

// runKilledRandomly kills the job (SIGKILL from outside) at a random
// moment up to half a second after its first new checkpoint completes.
func (j *job) runKilledRandomly(t *testing.T, par int) {
	t.Helper()
	before := newest(j.ckdir)
	p := j.start(t, par)
	deadline := time.Now().Add(runTimeout)
	for newest(j.ckdir) == before {
		select {
		case err := <-p.exited:
			t.Fatalf("clink run exited on its own: %v\n%s", err, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.cmd.Process.Kill()
			<-p.exited
			t.Fatalf("no checkpoint within %s:\n%s", runTimeout, p.stderr.String())
		}
	}
	delay := time.Duration(j.rng.IntN(500)) * time.Millisecond
	select {
	case err := <-p.exited:
		t.Fatalf("clink run exited on its own: %v\n%s", err, p.stderr.String())
	case <-time.After(delay):
	}
	p.cmd.Process.Kill()
	<-p.exited
	j.last = p.stderr.String()
	t.Logf("killed %s after its first checkpoint", delay)
}

// runUntil runs the job until it completed a checkpoint of its own and
// done reports true, then kills it; a bounded job may end first.
func (j *job) runUntil(t *testing.T, par int, done func() bool) {
	t.Helper()
	before := newest(j.ckdir)
	p := j.start(t, par)
	defer func() { j.last = p.stderr.String() }()
	deadline := time.Now().Add(runTimeout)
	for {
		select {
		case err := <-p.exited:
			if err != nil {
				t.Fatalf("clink run: %v\n%s", err, p.stderr.String())
			}
			return
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) || newest(j.ckdir) > before && done() {
			p.cmd.Process.Kill()
			<-p.exited
			return
		}
	}
}

// runToEnd runs a bounded job until it ends.
func (j *job) runToEnd(t *testing.T, par int) {
	t.Helper()
	p := j.start(t, par)
	select {
	case err := <-p.exited:
		j.last = p.stderr.String()
		if err != nil {
			t.Fatalf("clink run: %v\n%s", err, j.last)
		}
	case <-time.After(runTimeout):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("the job did not end within %s:\n%s", runTimeout, p.stderr.String())
	}
}

func killedBySIGKILL(cmd *exec.Cmd) bool {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// newest is the id of the newest complete checkpoint in dir (0: none).
func newest(dir string) uint64 {
	ms, _ := filepath.Glob(filepath.Join(dir, "chk-*", "_metadata.json"))
	var id uint64
	for _, m := range ms {
		n, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "chk-"), 10, 64)
		if err == nil {
			id = max(id, n)
		}
	}
	return id
}

// Source is a source's adapter.
type Source struct {
	Name string
	// Columns are the input table's columns; With is its WITH (...)
	// body. reference is set for the uninterrupted run that gives the
	// expected output when Check is nil (it may, e.g., drop pacing).
	Columns string
	With    func(t *testing.T, reference bool) string
	// OutColumns are the output's columns; Query selects them FROM input.
	OutColumns, Query string
	// Bounded: the job ends by itself when the input is read.
	Bounded bool
	// Check reports whether the output is exact (or, with partial, a
	// part of it); nil compares with an uninterrupted run at parallelism
	// 1 (Bounded sources only).
	Check func(rows []byte, partial bool) (report string, ok bool)
}

// sourceSteps: a stop at a checkpoint (killed right after the run's
// first commit, so that a bounded input lasts several runs), a restore at
// the same parallelism, rescales 3→1 and 1→3.
var sourceSteps = []step{
	{name: "stop-at-checkpoint", par: 3, point: txn.AfterCommit, n: 1},
	{name: "restore", par: 3, point: txn.AfterCommit, n: 1},
	{name: "rescale-3to1", par: 1, point: txn.AfterCommit, n: 1},
	{name: "rescale-1to3/final", par: 3},
}

// RunSource runs the source suite: the source's table read by the query
// into the exactly-once file sink, stopped at checkpoints and restored at
// the same and other parallelisms; the committed output must be exact.
func RunSource(t *testing.T, env Env, src Source) {
	dir := t.TempDir()
	script := func(out string, reference bool) string {
		return fmt.Sprintf("CREATE TABLE input (%s) WITH (%s);\nCREATE TABLE output (%s) WITH ('connector' = 'file', 'path' = '%s');\nINSERT INTO output %s;\n",
			src.Columns, src.With(t, reference), src.OutColumns, out, src.Query)
	}
	check := src.Check
	if check == nil {
		if !src.Bounded {
			t.Fatal("conformance: an unbounded source needs a Check")
		}
		ref := filepath.Join(dir, "reference")
		rj := newJob(t, env, script(ref, true), nil)
		rj.runToEnd(t, 1)
		want := sortedLines(ReadFiles(t, ref))
		if len(want) == 0 {
			t.Fatal("the reference run wrote no rows")
		}
		check = func(rows []byte, partial bool) (string, bool) { return compareLines(want, sortedLines(rows), partial) }
	}
	out := filepath.Join(dir, "out")
	j := newJob(t, env, script(out, false), nil)
	ended := false
	for i, st := range sourceSteps {
		last := i == len(sourceSteps)-1
		ok := t.Run(st.name, func(t *testing.T) {
			switch {
			case last && src.Bounded:
				j.runToEnd(t, st.par)
			case last:
				j.runUntil(t, st.par, func() bool { _, ok := check(ReadFiles(t, out), false); return ok })
			default:
				ended = j.runKilledAt(t, st.par, st.point, st.n, src.Bounded) || ended
			}
			if i > 0 && !strings.Contains(j.last, "restore point: checkpoint") {
				t.Errorf("the run did not restore from a checkpoint:\n%s", j.last)
			}
			if report, ok := check(ReadFiles(t, out), !last); !ok {
				t.Fatalf("after %s: committed output: %s\nclink stderr:\n%s", st.name, report, j.logs.String())
			} else {
				t.Logf("%s", strings.TrimSpace(report))
			}
		})
		if !ok {
			return
		}
	}
	if ended {
		t.Logf("note: the bounded input ended before a kill point in some run")
	}
}

// ReadFiles reads every visible file under dir (names starting with
// '.' or '_' are skipped: staging) and returns their lines.
func ReadFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var out []byte
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if b := d.Name(); p != dir && (strings.HasPrefix(b, ".") || strings.HasPrefix(b, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, data...)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			out = append(out, '\n')
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// compareLines compares sorted multisets of lines: equal, or with partial
// got within want.
func compareLines(want, got []string, partial bool) (string, bool) {
	var missing, extra []string
	i, k := 0, 0
	for i < len(want) || k < len(got) {
		switch {
		case k == len(got) || (i < len(want) && want[i] < got[k]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[k] < want[i]:
			extra = append(extra, got[k])
			k++
		default:
			i++
			k++
		}
	}
	if len(extra) == 0 && (partial || len(missing) == 0) {
		return fmt.Sprintf("PASS: %d of %d rows of the uninterrupted run", len(got), len(want)), true
	}
	head := func(l []string) []string { return l[:min(len(l), 5)] }
	return fmt.Sprintf("FAIL: %d missing (first %q), %d extra or repeated (first %q); want %d rows, got %d",
		len(missing), head(missing), len(extra), head(extra), len(want), len(got)), false
}

// syncBuffer is a bytes.Buffer safe for concurrent writers, optionally
// copying what it gets to another.
type syncBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	tee *syncBuffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.b.Write(p)
	s.mu.Unlock()
	if s.tee != nil {
		s.tee.Write(p)
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
