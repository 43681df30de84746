// Package ostest starts real object-store servers on 127.0.0.1 for tests
// (no mocks): MinIO for S3, fake-gcs-server for GCS and Azurite for Azure
// Blob, each on free ports with a temporary data directory, stopped when
// the test ends. .ci/install-objectstores.sh installs them into
// $CLINK_TOOLS_CACHE (default ~/.cache/clink-tools); they are looked up
// there, then on PATH. A test whose server is missing is skipped, unless
// CLINK_REQUIRE_OBJECTSTORES=1 (CI), which fails it.
//
// Each server comes with a Client built on the store's own SDK, to create
// buckets and to list and read what a sink published.
package ostest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Versions of the servers, as .ci/install-objectstores.sh installs them.
const (
	MinIOVersion   = "v0.0.0-20260212201848-7aac2a2c5b7c"
	FakeGCSVersion = "v1.56.1"
	AzuriteVersion = "3.37.0"
)

// Server is a running store: the WITH options a file-connector table
// needs to reach it (credentials as env:// references, their variables
// set in this process by the helper: Env lists them for child processes),
// and a Client.
type Server struct {
	Scheme  string // "s3", "gs", "azure"
	Options map[string]string
	Env     []string
	Client  Client
}

// With renders s.Options as SQL WITH entries ("'k' = 'v', ...").
func (s *Server) With() string {
	keys := make([]string, 0, len(s.Options))
	for k := range s.Options {
		keys = append(keys, k)
	}
	sortStrings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "'%s' = '%s'", k, s.Options[k])
	}
	return b.String()
}

// URL is the path of prefix in bucket on this store.
func (s *Server) URL(bucket, prefix string) string { return s.Scheme + "://" + bucket + "/" + prefix }

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func cacheDir() string {
	if d := os.Getenv("CLINK_TOOLS_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "clink-tools")
}

// find returns the server binary of component (MinIO, ...): cached
// (relative path rel under the cache directory), else name on PATH.
// Without it the test is skipped, or failed under
// CLINK_REQUIRE_OBJECTSTORES=1.
func find(t testing.TB, component, rel, name string) string {
	t.Helper()
	if d := cacheDir(); d != "" {
		p := filepath.Join(d, rel)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s: %s not in %s or on PATH (install: .ci/install-deps.sh, or .ci/install-objectstores.sh)", component, name, filepath.Join(cacheDir(), rel))
	if os.Getenv("CLINK_REQUIRE_OBJECTSTORES") == "1" {
		t.Fatalf("%s; required (CLINK_REQUIRE_OBJECTSTORES=1)", msg)
	}
	t.Skip(msg)
	return ""
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logBuffer keeps a server's output for a failure message.
type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.b) < 1<<20 {
		l.b = append(l.b, p...)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// start runs a server and polls ready (an HTTP URL that answers once the
// server serves; any status counts unless okOnly) for up to 60 s.
func start(t testing.TB, name string, cmd *exec.Cmd, ready string, okOnly bool) {
	t.Helper()
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", name, logs.String())
		default:
		}
		resp, err := client.Get(ready)
		if err == nil {
			resp.Body.Close()
			if !okOnly || resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s after 60 s (%v):\n%s", name, ready, err, logs.String())
		}
	}
}

// setEnv sets a variable for this test (and lists it for children).
func (s *Server) setEnv(t testing.TB, k, v string) {
	t.Setenv(k, v)
	s.Env = append(s.Env, k+"="+v)
}
