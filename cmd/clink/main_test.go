package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build compiles the clink binary once per test binary: the whole product
// (every connector, both cluster roles, the state tools) is this one
// binary, and the tests run nothing else of the project's.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clink-cli-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "clink")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

func TestCLI(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "in.jsonl")
	os.WriteFile(data, []byte(`{"k":"a","ts":1000,"v":1}
{"k":"a","ts":2000,"v":2}
{"k":"b","ts":11000,"v":3}
`), 0o644)
	ddl := "CREATE TABLE t (k STRING, ts BIGINT, v BIGINT) WITH ('connector'='file','path'='" + data + "','event_time_column'='ts');\n"
	query := ddl + "SELECT k, window_start, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k"
	script := filepath.Join(dir, "q.sql")
	os.WriteFile(script, []byte(query), 0o644)

	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	want := "{\"k\":\"a\",\"window_start\":0,\"c\":2,\"s\":3}\n{\"k\":\"b\",\"window_start\":10000,\"c\":1,\"s\":3}\n"

	t.Run("version", func(t *testing.T) {
		out, _, err := run("--version")
		if err != nil || !strings.HasPrefix(out, "clink ") {
			t.Fatalf("%q %v", out, err)
		}
	})
	t.Run("run file", func(t *testing.T) {
		out, stderr, err := run("run", script)
		if err != nil || out != want {
			t.Fatalf("got %q (%v)\n%s", out, err, stderr)
		}
		if !strings.Contains(stderr, "0 late rows dropped") {
			t.Errorf("stderr %q does not report late rows", stderr)
		}
	})
	t.Run("run -e", func(t *testing.T) {
		out, _, err := run("run", "-e", query)
		if err != nil || out != want {
			t.Fatalf("got %q (%v)", out, err)
		}
	})
	t.Run("explain text", func(t *testing.T) {
		out, _, err := run("explain", script)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "Root") || !strings.Contains(lines[2], "Aggregate") || !strings.Contains(lines[3], "Read t") {
			t.Fatalf("explain:\n%s", out)
		}
	})
	t.Run("plan file", func(t *testing.T) {
		for _, format := range []string{"binary", "json"} {
			cmd := exec.Command(bin, "explain", "--format="+format, script)
			plan, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			pf := filepath.Join(dir, "plan."+format)
			os.WriteFile(pf, plan, 0o644)
			out, stderr, err := run("run", "--plan", pf)
			if err != nil || out != want {
				t.Fatalf("%s plan: got %q (%v)\n%s", format, out, err, stderr)
			}
		}
	})
	t.Run("sql error", func(t *testing.T) {
		_, stderr, err := run("run", "-e", ddl+"SELECT nope FROM t")
		if err == nil || !strings.Contains(stderr, "line 2:8: column nope does not exist") || !strings.Contains(stderr, "       ^") {
			t.Fatalf("err %v, stderr %q", err, stderr)
		}
	})
	t.Run("empty script", func(t *testing.T) {
		_, stderr, err := run("run", "-e", "  -- nothing\n")
		if err == nil || !strings.Contains(stderr, "empty script") {
			t.Fatalf("err %v, stderr %q", err, stderr)
		}
	})
}

// TestSignalDrains sends SIGINT to a job reading a FIFO that never ends:
// it drains, exits 0, and does not flush open windows.
func TestSignalDrains(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("this platform makes no FIFO:", err)
	}
	cmd := exec.Command(bin, "run", "--linger", "5ms", "-e", "CREATE TABLE t (ts BIGINT) WITH ('connector'='file','path'='"+fifo+"','event_time_column'='ts'); SELECT window_start, COUNT(*) AS c FROM t GROUP BY TUMBLE(ts, 1000)")
	var out syncBuffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write([]byte("{\"ts\":100}\n{\"ts\":1500}\n{\"ts\":2500}\n"))
	// Wait until the two closed windows are out (a loaded machine may be
	// slow), then stop the job.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Count(out.String(), "\n") >= 2 {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("clink did not stop on SIGINT")
	}
	// Windows [0,1000) and [1000,2000) closed (watermark 2500); [2000,3000)
	// is open and must not be flushed.
	want := "{\"window_start\":0,\"c\":1}\n{\"window_start\":1000,\"c\":1}\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q\n%s", out.String(), want, stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
