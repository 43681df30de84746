// Package bench holds Clink's workloads and the harness behind
// `clink bench`: it runs the engine as a child process on generated data and
// measures throughput, CPU, peak memory and latency, next to a hand-written
// Go baseline measured in the same run.
package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

// Measure is one measured run.
type Measure struct {
	Label       string
	Events      int64
	Wall        time.Duration
	CPU         time.Duration // user + system of the process
	PeakRSSKB   int64
	FirstResult time.Duration // process start to first output line (0 = not measured)
	OutputRows  int64
}

// EventsPerSec is the throughput over wall time.
func (m Measure) EventsPerSec() float64 { return float64(m.Events) / m.Wall.Seconds() }

// EventsPerCPUSec is the throughput per CPU-second (per core).
func (m Measure) EventsPerCPUSec() float64 { return float64(m.Events) / m.CPU.Seconds() }

// CPUPerMillion is CPU-seconds per million events.
func (m Measure) CPUPerMillion() float64 { return m.CPU.Seconds() / (float64(m.Events) / 1e6) }

// SensorsQuery is the reference pipeline's query over a table named
// readings, writing to a table named sink.
const SensorsQuery = `INSERT INTO sink
SELECT sensor_id, window_start, window_end,
       COUNT(*) AS readings, AVG(temp_c) AS avg_temp,
       MIN(temp_c) AS min_temp, MAX(temp_c) AS max_temp
FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id`

// SensorsSQL is the whole script over a readings file and a sink
// connector ("blackhole" or "print").
func SensorsSQL(path, sink string) string {
	return fmt.Sprintf(`CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = %s, 'format' = 'json',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sink (sensor_id STRING, window_start BIGINT, window_end BIGINT, readings BIGINT,
  avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH ('connector' = '%s');
%s;`, quote(path), sink, SensorsQuery)
}

func quote(s string) string {
	return "'" + string(bytes.ReplaceAll([]byte(s), []byte("'"), []byte("''"))) + "'"
}

// WriteSensors writes the workload with n readings over the given number of
// sensors to path (skipped if a file of the same definition is there).
func WriteSensors(path string, n int64, sensors int) (workload.Config, error) {
	c := workload.Default()
	c.Sensors = sensors
	c.Ticks = workload.TicksFor(n, sensors)
	if err := c.Validate(); err != nil {
		return c, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return c, err
	}
	f, err := os.Create(path)
	if err != nil {
		return c, err
	}
	if err := workload.Write(f, c); err != nil {
		f.Close()
		return c, err
	}
	return c, f.Close()
}

// RunProcessMedian runs RunProcess runs times (at least once) and returns
// the run of median CPU.
func RunProcessMedian(ctx context.Context, runs int, label string, events int64, name string, args ...string) (Measure, error) {
	var ms []Measure
	for i := 0; i < max(runs, 1); i++ {
		m, err := RunProcess(ctx, label, events, name, args...)
		if err != nil {
			return m, err
		}
		ms = append(ms, m)
	}
	return MedianByCPU(ms), nil
}

// MedianByCPU is the measure of median CPU (ms is sorted in place).
func MedianByCPU(ms []Measure) Measure {
	sort.Slice(ms, func(i, j int) bool { return ms[i].CPU < ms[j].CPU })
	return ms[len(ms)/2]
}

// RunProcess runs a command, timing the first line of its stdout and
// reading its CPU and peak RSS from the kernel's rusage.
func RunProcess(ctx context.Context, label string, events int64, name string, args ...string) (Measure, error) {
	m := Measure{Label: label, Events: events}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return m, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, err
	}
	r := bufio.NewReaderSize(out, 1<<16)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if m.OutputRows == 0 {
				m.FirstResult = time.Since(start)
			}
			if line[len(line)-1] == '\n' {
				m.OutputRows++
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err != io.EOF {
				return m, err
			}
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		return m, fmt.Errorf("%s: %v\n%s", label, err, stderr.String())
	}
	m.Wall = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		m.PeakRSSKB = ru.Maxrss
	}
	return m, nil
}

// HandLoop is the hand-written limit for the sensors query: a Go program a
// good engineer would write for exactly this job — read the file, pick the
// three fields out of each line by hand, aggregate per (sensor, window) in a
// map, fire windows as the watermark passes. It returns the number of
// windows emitted.
func HandLoop(path string, lagMS int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type key struct {
		id    string
		start int64
	}
	type acc struct {
		n             int64
		sum, min, max float64
	}
	open := map[key]*acc{}
	ids := map[string]string{}
	maxTS := int64(math.MinInt64)
	fired := int64(math.MinInt64)
	var emitted int64
	fire := func(wm int64) {
		for k := range open {
			if k.start+10000 <= wm {
				delete(open, k)
				emitted++
			}
		}
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			id, ts, temp, ok := handParse(line)
			if !ok {
				return emitted, fmt.Errorf("bad line %q", line)
			}
			sid, ok := ids[string(id)]
			if !ok {
				sid = string(id)
				ids[sid] = sid
			}
			start := ts - ((ts%10000)+10000)%10000
			if wm := maxTS - lagMS; start+10000 > wm || maxTS == math.MinInt64 {
				a := open[key{sid, start}]
				if a == nil {
					a = &acc{min: math.Inf(1), max: math.Inf(-1)}
					open[key{sid, start}] = a
				}
				a.n++
				a.sum += temp
				a.min = math.Min(a.min, temp)
				a.max = math.Max(a.max, temp)
			}
			if ts > maxTS {
				maxTS = ts
				if wm := maxTS - lagMS; wm >= fired+10000 || fired == math.MinInt64 {
					fire(wm)
					fired = wm
				}
			}
		}
		if err != nil {
			if err == io.EOF {
				break
			}
			return emitted, err
		}
	}
	fire(math.MaxInt64)
	return emitted, nil
}

// handParse reads {"sensor_id":"...","ts":N,"temp_c":X} by position.
func handParse(line []byte) (id []byte, ts int64, temp float64, ok bool) {
	const p1, p2, p3 = `{"sensor_id":"`, `","ts":`, `,"temp_c":`
	if !bytes.HasPrefix(line, []byte(p1)) {
		return nil, 0, 0, false
	}
	rest := line[len(p1):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return nil, 0, 0, false
	}
	id, rest = rest[:i], rest[i:]
	if !bytes.HasPrefix(rest, []byte(p2)) {
		return nil, 0, 0, false
	}
	rest = rest[len(p2):]
	j := 0
	neg := false
	if j < len(rest) && rest[j] == '-' {
		neg = true
		j++
	}
	for ; j < len(rest) && rest[j] >= '0' && rest[j] <= '9'; j++ {
		ts = ts*10 + int64(rest[j]-'0')
	}
	if neg {
		ts = -ts
	}
	rest = rest[j:]
	if !bytes.HasPrefix(rest, []byte(p3)) {
		return nil, 0, 0, false
	}
	rest = rest[len(p3):]
	k := bytes.IndexByte(rest, '}')
	if k < 0 {
		return nil, 0, 0, false
	}
	v, err := strconv.ParseFloat(string(rest[:k]), 64)
	return id, ts, v, err == nil
}
