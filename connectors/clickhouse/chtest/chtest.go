// Package chtest starts a private ClickHouse server for tests: the
// installed clickhouse-server binary (Debian's clickhouse-server package,
// or the single `clickhouse` binary's `server` mode; CLINK_CLICKHOUSE_BINARY
// names another), listening on
// 127.0.0.1 only, on free ports, with its data, logs and configuration in
// a temporary directory, as the current user. Without a binary the test is
// skipped, unless CLINK_REQUIRE_CLICKHOUSE=1 (CI) makes it fail.
package chtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Users the server knows: "default" without a password, and User with
// Password.
const (
	User     = "clink"
	Password = "clink-test-password"
)

// Server is a running test server.
type Server struct {
	Host     string // 127.0.0.1
	HTTPPort int
	TCPPort  int
	// HTTPAddr is Host:HTTPPort.
	HTTPAddr string
	// Dir holds config.xml, users.xml, the data and the logs.
	Dir string

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Config adjusts the server.
type Config struct {
	// Timezone is the server's time zone (default UTC). A test of time
	// values sets another so that a zone-dependent encoding shows.
	Timezone string
}

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *Server { return StartWith(t, Config{}) }

// StartWith starts a server with cfg.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin, args := binary()
	if bin == "" {
		msg := "ClickHouse: no clickhouse-server (or clickhouse) binary on PATH, in /usr/sbin or /usr/bin, or at $CLINK_CLICKHOUSE_BINARY (install: .ci/install-deps.sh, or apt-get install clickhouse-server)"
		if os.Getenv("CLINK_REQUIRE_CLICKHOUSE") == "1" {
			t.Fatalf("%s; required (CLINK_REQUIRE_CLICKHOUSE=1)", msg)
		}
		t.Skip(msg)
	}
	if cfg.Timezone == "" {
		cfg.Timezone = "UTC"
	}
	dir := t.TempDir()
	var lastErr error
	// Free ports are found by listening and closing, so another process
	// may take one before the server binds it: try again on other ports.
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(bin, args, dir, cfg, attempt)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		lastErr = err
	}
	t.Fatalf("starting ClickHouse: %v", lastErr)
	return nil
}

// binary finds the server: $CLINK_CLICKHOUSE_BINARY when set (a
// clickhouse-server, or the single clickhouse binary, run as `clickhouse
// server`), else clickhouse-server, else clickhouse server.
func binary() (string, []string) {
	if p := os.Getenv("CLINK_CLICKHOUSE_BINARY"); p != "" {
		p, err := exec.LookPath(p)
		if err != nil {
			return "", nil
		}
		if filepath.Base(p) == "clickhouse" {
			return p, []string{"server"}
		}
		return p, nil
	}
	for _, name := range []string{"clickhouse-server", "/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	for _, name := range []string{"clickhouse", "/usr/bin/clickhouse"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, []string{"server"}
		}
	}
	return "", nil
}

func start(bin string, args []string, base string, cfg Config, attempt int) (*Server, error) {
	dir := filepath.Join(base, "run"+strconv.Itoa(attempt))
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", HTTPPort: ports[0], TCPPort: ports[1], Dir: dir, done: make(chan struct{})}
	s.HTTPAddr = net.JoinHostPort(s.Host, strconv.Itoa(s.HTTPPort))
	if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(s.config(cfg)), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(usersXML), 0o644); err != nil {
		return nil, err
	}
	out, err := os.Create(filepath.Join(dir, "log", "stdout.log"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	s.cmd = exec.Command(bin, append(args, "--config-file="+filepath.Join(dir, "config.xml"))...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = out, out
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w\n%s", err, s.logTail())
	}
	return s, nil
}

// config is a minimal server configuration: loopback only, no
// interserver port, everything under Dir. ClickHouse runs as whoever
// starts it (root included) when it is not told to switch users.
func (s *Server) config(cfg Config) string {
	p := func(d string) string { return filepath.Join(s.Dir, d) + "/" }
	return `<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>` + filepath.Join(s.Dir, "log", "server.log") + `</log>
        <errorlog>` + filepath.Join(s.Dir, "log", "server.err.log") + `</errorlog>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>` + strconv.Itoa(s.HTTPPort) + `</http_port>
    <tcp_port>` + strconv.Itoa(s.TCPPort) + `</tcp_port>
    <path>` + p("data") + `</path>
    <tmp_path>` + p("tmp") + `</tmp_path>
    <user_files_path>` + p("user_files") + `</user_files_path>
    <format_schema_path>` + p("format_schemas") + `</format_schema_path>
    <users_config>` + filepath.Join(s.Dir, "users.xml") + `</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>` + cfg.Timezone + `</timezone>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`
}

const usersXML = `<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <` + User + `>
            <password>` + Password + `</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </` + User + `>
    </users>
    <quotas><default></default></quotas>
</yandex>
`

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitReady polls GET /ping until it answers "Ok.".
func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	cl := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("clickhouse-server exited: %v", s.cmd.ProcessState)
		default:
		}
		resp, err := cl.Get("http://" + s.HTTPAddr + "/ping")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(b)) == "Ok." {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("clickhouse-server did not answer /ping on %s within %s", s.HTTPAddr, limit)
}

// stop kills the server: its data is thrown away, so it need not shut
// down cleanly (which takes ClickHouse 18.16 about two seconds).
func (s *Server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

// logTail is the end of the server's error log and output, for failures.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, f := range []string{"server.err.log", "stdout.log"} {
		data, err := os.ReadFile(filepath.Join(s.Dir, "log", f))
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		fmt.Fprintf(&b, "--- %s:\n%s\n", f, data)
	}
	return b.String()
}

// Query runs sql as the default user and returns the answer; a non-200
// answer is an error with ClickHouse's message.
func (s *Server) Query(sql string) (string, error) {
	resp, err := http.Post("http://"+s.HTTPAddr+"/?query="+url.QueryEscape(sql), "text/plain", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ClickHouse: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// MustQuery runs sql and fails t on an error.
func (s *Server) MustQuery(t testing.TB, sql string) string {
	t.Helper()
	out, err := s.Query(sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}
