package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveBroker starts `clink kafka serve` as a separate process on a free
// port and returns its address; the broker is stopped (SIGTERM) at cleanup.
func serveBroker(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"kafka", "serve", "--port", "0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case addr, ok := <-lines:
		if !ok {
			stop()
			t.Fatalf("clink kafka serve printed no address: %s", stderr.String())
		}
		return addr
	case <-time.After(30 * time.Second):
		t.Fatalf("clink kafka serve did not start: %s", stderr.String())
	}
	return ""
}

// clink runs the binary with stdin and returns stdout; it fails the test
// unless the command succeeds.
func clink(t *testing.T, bin, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("clink %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func sortedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

const kafkaReadings = `{"sensor_id":"s1","ts":1000,"temp_c":20.5}
{"sensor_id":"s2","ts":1500,"temp_c":30}
{"sensor_id":"s1","ts":9000,"temp_c":21.5}
{"sensor_id":"s2","ts":12000,"temp_c":31}
{"sensor_id":"s1","ts":15000,"temp_c":22}
{"sensor_id":"s1","ts":4000,"temp_c":99}
{"sensor_id":"s2","ts":21000,"temp_c":32}
`

// The windows of kafkaReadings; s1's reading at 4000 arrives after its
// partition passed 15000 - 3000 and is late.
var kafkaWindows = []string{
	`{"sensor_id":"s1","window_start":0,"readings":2,"avg_temp":21}`,
	`{"sensor_id":"s1","window_start":10000,"readings":1,"avg_temp":22}`,
	`{"sensor_id":"s2","window_start":0,"readings":1,"avg_temp":30}`,
	`{"sensor_id":"s2","window_start":10000,"readings":1,"avg_temp":31}`,
	`{"sensor_id":"s2","window_start":20000,"readings":1,"avg_temp":32}`,
}

func kafkaJob(addr, in, out string) string {
	return `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = '` + in + `',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000', 'scan_bounded' = 'latest');
CREATE TABLE windows (sensor_id STRING, window_start BIGINT, readings BIGINT, avg_temp DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = '` + out + `', 'key_column' = 'sensor_id');
INSERT INTO windows
SELECT sensor_id, window_start, COUNT(*), AVG(temp_c) FROM readings
GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;`
}

// The dev broker in its own process, fed and read by clink's own tools,
// with a job in a third process in between.
func TestKafkaServeProduceRunConsume(t *testing.T) {
	bin := build(t)
	addr := serveBroker(t, bin, "--topic", "readings:4")
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "windows", "--partitions", "2")
	if got := clink(t, bin, kafkaReadings, "kafka", "produce", "--brokers", addr, "--topic", "readings", "--key-field", "sensor_id"); got != "produced 7 records to readings\n" {
		t.Fatalf("produce printed %q", got)
	}
	clink(t, bin, "", "run", "--quiet", "-e", kafkaJob(addr, "readings", "windows"))
	got := sortedLines(clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "windows", "--from-beginning", "--to-end"))
	if !reflect.DeepEqual(got, kafkaWindows) {
		t.Fatalf("windows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(kafkaWindows, "\n"))
	}
	if n := clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "readings", "--from-beginning", "--to-end", "--count"); n != "7\n" {
		t.Errorf("consume --count printed %q", n)
	}
	// Existing topic: an error unless --if-not-exists.
	cmd := exec.Command(bin, "kafka", "create-topic", "--brokers", addr, "--topic", "windows")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "TOPIC_ALREADY_EXISTS") {
		t.Errorf("create-topic of an existing topic: %v %s", err, out)
	}
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "windows", "--if-not-exists")
}

func TestKafkaServeDataDir(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	for round := 0; round < 2; round++ {
		cmd := exec.Command(bin, "kafka", "serve", "--port", "0", "--topic", "t:2", "--data-dir", dir)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() {
			t.Fatal("no address")
		}
		addr := sc.Text()
		clink(t, bin, "{\"n\":1}\n", "kafka", "produce", "--brokers", addr, "--topic", "t")
		got := clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "t", "--from-beginning", "--to-end", "--count")
		if want := []string{"1\n", "2\n"}[round]; got != want {
			t.Errorf("round %d: %q records, want %q", round, got, want)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir)); err != nil {
		t.Fatal(err)
	}
}

// kcat (librdkafka, C) against the dev broker: it produces what Clink
// reads, and consumes what Clink writes. The test is skipped only when kcat
// is not installed and CLINK_REQUIRE_KCAT is unset (CI sets it).
func TestKafkaKcatInterop(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		const msg = "kcat: not on PATH (install: .ci/install-deps.sh, or apt-get install kcat)"
		if os.Getenv("CLINK_REQUIRE_KCAT") != "" {
			t.Fatalf("%s; required (CLINK_REQUIRE_KCAT is set)", msg)
		}
		t.Skip(msg)
	}
	bin := build(t)
	addr := serveBroker(t, bin, "--topic", "readings:4", "--topic", "windows:2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// kcat produces, keyed (key:value), partitioned by murmur2 as Java.
	var keyed strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(kafkaReadings), "\n") {
		keyed.WriteString(l[14:16] + "\t" + l + "\n")
	}
	p := exec.CommandContext(ctx, kcat, "-b", addr, "-P", "-t", "readings", "-K", "\t", "-X", "topic.partitioner=murmur2_random")
	p.Stdin = strings.NewReader(keyed.String())
	if out, err := p.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	clink(t, bin, "", "run", "--quiet", "-e", kafkaJob(addr, "readings", "windows"))

	// kcat consumes Clink's output: values, keys and partitions.
	c := exec.CommandContext(ctx, kcat, "-b", addr, "-C", "-t", "windows", "-e", "-q", "-f", "%k\t%p\t%s\n")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("kcat -C: %v", err)
	}
	var values []string
	parts := map[string]string{}
	for _, l := range sortedLines(string(out)) {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("kcat line %q", l)
		}
		if !strings.HasPrefix(f[2], `{"sensor_id":"`+f[0]+`"`) {
			t.Errorf("key %q for %s", f[0], f[2])
		}
		if p, ok := parts[f[0]]; ok && p != f[1] {
			t.Errorf("key %s in partitions %s and %s", f[0], p, f[1])
		}
		parts[f[0]] = f[1]
		values = append(values, f[2])
	}
	sort.Strings(values)
	if !reflect.DeepEqual(values, kafkaWindows) {
		t.Fatalf("kcat read:\n%s\nwant:\n%s", strings.Join(values, "\n"), strings.Join(kafkaWindows, "\n"))
	}
}

// clink bench kafka runs end to end on a small workload.
func TestBenchKafkaSmall(t *testing.T) {
	bin := build(t)
	out := clink(t, bin, "", "bench", "kafka", "-n", "20000", "-sensors", "10", "-runs", "1")
	for _, want := range []string{"franz-go consume loop (bare)", "clink run kafka -> blackhole", "clink run sensors kafka -> blackhole", "records per CPU-second"} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
}
