// Package clusterbench measures the cluster (clink bench shuffle and
// clink bench recovery): the keyed shuffle over Arrow Flight against the
// in-process exchange, and recovery after a Worker SIGKILL. It starts
// Coordinators and Workers as child processes of the clink binary.
package clusterbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/bench"
	"github.com/clink-dev/clink/connectors/builtin"
	"github.com/clink-dev/clink/connectors/kafka"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/substrait/sql"
)

// workerProc is a `clink worker` child process.
type workerProc struct {
	id   string
	cmd  *exec.Cmd
	done chan struct{}
}

// lineLog timestamps the lines written to it as they arrive.
type lineLog struct {
	mu    sync.Mutex
	lines []timedLine
	part  string
}

type timedLine struct {
	at   time.Time
	text string
}

func (l *lineLog) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.part + string(p)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, timedLine{now, s[:i]})
		s = s[i+1:]
	}
	l.part = s
	return len(p), nil
}

// first returns the arrival time of the first line after t that matches.
func (l *lineLog) first(after time.Time, match func(string) bool) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		if ln.at.After(after) && match(ln.text) {
			return ln.at, true
		}
	}
	return time.Time{}, false
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ln := range l.lines {
		b.WriteString(ln.text + "\n")
	}
	return b.String()
}

func startWorker(self, coord, id string, slots int, stdout, stderr io.Writer) (*workerProc, error) {
	cmd := exec.Command(self, "worker", "--coordinator", coord, "--slots", fmt.Sprint(slots), "--id", id)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &workerProc{id: id, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(w.done) }()
	return w, nil
}

// stop ends a Worker with SIGTERM and returns its CPU time.
func (w *workerProc) stop() time.Duration {
	w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	return w.cmd.ProcessState.UserTime() + w.cmd.ProcessState.SystemTime()
}

func (w *workerProc) kill() {
	w.cmd.Process.Kill()
	<-w.done
}

// startCoordinator runs a Coordinator in this process (it only schedules;
// the Workers are processes of their own).
func startCoordinator(cfg cluster.CoordinatorConfig) (*cluster.Coordinator, func(), error) {
	cfg.FlightAddr, cfg.HTTPAddr = "127.0.0.1:0", "off"
	cfg.Connectors = builtin.Registry()
	c, err := cluster.NewCoordinator(cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	return c, func() { cancel(); <-done }, nil
}

func waitWorkers(c *cluster.Coordinator, n int) error {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c.Workers() >= n {
			return nil
		}
	}
	return fmt.Errorf("%d Workers did not register", n)
}

func submitSQL(c *cluster.Coordinator, name, text string, par int) (string, error) {
	plan, err := sql.Compile(text, builtin.Registry())
	if err != nil {
		return "", err
	}
	data, err := proto.Marshal(plan)
	if err != nil {
		return "", err
	}
	resp, err := c.Submit(&cluster.SubmitRequest{Name: name, Plan: data, Parallelism: par})
	if err != nil {
		return "", err
	}
	return string(resp.Job), nil
}

func waitJob(c *cluster.Coordinator, id string, timeout time.Duration, states ...string) (cluster.JobDetail, error) {
	var d cluster.JobDetail
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		d, _ = c.Job(id)
		for _, s := range states {
			if d.State == s {
				return d, nil
			}
		}
		if d.State == cluster.StateFailed {
			return d, fmt.Errorf("job %s failed: %s", id, d.Failure)
		}
	}
	return d, fmt.Errorf("job %s: still %s after %s", id, d.State, timeout)
}

// ShuffleResult compares the keyed shuffle inside one process with the
// shuffle over Arrow Flight between two Worker processes.
type ShuffleResult struct {
	Rows                int64
	InProcess, Cluster  bench.Measure
	CrossingWorkersFrac float64
}

// RunShuffle runs the sensors pipeline (file source -> 10 s windows ->
// blackhole) at parallelism 2 embedded (the exchange is in-process
// channels) and on two Workers with one slot each (half of every source
// subtask's rows cross to the other Worker over Flight). CPU is the
// engine processes' (the Workers', or the embedded run's).
func RunShuffle(ctx context.Context, self, dir string, n int64, sensors int) (ShuffleResult, error) {
	var r ShuffleResult
	path := filepath.Join(dir, "readings-shuffle.jsonl")
	cfg, err := bench.WriteSensors(path, n, sensors)
	if err != nil {
		return r, err
	}
	r.Rows = cfg.Readings()
	text := bench.SensorsSQL(path, "blackhole")
	r.InProcess, err = bench.RunProcess(ctx, "embedded, parallelism 2 (in-process exchange)", r.Rows, self, "run", "--quiet", "--parallelism", "2", "-e", text)
	if err != nil {
		return r, err
	}
	log := &lineLog{}
	c, stop, err := startCoordinator(cluster.CoordinatorConfig{Log: log})
	if err != nil {
		return r, err
	}
	defer stop()
	var ws []*workerProc
	for _, id := range []string{"w1", "w2"} {
		w, err := startWorker(self, c.FlightAddr(), id, 1, io.Discard, log)
		if err != nil {
			return r, err
		}
		defer w.kill()
		ws = append(ws, w)
	}
	if err := waitWorkers(c, 2); err != nil {
		return r, err
	}
	start := time.Now()
	id, err := submitSQL(c, "shuffle", text, 2)
	if err != nil {
		return r, err
	}
	if _, err := waitJob(c, id, 10*time.Minute, cluster.StateFinished); err != nil {
		return r, fmt.Errorf("%w\n%s", err, log.String())
	}
	wall := time.Since(start)
	var cpu time.Duration
	for _, w := range ws {
		cpu += w.stop()
	}
	r.Cluster = bench.Measure{Label: "two Workers, parallelism 2 (Flight)", Events: r.Rows, Wall: wall, CPU: cpu}
	r.CrossingWorkersFrac = 0.5
	return r, nil
}

// FormatShuffle prints a shuffle result.
func FormatShuffle(w io.Writer, r ShuffleResult, sensors int) {
	fmt.Fprintf(w, "shuffle benchmark: %d readings, %d sensors, sensors pipeline at parallelism 2 (keyed exchange before the window aggregate)\n\n", r.Rows, sensors)
	fmt.Fprintf(w, "%-46s %14s %12s %16s %10s\n", "run", "rows/s", "CPU s/M rows", "rows/CPU-s", "wall s")
	for _, m := range []bench.Measure{r.InProcess, r.Cluster} {
		fmt.Fprintf(w, "%-46s %14.0f %12.3f %16.0f %10.2f\n", m.Label, m.EventsPerSec(), m.CPUPerMillion(), m.EventsPerCPUSec(), m.Wall.Seconds())
	}
	fmt.Fprintf(w, "\nFlight / in-process: %.2fx rows/s (wall), %.2fx rows per CPU-second; about half the rows cross Workers\n",
		r.Cluster.EventsPerSec()/r.InProcess.EventsPerSec(), r.Cluster.EventsPerCPUSec()/r.InProcess.EventsPerCPUSec())
	fmt.Fprintln(w, "(the embedded run includes process start-up; the cluster run starts at submission with the Workers already up)")
}

// Recovery is one Worker SIGKILL and what followed, from the kill.
type Recovery struct {
	Detection  time.Duration // until the Coordinator declared the Worker lost
	Restore    time.Duration // from detection until every Worker restored the checkpoint
	FirstOut   time.Duration // from the kill until the first row of the new attempt
	Checkpoint string
}

var restoredRE = regexp.MustCompile(`attempt (\d+): restored checkpoint (\d+)`)

// RunRecovery measures recovery after a Worker SIGKILL with default
// settings (heartbeat 500 ms, three missed beats, restart delay 200 ms,
// checkpoints every second): a Kafka source (in-process dev broker) fed
// at rate rows/s with event time = wall time, 100 ms tumbling windows per
// key printed by the Workers, at parallelism par (1 or 2) on three
// one-slot Workers (the rest stand by). Each run kills the Worker of
// subtask 0, then starts a new standby. At parallelism 2 the other
// Worker's shuffle stream breaks at once; at 1 nothing calls the dead
// Worker until the next checkpoint trigger or three missed heartbeats.
func RunRecovery(ctx context.Context, self string, runs, rate, par int) ([]Recovery, error) {
	b, err := kafka.StartBroker(kafka.BrokerConfig{Topics: []kafka.TopicSpec{{Name: "events", Partitions: 2}}})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("events"), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pctx, stopProduce := context.WithCancel(ctx)
	defer stopProduce()
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		per := max(rate/100, 1)
		n := 0
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			now := time.Now().UnixMilli()
			for range per {
				k := n % 16
				cl.Produce(pctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, `{"k":"k%d","ts":%d}`, k, now)}, nil)
				n++
			}
		}
	}()
	dir, err := os.MkdirTemp("", "clink-recovery-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	log, out := &lineLog{}, &lineLog{}
	c, stop, err := startCoordinator(cluster.CoordinatorConfig{Log: log, CheckpointDir: dir})
	if err != nil {
		return nil, err
	}
	defer stop()
	workers := map[string]*workerProc{}
	next := 0
	spawn := func() error {
		next++
		id := fmt.Sprintf("w%d", next)
		w, err := startWorker(self, c.FlightAddr(), id, 1, out, log)
		if err != nil {
			return err
		}
		workers[id] = w
		return nil
	}
	defer func() {
		for _, w := range workers {
			w.kill()
		}
	}()
	for range 3 {
		if err := spawn(); err != nil {
			return nil, err
		}
	}
	if err := waitWorkers(c, 3); err != nil {
		return nil, err
	}
	text := `CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector' = 'kafka', 'brokers' = '` + b.Addr() + `', 'topic' = 'events',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '0');
SELECT k, window_end, COUNT(*) AS n FROM t GROUP BY TUMBLE(ts, INTERVAL '100' MILLISECOND), k`
	id, err := submitSQL(c, "recovery", text, par)
	if err != nil {
		return nil, err
	}
	var res []Recovery
	for run := range runs {
		// Steady state: running, output flowing, two checkpoints taken.
		d, err := waitJob(c, id, 30*time.Second, cluster.StateRunning)
		if err != nil {
			return res, err
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			d, _ = c.Job(id)
			if d.State == cluster.StateRunning && d.Latest != nil && time.Since(d.Latest.Triggered) < 3*time.Second {
				if _, ok := out.first(time.Now().Add(-200*time.Millisecond), func(string) bool { return true }); ok {
					break
				}
			}
			if time.Now().After(deadline) {
				return res, fmt.Errorf("no steady output before kill %d:\n%s", run+1, log.String())
			}
		}
		time.Sleep(1500 * time.Millisecond)
		victim := d.Tasks[0].Worker
		attempt := d.Attempt
		t0 := time.Now()
		workers[victim].kill()
		delete(workers, victim)
		var r Recovery
		t1, ok := waitLine(log, t0, func(s string) bool { return strings.Contains(s, "worker lost: "+victim+" ") }, 30*time.Second)
		if !ok {
			return res, fmt.Errorf("the kill of %s was not detected:\n%s", victim, log.String())
		}
		r.Detection = t1.Sub(t0)
		// Every Worker of the next attempt restores, then prints.
		want := fmt.Sprintf("job_id=%s attempt %d: restored checkpoint", id, attempt+1)
		var t2 time.Time
		for k := 0; k < par; k++ {
			at, ok := waitNth(log, t0, func(s string) bool { return strings.Contains(s, want) }, k, 30*time.Second)
			if !ok {
				return res, fmt.Errorf("attempt %d did not restore on %d Workers:\n%s", attempt+1, par, log.String())
			}
			t2 = at
		}
		r.Restore = t2.Sub(t1)
		if m := restoredRE.FindStringSubmatch(lineAt(log, t2, want)); m != nil {
			r.Checkpoint = m[2]
		}
		firstRestored, _ := log.first(t0, func(s string) bool { return strings.Contains(s, want) })
		t3, ok := waitLine(out, firstRestored, func(string) bool { return true }, 30*time.Second)
		if !ok {
			return res, fmt.Errorf("no output after the restart")
		}
		r.FirstOut = t3.Sub(t0)
		if os.Getenv("CLINK_BENCH_LOG") != "" {
			fmt.Fprintf(os.Stderr, "kill at %s\n%s", t0.UTC().Format("15:04:05.000"), log.String())
		}
		res = append(res, r)
		if err := spawn(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func waitLine(l *lineLog, after time.Time, match func(string) bool, timeout time.Duration) (time.Time, bool) {
	return waitNth(l, after, match, 0, timeout)
}

// waitNth waits for the (k+1)-th matching line after a time.
func waitNth(l *lineLog, after time.Time, match func(string) bool, k int, timeout time.Duration) (time.Time, bool) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		l.mu.Lock()
		n := 0
		for _, ln := range l.lines {
			if ln.at.After(after) && match(ln.text) {
				if n == k {
					l.mu.Unlock()
					return ln.at, true
				}
				n++
			}
		}
		l.mu.Unlock()
	}
	return time.Time{}, false
}

func lineAt(l *lineLog, at time.Time, sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lines {
		if ln.at.Equal(at) && strings.Contains(ln.text, sub) {
			return ln.text
		}
	}
	return ""
}

// FormatRecovery prints recovery runs and their medians.
func FormatRecovery(w io.Writer, rs []Recovery, rate, par int) {
	fmt.Fprintf(w, "recovery after a Worker SIGKILL: default settings (heartbeat 500 ms, 3 missed beats, restart delay 200 ms, checkpoints every 1 s),\n")
	fmt.Fprintf(w, "Kafka source at %d rows/s, 100 ms tumbling windows printed, parallelism %d on three one-slot Workers (standby capacity)\n\n", rate, par)
	fmt.Fprintf(w, "%-4s %14s %12s %22s %12s\n", "run", "detection ms", "restore ms", "first output ms (total)", "checkpoint")
	var det, res, first []float64
	for i, r := range rs {
		fmt.Fprintf(w, "%-4d %14.0f %12.0f %22.0f %12s\n", i+1, ms(r.Detection), ms(r.Restore), ms(r.FirstOut), r.Checkpoint)
		det, res, first = append(det, ms(r.Detection)), append(res, ms(r.Restore)), append(first, ms(r.FirstOut))
	}
	fmt.Fprintf(w, "%-4s %14.0f %12.0f %22.0f\n", "p50", median(det), median(res), median(first))
	fmt.Fprintf(w, "\ntarget: first output again within 2000 ms of the kill\n")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
