package nexmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/bench"
	"github.com/clink-dev/clink/checkpoint"
	gen "github.com/clink-dev/clink/connectors/nexmark"
)

// Config sets up a run of the suite.
type Config struct {
	// Self is the clink binary: broker, engine and hand loops run as its
	// subcommands, each in its own process.
	Self    string
	Queries []*Query
	// Events is the length of the stream; each query reads its tables'
	// share of it.
	Events int64
	Seed   int64
	Rate   int64 // event-time rate (events per second)
	// ViaKafka reads JSON records from Kafka topics (preloaded by the
	// harness) instead of the generator. Brokers, when set, is an external
	// cluster; otherwise `clink kafka serve` runs as a child process.
	ViaKafka   bool
	Brokers    string
	Partitions int
	// Runs of each measurement; the run with the median CPU is reported.
	Runs int
	// LatencyRate and LatencySeconds define the paced latency run (0: no
	// latency run).
	LatencyRate    int64
	LatencySeconds int
	// StateEvents is the stream length of the checkpointed run that
	// measures state bytes (0: not measured).
	StateEvents int64
	// ProfileDir, when set, receives a CPU profile of one more engine run
	// per query (qN.pprof).
	ProfileDir string
	// Results, when set, receives each query's result file as soon as it
	// is measured (see WriteResults).
	Results  string
	Dir      string // scratch space
	Log      io.Writer
	Progress *Progress
}

// Run is one measured child process, in the units the results use.
type Run struct {
	Events          int64   `json:"events"`
	WallSeconds     float64 `json:"wall_seconds"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	EventsPerCPUSec float64 `json:"events_per_cpu_second"`
	CPUPerMillion   float64 `json:"cpu_seconds_per_million_events"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	OutputRows      int64   `json:"output_rows,omitempty"`
}

func runOf(m bench.Measure) Run {
	return Run{Events: m.Events, WallSeconds: m.Wall.Seconds(), CPUSeconds: m.CPU.Seconds(), EventsPerSecond: m.EventsPerSec(),
		EventsPerCPUSec: m.EventsPerCPUSec(), CPUPerMillion: m.CPUPerMillion(), PeakRSSMB: float64(m.PeakRSSKB) / 1024, OutputRows: m.OutputRows}
}

// LatencyResult is the paced run: per result row, its arrival at the
// harness minus the wall-clock time at which it could first be produced.
type LatencyResult struct {
	Rate    int64   `json:"events_per_second"`
	Seconds int     `json:"seconds"`
	Rows    int     `json:"rows"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
	Note    string  `json:"note,omitempty"`
}

// StateResult is the largest checkpoint of the checkpointed run: bytes of
// the operators' parts over their state entries (groups, stored join
// rows, sessions).
type StateResult struct {
	Events        int64   `json:"events"`
	Checkpoints   int     `json:"checkpoints"`
	Entries       int64   `json:"entries"`
	Bytes         int64   `json:"bytes"`
	BytesPerEntry float64 `json:"bytes_per_entry"`
}

// Result is one query's figures, written to bench/results/<query>.json.
type Result struct {
	Query      string         `json:"query"`
	Date       string         `json:"date"`
	Machine    string         `json:"machine"`
	Go         string         `json:"go"`
	Mode       string         `json:"mode"` // "kafka" or "generator"
	Stream     int64          `json:"stream_events"`
	Rate       int64          `json:"event_time_rate"`
	Engine     Run            `json:"engine"`
	Hand       Run            `json:"hand_loop"`
	Ratio      float64        `json:"engine_over_hand"`
	Target     float64        `json:"target_events_per_cpu_second,omitempty"`
	ClinkCPP   float64        `json:"clink_cpp_events_per_cpu_second,omitempty"`
	Flink      float64        `json:"flink_events_per_cpu_second,omitempty"`
	Latency    *LatencyResult `json:"latency,omitempty"`
	NoLatency  string         `json:"no_latency,omitempty"`
	State      *StateResult   `json:"state,omitempty"`
	Adapted    string         `json:"adapted,omitempty"`
	Profile    string         `json:"profile,omitempty"`
	RowsEngine int64          `json:"engine_rows_read"`
}

// Machine describes this machine for the results.
func Machine() string {
	model := runtime.GOARCH
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					model = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", model, runtime.NumCPU())
}

func (c *Config) logf(format string, args ...any) {
	c.Progress.Done()
	fmt.Fprintf(c.Log, format, args...)
}

// RunSuite measures every query of cfg and returns their results.
func RunSuite(ctx context.Context, cfg Config) ([]Result, error) {
	cfg.Runs = max(cfg.Runs, 1)
	if cfg.Rate <= 0 {
		cfg.Rate = gen.DefaultRate
	}
	src := Source{Events: cfg.Events, Seed: cfg.Seed, Rate: cfg.Rate}
	var topics map[gen.Kind]string
	if cfg.ViaKafka {
		brokers := cfg.Brokers
		topics = map[gen.Kind]string{}
		prefix := ""
		if brokers == "" {
			addr, stop, err := StartBroker(cfg.Self)
			if err != nil {
				return nil, err
			}
			defer stop()
			brokers = addr
		} else {
			prefix = fmt.Sprintf("clink-bench-%d-", time.Now().Unix())
		}
		var tables []gen.Kind
		for _, k := range gen.Kinds {
			for _, q := range cfg.Queries {
				if q.Reads(k) {
					tables = append(tables, k)
					topics[k] = prefix + k.String()
					break
				}
			}
		}
		// The harness stays small: a child's peak RSS (rusage) starts from
		// its parent's at exec, so the records are produced by a child.
		cfg.Progress.Step("preloading Kafka")
		stop := cfg.Progress.Tick(func() { cfg.Progress.Set(0, 0) })
		start := time.Now()
		args := []string{"bench", "produce", "--brokers", brokers, "--topic-prefix", prefix, "--events", fmt.Sprint(cfg.Events),
			"--seed", fmt.Sprint(cfg.Seed), "--rate", fmt.Sprint(cfg.Rate), "--partitions", fmt.Sprint(max(cfg.Partitions, 1))}
		for _, k := range tables {
			args = append(args, "--table", k.String())
		}
		var total int64
		_, _, err := runChild(ctx, "produce", 0, func(line []byte, _ time.Time) {
			var k string
			var n int64
			if _, err := fmt.Sscanf(string(line), "%s %d records", &k, &n); err == nil {
				total += n
			}
		}, cfg.Self, args...)
		stop()
		if err != nil {
			return nil, err
		}
		var want int64
		for _, k := range tables {
			want += gen.CountOfKind(cfg.Events, k)
		}
		if total != want {
			return nil, fmt.Errorf("preloaded %d records, want %d", total, want)
		}
		cfg.logf("preloaded %d records (%d partitions per topic) into %s in %s\n", total, max(cfg.Partitions, 1), brokers, time.Since(start).Round(time.Millisecond))
		src = Source{Brokers: brokers, Topics: topics}
		cfg.Brokers = brokers
	}
	topicFlags := func() []string {
		var out []string
		for _, k := range gen.Kinds {
			if t, ok := topics[k]; ok {
				out = append(out, "--topic-"+k.String(), t)
			}
		}
		return out
	}
	var results []Result
	for i, q := range cfg.Queries {
		// The bar counts queries done; the step's own time runs beside it.
		bar := func() { cfg.Progress.Set(int64(i), int64(len(cfg.Queries))) }
		step := fmt.Sprintf("[%d/%d] %s", i+1, len(cfg.Queries), q.Name)
		res := Result{Query: q.Name, Date: time.Now().UTC().Format("2006-01-02"), Machine: Machine(), Go: runtime.Version(), Mode: "generator",
			Stream: cfg.Events, Rate: cfg.Rate, Target: q.Target, ClinkCPP: q.ClinkCPP, Flink: q.Flink, Adapted: q.Adapted, NoLatency: q.NoLatency}
		if cfg.ViaKafka {
			res.Mode = "kafka"
		}
		events := q.Events(cfg.Events)
		script := filepath.Join(cfg.Dir, q.Name+".sql")
		if err := os.WriteFile(script, []byte(src.Script(q, "blackhole")), 0o644); err != nil {
			return nil, err
		}
		handArgs := []string{"bench", "nexmark", "--hand", "--query", q.Name, "--events", fmt.Sprint(cfg.Events), "--seed", fmt.Sprint(cfg.Seed), "--rate", fmt.Sprint(cfg.Rate)}
		if cfg.ViaKafka {
			handArgs = append(append(handArgs, "--brokers", cfg.Brokers), topicFlags()...)
		}
		var hands, engines []bench.Measure
		var rowsRead int64
		for r := 0; r < cfg.Runs; r++ {
			cfg.Progress.Step(step + " hand loop")
			stop := cfg.Progress.Tick(bar)
			h, _, err := runChild(ctx, "hand", events, nil, cfg.Self, handArgs...)
			stop()
			if err != nil {
				return nil, err
			}
			hands = append(hands, h)
			cfg.Progress.Step(step + " engine")
			stop = cfg.Progress.Tick(bar)
			m, stderr, err := runChild(ctx, "engine", events, nil, cfg.Self, "run", script)
			stop()
			if err != nil {
				return nil, err
			}
			if rowsRead, err = rowsReadOf(stderr); err != nil {
				return nil, fmt.Errorf("%s: %w", q.Name, err)
			}
			engines = append(engines, m)
		}
		res.Hand, res.Engine = runOf(median(hands)), runOf(median(engines))
		res.Ratio = res.Engine.EventsPerCPUSec / res.Hand.EventsPerCPUSec
		res.RowsEngine = rowsRead
		if rowsRead != events {
			return nil, fmt.Errorf("%s: the engine read %d rows, want %d", q.Name, rowsRead, events)
		}
		cfg.logf("%-4s engine %9.0f events/CPU-s (%6.0f k events/s, %.1f MB), hand loop %9.0f events/CPU-s: %.2fx\n",
			q.Name, res.Engine.EventsPerCPUSec, res.Engine.EventsPerSecond/1e3, res.Engine.PeakRSSMB, res.Hand.EventsPerCPUSec, res.Ratio)
		if cfg.ProfileDir != "" {
			prof := filepath.Join(cfg.ProfileDir, q.Name+".pprof")
			cfg.Progress.Step(step + " profile")
			if _, _, err := runChild(ctx, "profile", events, nil, cfg.Self, "run", "--quiet", "--cpuprofile", prof, script); err != nil {
				return nil, err
			}
			res.Profile = prof
		}
		if cfg.LatencyRate > 0 && cfg.LatencySeconds > 0 && q.Latency != nil {
			cfg.Progress.Step(step + " latency (paced)")
			stop := cfg.Progress.Tick(bar)
			lat, err := measureLatency(ctx, cfg, q)
			stop()
			if err != nil {
				return nil, err
			}
			res.Latency = lat
			if lat.Rows > 0 {
				cfg.logf("%-4s latency at %d events/s: p50 %.0f ms, p99 %.0f ms (%d rows)\n", q.Name, lat.Rate, lat.P50MS, lat.P99MS, lat.Rows)
			} else {
				cfg.logf("%-4s latency at %d events/s: %s\n", q.Name, lat.Rate, lat.Note)
			}
		}
		if cfg.StateEvents > 0 && q.Stateful && q.NoState == "" {
			cfg.Progress.Step(step + " state (checkpoints)")
			stop := cfg.Progress.Tick(bar)
			st, err := measureState(ctx, cfg, q)
			stop()
			if err != nil {
				return nil, err
			}
			res.State = st
			cfg.logf("%-4s state: %.1f bytes per entry (%d entries, %d bytes, largest of %d checkpoints)\n", q.Name, st.BytesPerEntry, st.Entries, st.Bytes, st.Checkpoints)
		}
		results = append(results, res)
		if cfg.Results != "" {
			// Each query's result is kept as soon as it is measured.
			if err := WriteResults(cfg.Results, []Result{res}); err != nil {
				return nil, err
			}
		}
	}
	cfg.Progress.Done()
	return results, nil
}

func median(ms []bench.Measure) bench.Measure { return bench.MedianByCPU(ms) }

var rowsReadRE = regexp.MustCompile(`job finished: (\d+) rows read`)

func rowsReadOf(stderr []byte) (int64, error) {
	m := rowsReadRE.FindSubmatch(stderr)
	if m == nil {
		return 0, fmt.Errorf("no 'job finished' line in the engine's output:\n%s", stderr)
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// runChild runs a command, handing every stdout line and its arrival time
// to onLine, and reads the process's CPU and peak RSS from rusage. It
// returns the measure and the command's stderr.
func runChild(ctx context.Context, label string, events int64, onLine func(line []byte, at time.Time), name string, args ...string) (bench.Measure, []byte, error) {
	m := bench.Measure{Label: label, Events: events}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return m, nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, nil, err
	}
	r := bufio.NewReaderSize(out, 1<<16)
	var long []byte
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			m.OutputRows++
			if onLine != nil {
				onLine(line, time.Now())
			}
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return m, stderr.Bytes(), fmt.Errorf("%s (%s %s): %v\n%s", label, name, strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	m.Wall = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		m.PeakRSSKB = ru.Maxrss
	}
	return m, stderr.Bytes(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// measureLatency runs the query on the paced generator (event time is
// wall-clock time) into the print sink and takes each row's latency: its
// arrival here minus the time its result could first exist (Latency.Col +
// Offset, plus the watermark lag for windowed results). Rows fired only
// by the end of input (final watermark) are left out.
func measureLatency(ctx context.Context, cfg Config, q *Query) (*LatencyResult, error) {
	n := cfg.LatencyRate * int64(cfg.LatencySeconds)
	base := time.Now().UnixMilli() + 1500 // process start-up before the first event is due
	src := Source{Events: n, Seed: cfg.Seed, Rate: cfg.LatencyRate, Pace: true, BaseTime: base}
	script := filepath.Join(cfg.Dir, q.Name+"-latency.sql")
	if err := os.WriteFile(script, []byte(src.LatencyScript(q)), 0o644); err != nil {
		return nil, err
	}
	lastEvent := base + (n-1)*1000/cfg.LatencyRate
	offset := q.Latency.Offset
	if q.Latency.Windowed {
		offset += Lag
	}
	var lat []float64
	var perr error
	_, _, err := runChild(ctx, "latency", q.Events(n), func(line []byte, at time.Time) {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			perr = fmt.Errorf("latency run: %v: %s", err, line)
			return
		}
		num, _ := m[q.Latency.Col].(json.Number)
		v, err := num.Int64()
		if err != nil {
			perr = fmt.Errorf("latency run: column %s: %v in %s", q.Latency.Col, err, line)
			return
		}
		due := v + offset
		if due > lastEvent {
			return // fired by the end of input
		}
		lat = append(lat, float64(at.UnixMicro()-due*1000)/1000)
	}, cfg.Self, "run", "--quiet", script)
	if err != nil {
		return nil, err
	}
	if perr != nil {
		return nil, perr
	}
	res := &LatencyResult{Rate: cfg.LatencyRate, Seconds: cfg.LatencySeconds, Rows: len(lat)}
	if len(lat) == 0 {
		res.Note = "no result row before the end of input"
		return res, nil
	}
	sort.Float64s(lat)
	pct := func(p float64) float64 { return lat[min(int(math.Ceil(p*float64(len(lat))))-1, len(lat)-1)] }
	res.P50MS, res.P99MS, res.MaxMS = pct(0.50), pct(0.99), lat[len(lat)-1]
	if q.Name == "q5" {
		res.Note = "measured from the window's end + 2 s + lag, when the adapted query can first emit; Flink's q5 emits 2 s earlier"
	}
	return res, nil
}

// measureState runs the query on the generator with a checkpoint every
// 50 ms and measures the checkpoint with the most state entries: the
// bytes of the operators' parts (sources and sinks left out) over their
// keyed rows.
func measureState(ctx context.Context, cfg Config, q *Query) (*StateResult, error) {
	src := Source{Events: cfg.StateEvents, Seed: cfg.Seed, Rate: cfg.Rate}
	script := filepath.Join(cfg.Dir, q.Name+"-state.sql")
	if err := os.WriteFile(script, []byte(src.Script(q, "blackhole")), 0o644); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Dir, q.Name+"-checkpoints")
	defer os.RemoveAll(dir)
	if _, _, err := runChild(ctx, "state", q.Events(cfg.StateEvents), nil, cfg.Self, "run", "--quiet",
		"--checkpoint-dir", dir, "--checkpoint-interval-ms", "50", "--checkpoints-retained", "100000", script); err != nil {
		return nil, err
	}
	// Read by a child, for the same reason as the preload.
	var out []byte
	if _, _, err := runChild(ctx, "state-of", 0, func(line []byte, _ time.Time) { out = append(out, line...) },
		cfg.Self, "bench", "nexmark", "--state-of", dir); err != nil {
		return nil, err
	}
	var st StateResult
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("state of %s: %v: %s", q.Name, err, out)
	}
	st.Events = cfg.StateEvents
	return &st, nil
}

// StateOf finds the checkpoint with the most state entries in dir.
func StateOf(dir string) (*StateResult, error) {
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		return nil, err
	}
	infos, err := store.List()
	if err != nil {
		return nil, err
	}
	best := &StateResult{}
	for _, info := range infos {
		cp, err := store.Open(info.ID)
		if err != nil {
			continue // incomplete
		}
		best.Checkpoints++
		var entries, size int64
		for _, p := range cp.Parts() {
			if strings.HasPrefix(p.Operator, "source_") || strings.HasPrefix(p.Operator, "sink_") {
				continue
			}
			part, err := cp.ReadPart(p.Operator, p.Subtask)
			if err != nil {
				return nil, err
			}
			for _, rec := range part.Records {
				kg, ok := checkpoint.Column(rec, checkpoint.ColKeyGroup).(*array.Int32)
				if !ok {
					continue
				}
				for i := 0; i < kg.Len(); i++ {
					if kg.Value(i) >= 0 {
						entries++
					}
				}
			}
			part.Release()
			size += p.Bytes
		}
		if entries > best.Entries {
			best.Entries, best.Bytes = entries, size
		}
	}
	if best.Entries > 0 {
		best.BytesPerEntry = float64(best.Bytes) / float64(best.Entries)
	}
	return best, nil
}

// StartBroker runs `clink kafka serve --port 0` as a child process (its
// CPU is charged to nobody) and returns its address and a function that
// stops it.
func StartBroker(self string) (string, func(), error) {
	cmd := exec.Command(self, "kafka", "serve", "--port", "0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			addr <- sc.Text()
		}
		close(addr)
		io.Copy(io.Discard, out)
	}()
	select {
	case a, ok := <-addr:
		if ok {
			return a, stop, nil
		}
	case <-time.After(30 * time.Second):
	}
	stop()
	return "", nil, fmt.Errorf("clink kafka serve did not start")
}

// WriteResults writes each result as dir/<query>.json (generator runs:
// <query>-generator.json).
func WriteResults(dir string, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, r := range results {
		name := r.Query + ".json"
		if r.Mode == "generator" {
			name = r.Query + "-generator.json"
		}
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReadResults reads every dir/<query>.json (Kafka runs), in query order.
func ReadResults(dir string) ([]Result, error) {
	var out []Result
	for _, q := range Queries() {
		b, err := os.ReadFile(filepath.Join(dir, q.Name+".json"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", q.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}
