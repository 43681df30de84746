package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

// proc is a clink process of a test cluster.
type proc struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

func startProc(t *testing.T, bin string, log *syncBuffer, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), log: log, done: make(chan error, 1)}
	p.cmd.Stderr = log
	p.cmd.Stdout = log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill() // SIGKILL
		<-p.done
		p.done <- nil
	}
}

var listenRE = regexp.MustCompile(`listening: flight (\S+), http (\S+)`)

// startCoordinator runs `clink coordinator` on free ports and returns its
// Flight and HTTP addresses.
func startCoordinator(t *testing.T, bin string, log *syncBuffer, args ...string) (string, string) {
	t.Helper()
	startProc(t, bin, log, append([]string{"coordinator", "--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, args...)...)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listenRE.FindStringSubmatch(log.String()); m != nil {
			return m[1], m[2]
		}
	}
	t.Fatalf("the coordinator did not start:\n%s", log.String())
	return "", ""
}

func getJob(t *testing.T, httpAddr, id string) map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/api/v1/jobs/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

func waitState(t *testing.T, httpAddr, id string, want string, timeout time.Duration) map[string]any {
	t.Helper()
	var d map[string]any
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		d = getJob(t, httpAddr, id)
		if d["state"] == want {
			return d
		}
		if s := d["state"]; s == "FAILED" || s == "CANCELED" || (s == "FINISHED" && want != "FINISHED") {
			break
		}
	}
	t.Fatalf("job %s: want %s, have %v", id, want, d)
	return nil
}

var jobIDRE = regexp.MustCompile(`job_id=(\d+)`)

// submitJob runs `clink run FILE --coordinator ADDR FLAGS...` (the issue's
// order: flags after the file); args ends with the file.
func submitJob(t *testing.T, bin, coord string, args ...string) string {
	t.Helper()
	file := args[len(args)-1]
	out := clink(t, bin, "", append([]string{"run", file, "--coordinator", coord}, args[:len(args)-1]...)...)
	m := jobIDRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no job id in %q", out)
	}
	return m[1]
}

// TestClusterSensorsParallelism: the sensor pipeline on a Coordinator and
// two Worker processes gives the same rows at parallelism 1, 2 and 4 (the
// shuffle crosses the Workers over Flight), each verified exact.
func TestClusterSensorsParallelism(t *testing.T) {
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	dir := t.TempDir()
	in := filepath.Join(dir, "readings.jsonl")
	c := workload.Default()
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	c.Emit(func(s, tick int) {
		f.Write(workload.AppendRecord(nil, c.SensorID(s), c.TS(tick), workload.Tenths(s, tick)))
	})
	f.Close()
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(dir, "ck"))
	for _, id := range []string{"w1", "w2"} {
		startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", id)
	}
	var first []string
	for _, par := range []int{1, 2, 4} {
		out := filepath.Join(dir, fmt.Sprintf("out-%d", par))
		sqlFile := filepath.Join(dir, fmt.Sprintf("sensors%d.sql", par))
		sql := `CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + in + `', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH ('connector' = 'file', 'path' = '` + out + `');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;`
		os.WriteFile(sqlFile, []byte(sql), 0o644)
		id := submitJob(t, bin, coord, "--parallelism", strconv.Itoa(par), sqlFile)
		waitState(t, httpAddr, id, "FINISHED", time.Minute)
		if o, err := exec.Command(verify, "-in", out).CombinedOutput(); err != nil {
			t.Fatalf("parallelism %d: %v\n%s", par, err, o)
		}
		files, _ := filepath.Glob(filepath.Join(out, "*.jsonl"))
		if len(files) != par {
			t.Errorf("parallelism %d: %d part files", par, len(files))
		}
		var rows []string
		for _, f := range files {
			data, _ := os.ReadFile(f)
			rows = append(rows, sortedLines(string(data))...)
		}
		slices.Sort(rows)
		if first == nil {
			first = rows
		} else if !slices.Equal(rows, first) {
			t.Errorf("parallelism %d gives other rows than parallelism 1", par)
		}
	}
}

// TestClusterWorkerSIGKILL is the cluster's reference story: the sensor
// workload streams through the dev broker while one of two Workers is
// killed with SIGKILL three times and started again (twice under the same
// id, once under a new one after the old one was found lost). The job (parallelism 4, two
// subtasks per Worker, Flight shuffle between them) restarts from its
// newest checkpoint each time; the exactly-once file sink and the Kafka
// sink (read read_committed) must hold every window exactly once.
func TestClusterWorkerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: streams for about 15 s")
	}
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CLINK_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("kill seed %d (CLINK_KILL_SEED=%d repeats these kill points)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6c0))

	addr := serveBroker(t, bin, "--topic", "readings:4")
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "windows", "--partitions", "2")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	sqlFile := filepath.Join(dir, "pipeline.sql")
	sql := `SET 'execution.checkpointing.interval' = '200ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'readings',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'file', 'path' = '` + out + `');
CREATE TABLE window_topic (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '` + addr + `', 'topic' = 'windows', 'key_column' = 'sensor_id',
  'delivery_guarantee' = 'exactly_once');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
INSERT INTO window_topic
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`
	if err := os.WriteFile(sqlFile, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--checkpoint-dir", filepath.Join(dir, "ck"))
	startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", "w1")
	w2 := startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", "w2")
	job := submitJob(t, bin, coord, "--parallelism", "4", sqlFile)
	waitState(t, httpAddr, job, "RUNNING", 30*time.Second)

	c := workload.Default()
	c.Ticks = 1200
	produced := make(chan error, 1)
	go func() { produced <- streamWorkload(addr, c, 1000) }()

	for i := range 3 {
		time.Sleep(time.Duration(1500+rng.IntN(1500)) * time.Millisecond)
		w2.kill()
		id := "w2"
		if i == 1 {
			// A new process under a new id: the old one is found lost
			// by its missed heartbeats.
			id = fmt.Sprintf("w2-%d", i)
			time.Sleep(2 * time.Second)
		}
		w2 = startProc(t, bin, log, "worker", "--coordinator", coord, "--slots", "2", "--id", id)
		waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
		t.Logf("kill %d of the second worker, restarted as %s", i+1, id)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	vargs := []string{"-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(c.Ticks)}
	topicOut := filepath.Join(dir, "topic.jsonl")
	targs := append(append([]string{}, vargs...), "-in", topicOut)
	var report string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		o, err := exec.Command(verify, vargs...).Output()
		report = string(o)
		if err == nil {
			if err := os.WriteFile(topicOut, consumeCommitted(t, addr, "windows"), 0o644); err != nil {
				t.Fatal(err)
			}
			o, err = exec.Command(verify, targs...).Output()
			report = "kafka sink: " + string(o)
		}
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if !strings.HasPrefix(report, "kafka sink: PASS") {
		t.Fatalf("verify after 3 Worker SIGKILLs:\n%s\ncluster log:\n%s", report, log.String())
	}
	// The last kill's Worker is found lost by its missed heartbeats
	// (1.5 s), which may come after the output is complete.
	d := getJob(t, httpAddr, job)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r, _ := d["restarts"].(float64); r >= 3 && d["state"] == "RUNNING" {
			break
		}
		d = getJob(t, httpAddr, job)
	}
	if r, _ := d["restarts"].(float64); r < 3 || d["state"] != "RUNNING" {
		t.Errorf("job after 3 kills: %v", d)
	}
	for _, want := range []string{"worker lost: w2 ", "worker lost: w2-1 ", "awaiting_restart (attempt 3/10)", "restore point: checkpoint"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the cluster log lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("cluster log:\n%s", log.String())
	}
	t.Logf("%s", strings.TrimSpace(report))
}

// TestClusterCoordinatorHostPort: `clink run --coordinator-host H
// --coordinator-port P` submits like --coordinator H:P, also when P is the
// Coordinator's HTTP API port (Flink's REST port habit); `clink worker`
// takes the same flags; with --coordinator as well they are refused.
func TestClusterCoordinatorHostPort(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log)
	host, port, _ := strings.Cut(coord, ":")
	startProc(t, bin, log, "worker", "--coordinator-host", host, "--coordinator-port", port, "--id", "w1")
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"k":"a"}`+"\n"), 0o644)
	sqlFile := filepath.Join(dir, "copy.sql")
	os.WriteFile(sqlFile, []byte(`CREATE TABLE t (k STRING) WITH ('connector' = 'file', 'path' = '`+in+`');
CREATE TABLE o (k STRING) WITH ('connector' = 'file', 'path' = '`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k FROM t;`), 0o644)
	hhost, hport, _ := strings.Cut(httpAddr, ":")
	for _, args := range [][]string{
		{"--coordinator-host", host, "--coordinator-port", port},
		{"--coordinator-host", hhost, "--coordinator-port", hport}, // the HTTP API's port
	} {
		cmd := exec.Command(bin, append(append([]string{"run"}, args...), sqlFile)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("clink run %v: %v\n%s\n%s", args, err, stderr.String(), log.String())
		}
		m := jobIDRE.FindStringSubmatch(stdout.String())
		if m == nil {
			t.Fatalf("no job id in %q", stdout.String())
		}
		if args[3] == hport && !strings.Contains(stderr.String(), "is the Coordinator's HTTP API; submitted to its Flight address "+coord) {
			t.Errorf("via the HTTP port: %s", stderr.String())
		}
		d := waitState(t, httpAddr, m[1], "FINISHED", time.Minute)
		if id, ok := d["id"].(float64); !ok || strconv.Itoa(int(id)) != m[1] {
			t.Errorf("job id %#v in the detail, %s printed", d["id"], m[1])
		}
	}
	cmd := exec.Command(bin, "run", "--coordinator", coord, "--coordinator-port", port, sqlFile)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "not both") {
		t.Errorf("--coordinator with --coordinator-port: %v %s", err, out)
	}
}
