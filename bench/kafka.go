package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/clink-dev/clink/connectors/kafka"
)

// KafkaSQL is a script over a Kafka topic of sensor readings, bounded at
// the end offsets it finds at start-up, whose query is query (over a table
// readings, into a table sink with sinkCols, connector sink).
func KafkaSQL(brokers, topic, sinkCols, sink, query string) string {
	return fmt.Sprintf(`CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = %s, 'topic' = %s, 'format' = 'json',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000', 'scan_bounded' = 'latest');
CREATE TABLE sink (%s) WITH ('connector' = '%s');
%s;`, quote(brokers), quote(topic), sinkCols, sink, query)
}

// KafkaDecodeSQL reads every record of the topic into Arrow and discards
// the rows: the cost of consuming and decoding, nothing else.
func KafkaDecodeSQL(brokers, topic string) string {
	return KafkaSQL(brokers, topic, "sensor_id STRING, ts BIGINT, temp_c DOUBLE", "blackhole", "INSERT INTO sink SELECT * FROM readings")
}

// KafkaSensorsSQL is the sensors query over the topic into a blackhole.
func KafkaSensorsSQL(brokers, topic string) string {
	return KafkaSQL(brokers, topic, "sensor_id STRING, window_start BIGINT, window_end BIGINT, readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE", "blackhole", SensorsQuery)
}

// KafkaConfig sets up the Kafka benchmark.
type KafkaConfig struct {
	Self       string // the clink binary: broker, bare loop and engine run as its subcommands
	Readings   int64
	Sensors    int
	Partitions int
	Runs       int    // each measurement is the median (by CPU) of this many runs
	Dir        string // where the workload file is generated
	Log        io.Writer
}

// KafkaResult holds the medians of the Kafka benchmark.
type KafkaResult struct {
	Events  int64
	Bare    Measure // clink kafka consume --count: a bare franz-go consume loop
	Pooled  Measure // the same with the source's record pools
	Decode  Measure // clink run: Kafka source -> blackhole
	Sensors Measure // clink run: the sensors query over Kafka -> blackhole
	// Sensors2 is the same at --parallelism 2 (two source subtasks of two
	// partitions each, a keyed exchange, two window subtasks).
	Sensors2 Measure
}

// RunKafka starts the dev broker in its own process (its CPU is not
// charged to anyone), preloads the sensor workload keyed by sensor into a
// topic, and measures the bare consume loop and the engine as child
// processes on the same topic, in the same run.
func RunKafka(ctx context.Context, cfg KafkaConfig) (KafkaResult, error) {
	var res KafkaResult
	addr, stop, err := startBroker(cfg.Self, fmt.Sprintf("readings:%d", cfg.Partitions))
	if err != nil {
		return res, err
	}
	defer stop()

	path := filepath.Join(cfg.Dir, "readings-kafka.jsonl")
	fmt.Fprintf(cfg.Log, "generating %d readings (%d sensors) into %s\n", cfg.Readings, cfg.Sensors, path)
	wc, err := WriteSensors(path, cfg.Readings, cfg.Sensors)
	if err != nil {
		return res, err
	}
	res.Events = wc.Readings()
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	start := time.Now()
	n, err := kafka.Produce(ctx, &kafka.ClientConfig{Brokers: []string{addr}}, kafka.ProduceConfig{Topic: "readings", Partition: -1, KeyField: "sensor_id"}, f)
	f.Close()
	if err != nil {
		return res, err
	}
	if n != res.Events {
		return res, fmt.Errorf("preloaded %d records, want %d", n, res.Events)
	}
	fmt.Fprintf(cfg.Log, "preloaded %d records into readings (%d partitions, keyed by sensor_id) on %s in %s\n", n, cfg.Partitions, addr, time.Since(start).Round(time.Millisecond))

	median := func(label string, args ...string) (Measure, error) {
		return RunProcessMedian(ctx, cfg.Runs, label, res.Events, cfg.Self, args...)
	}
	// Interleave the kinds so that a change of machine load hits all.
	if res.Bare, err = median("franz-go consume loop (bare)", "kafka", "consume", "--brokers", addr, "--topic", "readings", "--from-beginning", "--to-end", "--count"); err != nil {
		return res, err
	}
	if res.Pooled, err = median("franz-go consume loop (bare, pools)", "kafka", "consume", "--brokers", addr, "--topic", "readings", "--from-beginning", "--to-end", "--count", "--pools"); err != nil {
		return res, err
	}
	if res.Decode, err = median("clink run kafka -> blackhole", "run", "--quiet", "-e", KafkaDecodeSQL(addr, "readings")); err != nil {
		return res, err
	}
	if res.Sensors, err = median("clink run sensors kafka -> blackhole", "run", "--quiet", "-e", KafkaSensorsSQL(addr, "readings")); err != nil {
		return res, err
	}
	if res.Sensors2, err = median("  same, --parallelism 2", "run", "--quiet", "--parallelism", "2", "-e", KafkaSensorsSQL(addr, "readings")); err != nil {
		return res, err
	}
	return res, nil
}

// startBroker runs `clink kafka serve --port 0` and returns its address
// and a function that stops it.
func startBroker(self string, topics ...string) (string, func(), error) {
	args := []string{"kafka", "serve", "--port", "0"}
	for _, t := range topics {
		args = append(args, "--topic", t)
	}
	cmd := exec.Command(self, args...)
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

// FormatKafka prints the result table.
func FormatKafka(w io.Writer, r KafkaResult, sensors, partitions int) {
	fmt.Fprintf(w, "kafka benchmark: %d sensor readings (%d sensors) in a topic of %d partitions on `clink kafka serve` (own process)\n\n", r.Events, sensors, partitions)
	fmt.Fprintf(w, "%-40s %14s %12s %16s %12s %10s\n", "run", "records/s", "CPU s/M rec", "records/CPU-s", "peak RSS MB", "wall s")
	for _, m := range []Measure{r.Bare, r.Pooled, r.Decode, r.Sensors, r.Sensors2} {
		fmt.Fprintf(w, "%-40s %14.0f %12.3f %16.0f %12.1f %10.2f\n", m.Label, m.EventsPerSec(), m.CPUPerMillion(), m.EventsPerCPUSec(), float64(m.PeakRSSKB)/1024, m.Wall.Seconds())
	}
	ratio := func(a, b Measure) string {
		return strconv.FormatFloat(a.EventsPerCPUSec()/b.EventsPerCPUSec(), 'f', 2, 64) + "x"
	}
	fmt.Fprintf(w, "\nconsume + decode into Arrow / bare consume loop, records per CPU-second: %s (target >= 0.7x); / bare loop with pools: %s\n", ratio(r.Decode, r.Bare), ratio(r.Decode, r.Pooled))
	fmt.Fprintf(w, "sensors end to end via Kafka at parallelism 1 / bare consume loop: %s; at parallelism 2: %s (records/CPU-s), wall-clock speed-up of parallelism 2 over 1: %.2fx\n",
		ratio(r.Sensors, r.Bare), ratio(r.Sensors2, r.Bare), r.Sensors.Wall.Seconds()/r.Sensors2.Wall.Seconds())
}
