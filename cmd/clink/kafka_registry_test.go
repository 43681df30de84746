package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveWithRegistry starts `clink kafka serve --schema-registry-port 0`
// and returns the broker's address and the registry's URL, the two lines
// it prints on stdout.
func serveWithRegistry(t *testing.T, bin string, args ...string) (addr, url string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"kafka", "serve", "--port", "0", "--schema-registry-port", "0"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("serve exited with %v: %s", err, stderr.String())
		}
	})
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	deadline := time.After(30 * time.Second)
	for len(got) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("clink kafka serve printed %q: %s", got, stderr.String())
			}
			got = append(got, l)
		case <-deadline:
			t.Fatalf("clink kafka serve did not start: %s", stderr.String())
		}
	}
	url, ok := strings.CutPrefix(got[1], "schema registry: http://127.0.0.1:")
	if !ok {
		t.Fatalf("second line %q, want schema registry: http://127.0.0.1:PORT", got[1])
	}
	return got[0], "http://127.0.0.1:" + url
}

// clinkFails runs the binary, expects it to fail, and returns its stderr.
func clinkFails(t *testing.T, bin, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("clink %s succeeded; want a failure", strings.Join(args, " "))
	}
	return stderr.String()
}

func getSubjects(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/subjects", nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// The dev registry beside the broker, with produce and consume through it.
func TestKafkaServeSchemaRegistry(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	addr, url := serveWithRegistry(t, bin, "--topic", "readings:1")
	if code, body := getSubjects(t, url, "", ""); code != 200 || body != "[]" {
		t.Fatalf("GET /subjects: %d %s", code, body)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := write("v1.avsc", `{"type":"record","name":"Reading","fields":[{"name":"sensor_id","type":"string"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`)
	v2 := write("v2.avsc", `{"type":"record","name":"Reading","fields":[{"name":"sensor_id","type":"string"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"temp_c","type":["null","double"],"default":null}]}`)
	v3 := write("v3.avsc", `{"type":"record","name":"Reading","fields":[{"name":"sensor_id","type":"string"},{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},{"name":"temp_c","type":["null","double"],"default":null},{"name":"site","type":"string"}]}`)
	produce := []string{"kafka", "produce", "--brokers", addr, "--topic", "readings", "--key-field", "sensor_id", "--value-format", "avro-confluent", "--schema-registry", url, "--value-schema"}
	if got := clink(t, bin, `{"sensor_id":"s1","ts":1000}`+"\n", append(produce, v1)...); got != "produced 1 records to readings\n" {
		t.Fatalf("produce v1 printed %q", got)
	}
	clink(t, bin, `{"sensor_id":"s2","ts":"2026-03-01 08:00:00","temp_c":21.5}`+"\n", append(produce, v2)...)
	if msg := clinkFails(t, bin, `{"sensor_id":"s3","ts":1,"site":"lab"}`+"\n", append(produce, v3)...); !strings.Contains(msg, `subject "readings-value": not registering`) || !strings.Contains(msg, "site") {
		t.Errorf("incompatible v3: %s", msg)
	}
	if msg := clinkFails(t, bin, `{"sensor_id":"s3","ts":"soon"}`+"\n", append(produce, v2)...); !strings.Contains(msg, `stdin:1: field "ts"`) {
		t.Errorf("bad line: %s", msg)
	}
	consume := []string{"kafka", "consume", "--brokers", addr, "--topic", "readings", "--from-beginning", "--to-end", "--schema-registry", url, "--value-format", "avro-confluent"}
	want := `{"sensor_id":"s1","ts":"1970-01-01 00:00:01.000"}
{"sensor_id":"s2","ts":"2026-03-01 08:00:00.000","temp_c":21.5}
`
	if got := clink(t, bin, "", consume...); got != want {
		t.Errorf("consume:\n%s\nwant:\n%s", got, want)
	}
	if got := clink(t, bin, "", append(consume, "--key-format", "raw", "--max", "1")...); got != `{"key":"s1","value":{"sensor_id":"s1","ts":"1970-01-01 00:00:01.000"}}`+"\n" {
		t.Errorf("consume with keys: %q", got)
	}
	if code, body := getSubjects(t, url, "", ""); code != 200 || body != `["readings-value"]` {
		t.Errorf("GET /subjects: %d %s", code, body)
	}

	// Protobuf.
	proto := write("reading.proto", "syntax = \"proto3\";\npackage demo;\nmessage Reading {\n  string sensor_id = 1;\n  double temp_c = 2;\n}\n")
	clink(t, bin, "", "kafka", "create-topic", "--brokers", addr, "--topic", "pb")
	clink(t, bin, `{"sensor_id":"s1","temp_c":20.5}`+"\n"+`{"sensor_id":"s2"}`+"\n",
		"kafka", "produce", "--brokers", addr, "--topic", "pb", "--value-format", "protobuf-confluent", "--schema-registry", url, "--proto-file", proto, "--message", "Reading")
	if got := clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "pb", "--from-beginning", "--to-end", "--schema-registry", url, "--value-format", "protobuf-confluent"); got != `{"sensor_id":"s1","temp_c":20.5}`+"\n"+`{"sensor_id":"s2"}`+"\n" {
		t.Errorf("protobuf consume: %q", got)
	}

	// A record not framed by a registry serializer: an error naming it,
	// or skipped with --skip-errors; the plain mode is unchanged.
	clink(t, bin, "plain\n", "kafka", "produce", "--brokers", addr, "--topic", "readings")
	if msg := clinkFails(t, bin, "", consume...); !strings.Contains(msg, "topic readings partition 0 offset 2: schema registry wire format: wrong magic byte") {
		t.Errorf("wrong magic byte: %s", msg)
	}
	cmd := exec.Command(bin, append(consume, "--skip-errors")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || string(out) != want || !strings.Contains(stderr.String(), "3 records from readings") || !strings.Contains(stderr.String(), "1 skipped") {
		t.Errorf("--skip-errors: %v %q %s", err, out, stderr.String())
	}
	if got := clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "readings", "--from-beginning", "--to-end"); !strings.HasSuffix(got, "\nplain\n") || strings.Count(got, "\n") != 3 {
		t.Errorf("plain consume: %q", got)
	}
}

// --schema-registry-user: basic auth, the password from the environment;
// --data-dir keeps the registry's ids.
func TestKafkaServeSchemaRegistryAuth(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	t.Setenv("CLINK_TEST_SR_PASSWORD", "s3cret")
	addr, url := serveWithRegistry(t, bin, "--data-dir", dir, "--topic", "t", "--schema-registry-user", "dev:env://CLINK_TEST_SR_PASSWORD")
	if code, _ := getSubjects(t, url, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("without auth: %d, want 401", code)
	}
	if code, body := getSubjects(t, url, "dev", "s3cret"); code != 200 || body != "[]" {
		t.Fatalf("with auth: %d %s", code, body)
	}
	schema := filepath.Join(dir, "t.avsc")
	os.WriteFile(schema, []byte(`{"type":"record","name":"T","fields":[{"name":"n","type":"long"}]}`), 0o644)
	produce := []string{"kafka", "produce", "--brokers", addr, "--topic", "t", "--value-format", "avro-confluent", "--schema-registry", url, "--value-schema", schema}
	if msg := clinkFails(t, bin, `{"n":1}`+"\n", produce...); !strings.Contains(msg, "401") && !strings.Contains(strings.ToLower(msg), "unauthorized") {
		t.Errorf("produce without credentials: %s", msg)
	}
	clink(t, bin, `{"n":1}`+"\n", append(produce, "--schema-registry-user", "dev:env://CLINK_TEST_SR_PASSWORD")...)
	t.Setenv("CLINK_TEST_SR_USER", "dev:s3cret")
	if got := clink(t, bin, "", "kafka", "consume", "--brokers", addr, "--topic", "t", "--from-beginning", "--to-end", "--value-format", "avro-confluent", "--schema-registry", url, "--schema-registry-user", "env://CLINK_TEST_SR_USER"); got != `{"n":1}`+"\n" {
		t.Errorf("consume: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "schema-registry", "schema-registry.json")); err != nil {
		t.Errorf("registry data: %v", err)
	}
}
