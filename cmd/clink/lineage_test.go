package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/lineage"
	"github.com/clink-dev/clink/lineage/lineagetest"
)

// lineageEnv is the environment of a clink sending its lineage to url.
func lineageEnv(url string, more ...string) []string {
	env := []string{"OPENLINEAGE_URL=" + url, "OPENLINEAGE_NAMESPACE=test-ns", "OPENLINEAGE_API_KEY=s3cret"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OPENLINEAGE_") && !strings.HasPrefix(e, "CLINK_OPENLINEAGE_") {
			env = append(env, e)
		}
	}
	return append(env, more...)
}

// A bounded embedded job, file to file: START, then COMPLETE, both with
// the two files as datasets (namespace "file", the absolute path) and
// their columns, the SQL facet, and the API key as a bearer token.
func TestLineageFileJob(t *testing.T) {
	bin := build(t)
	r := lineagetest.NewReceiver(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(in, []byte("{\"k\":\"a\",\"v\":1}\n{\"k\":\"b\",\"v\":2}\n"), 0o644)
	sqlText := "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector'='file','path'='" + in + "');\n" +
		"CREATE TABLE dst (k STRING, v BIGINT) WITH ('connector'='file','path'='" + out + "');\n" +
		"INSERT INTO dst SELECT k, v * 2 FROM src;"
	cmd := exec.Command(bin, "run", "--quiet", "-e", sqlText)
	cmd.Env = lineageEnv(r.URL)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	r.Check(t, true)
	evs := r.Events()
	if len(evs) != 2 || evs[0].EventType != lineage.Start || evs[1].EventType != lineage.Complete {
		t.Fatalf("events %s", lineagetest.Summary(evs))
	}
	for _, e := range evs {
		if e.Job.Namespace != "test-ns" || e.Job.Name != "insert-into_dst" {
			t.Errorf("job %s/%s", e.Job.Namespace, e.Job.Name)
		}
		if len(e.Inputs) != 1 || e.Inputs[0].Namespace != "file" || e.Inputs[0].Name != in {
			t.Errorf("inputs %+v", e.Inputs)
		}
		if len(e.Outputs) != 1 || e.Outputs[0].Namespace != "file" || e.Outputs[0].Name != out {
			t.Errorf("outputs %+v", e.Outputs)
		}
		fields := e.Outputs[0].Facets["schema"].(map[string]any)["fields"].([]any)
		if len(fields) != 2 || fields[1].(map[string]any)["name"] != "v" || fields[1].(map[string]any)["type"] != "BIGINT" {
			t.Errorf("schema facet %v", fields)
		}
		if q := e.Job.Facets["sql"].(map[string]any)["query"]; q != sqlText {
			t.Errorf("sql facet %q", q)
		}
		if pt := e.Job.Facets["jobType"].(map[string]any)["processingType"]; pt != "BATCH" {
			t.Errorf("processingType %v", pt)
		}
	}
	for _, h := range r.Authorization() {
		if h != "Bearer s3cret" {
			t.Errorf("Authorization %q", h)
		}
	}
}

// A receiver that is down (connection refused) or answers 500 neither
// fails nor holds up a job: it ends as it would without lineage, and a
// receiver answering 500 at first gets the events on a retry.
func TestLineageReceiverDown(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(in, []byte("{\"v\":1}\n"), 0o644)
	sqlText := "CREATE TABLE src (v BIGINT) WITH ('connector'='file','path'='" + in + "');" +
		"CREATE TABLE dst (v BIGINT) WITH ('connector'='file','path'='" + out + "'); INSERT INTO dst SELECT v FROM src;"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	start := time.Now()
	cmd := exec.Command(bin, "run", "--quiet", "-e", sqlText)
	cmd.Env = lineageEnv(down)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("a job with its lineage receiver down: %v\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "{\"v\":1}\n" {
		t.Errorf("output %q", b)
	}
	// The run waits for its events at most the flush timeout (10 s).
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s", d)
	}
	if !strings.Contains(stderr.String(), "not delivered") {
		t.Errorf("stderr does not say the events were not delivered: %s", stderr.String())
	}

	r := lineagetest.NewReceiver(t)
	r.Answer(func(n int) int {
		if n <= 2 {
			return 500
		}
		return 0
	})
	os.Remove(out)
	cmd = exec.Command(bin, "run", "--quiet", "-e", sqlText)
	cmd.Env = lineageEnv(r.URL)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	r.Check(t, true)
	if evs := r.Events(); len(evs) != 2 || r.Posts() != 4 {
		t.Errorf("%d events in %d POSTs, want 2 in 4: %s", len(evs), r.Posts(), lineagetest.Summary(evs))
	}
}

// A streaming job from the dev Kafka broker into Kafka, with checkpoints:
// START, RUNNING on completed checkpoints, ABORT when it is stopped.
func TestLineageKafkaStreaming(t *testing.T) {
	bin := build(t)
	r := lineagetest.NewReceiver(t)
	addr := serveBroker(t, bin, "--topic", "readings:2", "--topic", "windows:1")
	clink(t, bin, kafkaReadings, "kafka", "produce", "--brokers", addr, "--topic", "readings", "--key-field", "sensor_id")
	job := strings.Replace(kafkaJob(addr, "readings", "windows"), ", 'scan_bounded' = 'latest'", "", 1)
	cmd := exec.Command(bin, "run", "--quiet", "--checkpoint-dir", t.TempDir(), "--checkpoint-interval-ms", "100", "-e", job)
	cmd.Env = lineageEnv(r.URL, "CLINK_OPENLINEAGE_RUNNING_INTERVAL=200ms")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r.Wait(t, 60*time.Second, "two RUNNING events", func(evs []lineage.Event) bool {
		n := 0
		for _, e := range evs {
			if e.EventType == lineage.Running {
				n++
			}
		}
		return n >= 2
	})
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("clink did not stop on SIGINT: %s", stderr.String())
	}
	r.Check(t, true)
	evs := r.Events()
	ids, _ := lineagetest.Runs(evs)
	if len(ids) != 1 || evs[0].EventType != lineage.Start || evs[len(evs)-1].EventType != lineage.Abort {
		t.Fatalf("events %s", lineagetest.Summary(evs))
	}
	e := evs[0]
	if len(e.Inputs) != 1 || e.Inputs[0].Namespace != "kafka://"+addr || e.Inputs[0].Name != "readings" {
		t.Errorf("inputs %+v", e.Inputs)
	}
	if len(e.Outputs) != 1 || e.Outputs[0].Namespace != "kafka://"+addr || e.Outputs[0].Name != "windows" {
		t.Errorf("outputs %+v", e.Outputs)
	}
	if pt := e.Job.Facets["jobType"].(map[string]any)["processingType"]; pt != "STREAMING" {
		t.Errorf("processingType %v", pt)
	}
}

// A failing embedded job (a malformed record): START, then FAIL with the
// error in the errorMessage facet.
func TestLineageFailedJob(t *testing.T) {
	bin := build(t)
	r := lineagetest.NewReceiver(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"v\":1}\n{\"v\":\n"), 0o644)
	cmd := exec.Command(bin, "run", "--quiet", "-e", "CREATE TABLE src (v BIGINT) WITH ('connector'='file','path'='"+in+"');"+
		"CREATE TABLE dst (v BIGINT) WITH ('connector'='file','path'='"+filepath.Join(dir, "out.jsonl")+"'); INSERT INTO dst SELECT v FROM src;")
	cmd.Env = lineageEnv(r.URL)
	if b, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("a malformed record did not fail the job: %s", b)
	}
	r.Check(t, true)
	evs := r.Events()
	if len(evs) != 2 || evs[1].EventType != lineage.Fail {
		t.Fatalf("events %s", lineagetest.Summary(evs))
	}
	msg, _ := evs[1].Run.Facets["errorMessage"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "in.jsonl") {
		t.Errorf("error message %q does not name the file", msg)
	}
}
