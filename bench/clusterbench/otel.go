package clusterbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/clink-dev/clink/bench"
	"github.com/clink-dev/clink/flight/cluster"
)

// OTelResult is clink bench otel: the sensors pipeline on two Worker
// processes with OpenTelemetry off and on, alternating.
type OTelResult struct {
	Rows     int64
	Off, On  []bench.Measure
	Requests int64 // OTLP requests the sink received in the runs with it on
}

// RunOTel runs the sensors pipeline (n readings, checkpoints every
// 200 ms into dir) on two one-slot Worker processes and a Coordinator
// in this process, rounds times with OpenTelemetry off and rounds times
// on, alternating: on, every process exports traces and metrics (every
// second, not the default minute) over OTLP/HTTP to a sink in this
// process that answers every request. The CPU measured is the Workers'
// (the Coordinator's share is in this process, with the bench's).
func RunOTel(ctx context.Context, self, dir string, n int64, sensors, rounds int) (OTelResult, error) {
	var r OTelResult
	path := filepath.Join(dir, "readings-otel.jsonl")
	cfg, err := bench.WriteSensors(path, n, sensors)
	if err != nil {
		return r, err
	}
	r.Rows = cfg.Readings()
	text := "SET 'execution.checkpointing.interval' = '200ms';\n" + bench.SensorsSQL(path, "blackhole")
	var requests atomic.Int64
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		requests.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go srv.Serve(l)
	defer srv.Close()
	endpoint := "http://" + l.Addr().String()
	for i := range 2 * rounds {
		on := i%2 == 1
		env := []string{"OTEL_SDK_DISABLED=true"}
		if on {
			env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_METRIC_EXPORT_INTERVAL=1000"}
		}
		before := requests.Load()
		m, err := runClusterOnce(ctx, self, text, filepath.Join(dir, fmt.Sprintf("ck-%d", i)), env, on)
		if err != nil {
			return r, err
		}
		m.Events = r.Rows
		if on {
			m.Label = "OpenTelemetry on"
			r.On = append(r.On, m)
			r.Requests += requests.Load() - before
		} else {
			m.Label = "OpenTelemetry off"
			r.Off = append(r.Off, m)
		}
	}
	return r, nil
}

// runClusterOnce runs text at parallelism 2 on two fresh one-slot Worker
// processes with env added to theirs (and OTel on the Coordinator when
// on): the Workers' CPU and the wall time from submission to the end.
func runClusterOnce(ctx context.Context, self, text, ckDir string, env []string, on bool) (bench.Measure, error) {
	var m bench.Measure
	log := &lineLog{}
	for _, kv := range env {
		k, v, _ := cutEnv(kv)
		os.Setenv(k, v) // the Coordinator, in this process, reads them
	}
	defer func() {
		for _, kv := range env {
			k, _, _ := cutEnv(kv)
			os.Unsetenv(k)
		}
	}()
	c, stop, err := startCoordinator(cluster.CoordinatorConfig{Log: log, CheckpointDir: ckDir, OTel: on})
	if err != nil {
		return m, err
	}
	defer stop()
	var ws []*workerProc
	for _, id := range []string{"w1", "w2"} {
		cmd := exec.Command(self, "worker", "--coordinator", c.FlightAddr(), "--slots", "1", "--id", id)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = io.Discard, log
		if err := cmd.Start(); err != nil {
			return m, err
		}
		w := &workerProc{id: id, cmd: cmd, done: make(chan struct{})}
		go func() { cmd.Wait(); close(w.done) }()
		defer w.kill()
		ws = append(ws, w)
	}
	if err := waitWorkers(c, 2); err != nil {
		return m, err
	}
	start := time.Now()
	id, err := submitSQL(c, "otel", text, 2)
	if err != nil {
		return m, err
	}
	if _, err := waitJob(c, id, 10*time.Minute, cluster.StateFinished); err != nil {
		return m, fmt.Errorf("%w\n%s", err, log.String())
	}
	m.Wall = time.Since(start)
	for _, w := range ws {
		m.CPU += w.stop()
	}
	return m, nil
}

func cutEnv(kv string) (string, string, bool) { return strings.Cut(kv, "=") }

// FormatOTel prints an OTel result: every run, and the CPU ratio of the
// medians.
func FormatOTel(w io.Writer, r OTelResult, sensors int) {
	fmt.Fprintf(w, "OpenTelemetry overhead: %d readings, %d sensors, sensors pipeline at parallelism 2 on two Workers, checkpoints every 200 ms; alternating runs\n\n", r.Rows, sensors)
	fmt.Fprintf(w, "%-20s %12s %16s %10s\n", "run", "Worker CPU s", "rows/CPU-s", "wall s")
	for i := range r.Off {
		for _, m := range []bench.Measure{r.Off[i], r.On[i]} {
			fmt.Fprintf(w, "%-20s %12.2f %16.0f %10.2f\n", m.Label, m.CPU.Seconds(), m.EventsPerCPUSec(), m.Wall.Seconds())
		}
	}
	off, on := medianCPU(r.Off), medianCPU(r.On)
	fmt.Fprintf(w, "\nmedian Worker CPU: off %.2f s, on %.2f s: on/off %.3f (%+.1f%%); %d OTLP requests while on\n",
		off.Seconds(), on.Seconds(), on.Seconds()/off.Seconds(), 100*(on.Seconds()/off.Seconds()-1), r.Requests)
}

func medianCPU(ms []bench.Measure) time.Duration {
	if len(ms) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(ms))
	for i, m := range ms {
		ds[i] = m.CPU
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
