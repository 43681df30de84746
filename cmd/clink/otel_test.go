package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clink-dev/clink/telemetry/oteltest"
)

// TestOTLPCluster: a Coordinator and two Workers export to a real
// OpenTelemetry Collector over OTLP/gRPC (--otlp-protocol grpc; the
// end-to-end test uses OTLP/HTTP): a streaming job's Worker is
// SIGKILLed and the job restarts on the other; the collector then holds
// the job's clink.submit, clink.checkpoint, clink.restart and
// clink.restore spans in one trace, the submit span its root, and
// metrics from the Coordinator and the Workers.
func TestOTLPCluster(t *testing.T) {
	col := oteltest.Start(t)
	bin := build(t)
	addr := serveBroker(t, bin, "--topic", "readings:1")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")
	dir := t.TempDir()
	clog := &syncBuffer{}
	flightAddr, httpAddr := freePort(t), freePort(t)
	coord := startProc(t, bin, clog, "coordinator", "--addr", flightAddr, "--http-addr", httpAddr, "--checkpoint-dir", filepath.Join(dir, "ck"),
		"--otlp-endpoint", "http://"+col.GRPC, "--otlp-protocol", "grpc")
	waitFor(t, clog, "OpenTelemetry: exporting traces and metrics over OTLP", 20*time.Second)
	wlogs := map[string]*syncBuffer{"w1": {}, "w2": {}}
	workers := map[string]*proc{}
	targets := []string{httpAddr}
	for _, id := range []string{"w1", "w2"} {
		wh := freePort(t)
		targets = append(targets, wh)
		workers[id] = startProc(t, bin, wlogs[id], "worker", "--coordinator", flightAddr, "--slots", "1", "--id", id, "--otlp-endpoint", "http://"+col.GRPC, "--otlp-protocol", "grpc", "--http-addr", wh)
		waitFor(t, wlogs[id], "registered with", 20*time.Second)
	}
	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, `{"sensor_id":"s%d","ts":%d,"temp_c":%d.5}`+"\n", i%4, i*100, i%30)
	}
	clink(t, bin, in.String(), "kafka", "produce", "--brokers", addr, "--topic", "readings")
	sqlFile := filepath.Join(dir, "job.sql")
	os.WriteFile(sqlFile, []byte(`SET 'execution.checkpointing.interval' = '200ms';
CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '`+addr+`', 'topic' = 'readings', 'event_time_column' = 'ts');
CREATE TABLE o (sensor_id STRING, n BIGINT) WITH ('connector' = 'file', 'path' = '`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT sensor_id, COUNT(*) FROM readings GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), sensor_id;
`), 0o644)
	job := submitJob(t, bin, flightAddr, sqlFile)
	d := waitState(t, httpAddr, job, "RUNNING", 30*time.Second)
	waitFor(t, clog, "job_id="+job+" checkpoint 1 complete", 30*time.Second)
	// Prometheus scrapes all three processes.
	prom := oteltest.StartPrometheus(t, "", targets...)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		up := prom.Query(t, `up == 1`)
		slots := prom.Query(t, `clink_worker_slots`)
		jobs := prom.Query(t, `clink_jobs{state="RUNNING"}`)
		rows := prom.Query(t, `sum by (instance) (clink_operator_records_in_total{job_id="`+job+`"})`)
		// The source read all 200 records: partition 0's lag is 0.
		lag := prom.Query(t, `clink_source_records_lag{job_id="`+job+`",partition="0"} == 0`)
		if len(up) == 3 && len(slots) == 2 && len(jobs) == 1 && len(rows) >= 2 && len(lag) == 1 {
			t.Logf("Prometheus: up from %d targets, clink_worker_slots from %d Workers, rows in from %d processes", len(up), len(slots), len(rows))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus: up %v, slots %v, jobs %v, rows %v, lag %v\n%s", up, slots, jobs, rows, lag, prom.Log())
		}
	}
	victim := d["tasks"].([]any)[0].(map[string]any)["worker"].(string)
	workers[victim].kill()
	waitFor(t, clog, "job_id="+job+" attempt 2 running", 30*time.Second)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if lc, ok := getJob(t, httpAddr, job)["latest_checkpoint"].(map[string]any); ok && strings.Contains(clog.String(), "attempt 2") {
			if lc["id"].(float64) >= 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after the restart:\n%s", clog.String())
		}
	}
	time.Sleep(time.Second) // a metrics export from every process
	coord.cmd.Process.Signal(syscall.SIGTERM)
	<-coord.done
	coord.done <- nil

	spans := col.WaitSpans(t, func(s oteltest.Span) bool { return s.Attributes["clink.job.id"] == job },
		[]string{"clink.submit", "clink.checkpoint", "clink.restart", "clink.restore"}, 20*time.Second)
	root := oteltest.Root(t, spans, "clink.submit")
	if root.Service != "clink-coordinator" {
		t.Errorf("submit span from %q", root.Service)
	}
	for _, s := range spans {
		if s.Attributes["clink.job.id"] != job || s.Name == "clink.submit" {
			continue
		}
		if s.Name == "clink.checkpoint" && s.Attributes["clink.checkpoint.status"] == "COMPLETED" && len(s.Events) == 0 {
			t.Errorf("checkpoint span without operator events: %+v", s)
		}
		if s.Name == "clink.restart" && !strings.Contains(s.Attributes["clink.restart.reason"], victim) {
			t.Errorf("restart span's reason %q does not name %s", s.Attributes["clink.restart.reason"], victim)
		}
	}
	m := col.Metrics(t)
	if !m["clink-coordinator"]["clink_jobs"] || !m["clink-coordinator"]["clink_job_checkpoints_completed_total"] {
		t.Errorf("coordinator metrics: %v", keys(m["clink-coordinator"]))
	}
	if !m["clink-worker"]["clink_operator_records_in_total"] || !m["clink-worker"]["clink_worker_slots"] {
		t.Errorf("worker metrics: %v", keys(m["clink-worker"]))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
