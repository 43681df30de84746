package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench"
	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/lineage/lineagetest"
	"github.com/clink-dev/clink/telemetry/oteltest"
)

// TestObservabilityEndToEnd is issue #21's end-to-end test: the sensor
// pipeline (a file of generated readings, 10-second windows per sensor
// into the exactly-once file sink) on a Coordinator and two Workers that
// export to a real OpenTelemetry Collector, scraped by a real Prometheus,
// and sending OpenLineage events to a receiver that validates each
// against the official schema. The Worker running the job is SIGKILLed
// after its first checkpoint; the job restores on the other Worker and
// finishes with every window exact. Then: the collector holds the job's
// submit, checkpoint, restart and restore spans in one trace under the
// submit span; Prometheus had series from all three processes; the
// receiver has START, RUNNING, FAIL (the killed attempt) and COMPLETE,
// paired per run, with the file datasets.
func TestObservabilityEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a cluster for about 20 s")
	}
	col := oteltest.Start(t)
	rcv := lineagetest.NewReceiver(t)
	bin := build(t)
	verify := buildTool(t, "./examples/sensors/verify")
	dir := t.TempDir()
	in := filepath.Join(dir, "readings.jsonl")
	wl, err := bench.WriteSensors(in, 3_000_000, 100)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")
	t.Setenv("OPENLINEAGE_URL", rcv.URL)
	t.Setenv("OPENLINEAGE_NAMESPACE", "sensors")
	t.Setenv("CLINK_OPENLINEAGE_RUNNING_INTERVAL", "0")
	clog := &syncBuffer{}
	flightAddr, httpAddr := freePort(t), freePort(t)
	coord := startProc(t, bin, clog, "coordinator", "--addr", flightAddr, "--http-addr", httpAddr, "--checkpoint-dir", filepath.Join(dir, "ck"),
		"--otlp-endpoint", col.HTTP)
	waitFor(t, clog, "OpenTelemetry: exporting traces and metrics over OTLP", 20*time.Second)
	targets := []string{httpAddr}
	workers := map[string]*proc{}
	wlog := &syncBuffer{}
	for _, id := range []string{"w1", "w2"} {
		wh := freePort(t)
		targets = append(targets, wh)
		workers[id] = startProc(t, bin, wlog, "worker", "--coordinator", flightAddr, "--slots", "1", "--id", id, "--otlp-endpoint", col.HTTP, "--http-addr", wh)
	}
	waitFor(t, wlog, "worker w1: registered with", 20*time.Second)
	waitFor(t, wlog, "worker w2: registered with", 20*time.Second)
	prom := oteltest.StartPrometheus(t, "", targets...)
	for deadline := time.Now().Add(30 * time.Second); len(prom.Query(t, `up == 1`)) < 3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus does not scrape all three processes: %v", prom.Query(t, `up`))
		}
	}
	sqlFile := filepath.Join(dir, "sensors.sql")
	os.WriteFile(sqlFile, []byte(`SET 'execution.checkpointing.interval' = '200ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'file', 'path' = '`+in+`', 'event_time_column' = 'ts', 'watermark_lag_ms' = '3000');
CREATE TABLE sensor_windows (sensor_id STRING, window_start BIGINT, window_end BIGINT,
  readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE) WITH ('connector' = 'file', 'path' = '`+out+`');
INSERT INTO sensor_windows
SELECT sensor_id, window_start, window_end, COUNT(*), AVG(temp_c), MIN(temp_c), MAX(temp_c)
FROM readings GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`), 0o644)
	job := submitJob(t, bin, flightAddr, sqlFile)
	d := waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
	waitFor(t, clog, "job_id="+job+" checkpoint 1 complete", 30*time.Second)
	victim := d["tasks"].([]any)[0].(map[string]any)["worker"].(string)
	workers[victim].kill()
	killed := time.Now()
	waitFor(t, clog, "job_id="+job+" attempt 2 running", 30*time.Second)
	waitState(t, httpAddr, job, "FINISHED", 120*time.Second)
	t.Logf("killed %s; the job finished %s later", victim, time.Since(killed).Round(time.Millisecond))
	vout, err := exec.Command(verify, "-in", out, "-lag", "3000", "-window", "10000", "-ticks", strconv.Itoa(wl.Ticks), "-sensors", strconv.Itoa(wl.Sensors)).CombinedOutput()
	if err != nil || !strings.Contains(string(vout), "PASS: ") {
		t.Fatalf("verify: %v\n%s", err, vout)
	}
	t.Logf("verify: %s", strings.TrimSpace(string(vout)))

	// Prometheus: series from the Coordinator and the Worker still up
	// (the killed one's are in its history).
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		inst := map[string]bool{}
		for _, s := range prom.Query(t, `count by (instance) ({__name__=~"clink_.+"})`) {
			inst[s.Labels["instance"]] = true
		}
		hist := map[string]bool{}
		for _, s := range prom.Query(t, `count by (instance) (last_over_time(clink_worker_slots[5m]))`) {
			hist[s.Labels["instance"]] = true
		}
		if inst[targets[0]] && len(hist) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: clink series from %v, Worker series from %v; want %v", inst, hist, targets)
		}
	}
	time.Sleep(time.Second)
	coord.cmd.Process.Signal(syscall.SIGTERM)
	<-coord.done
	coord.done <- nil

	// Traces.
	spans := col.WaitSpans(t, func(s oteltest.Span) bool { return s.Attributes["clink.job.id"] == job },
		[]string{"clink.submit", "clink.checkpoint", "clink.restart", "clink.restore"}, 20*time.Second)
	oteltest.Root(t, spans, "clink.submit")

	// Lineage.
	rcv.Check(t, true)
	evs := rcv.Events()
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.EventType]++
		if e.Job.Namespace != "sensors" {
			t.Errorf("job namespace %q", e.Job.Namespace)
		}
		if len(e.Inputs) != 1 || e.Inputs[0].Namespace != "file" || e.Inputs[0].Name != in {
			t.Errorf("%s inputs %+v", e.EventType, e.Inputs)
		}
		if len(e.Outputs) != 1 || e.Outputs[0].Namespace != "file" || e.Outputs[0].Name != out {
			t.Errorf("%s outputs %+v", e.EventType, e.Outputs)
		}
	}
	if kinds[lineage.Start] != 2 || kinds[lineage.Running] == 0 || kinds[lineage.Fail] != 1 || kinds[lineage.Complete] != 1 {
		t.Fatalf("lineage events %s", lineagetest.Summary(evs))
	}
	t.Logf("%d spans, lineage %v", len(spans), fmt.Sprint(kinds))
}
