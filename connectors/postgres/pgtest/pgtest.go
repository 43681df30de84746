// Package pgtest starts a private PostgreSQL server for tests: the
// installed server binaries (Debian's postgresql package; CLINK_POSTGRES_BIN
// names another bin directory), a cluster made by initdb in a temporary
// directory, listening on 127.0.0.1 only, on a free port, with its Unix
// socket in that directory too, and stopped when the test ends. initdb and
// postgres refuse to run as root: as root the server runs as the
// 'postgres' user (or 'nobody'), which is given the directory.
//
// Without the binaries the test is skipped, unless CLINK_REQUIRE_POSTGRES=1
// (CI) makes it fail.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The superuser initdb creates; TCP connections authenticate with its
// password (scram-sha-256), connections over the socket are trusted.
const (
	User     = "clink"
	Password = "clink-test-password"
)

// Server is a running test server.
type Server struct {
	Host string // 127.0.0.1
	Port int
	// Dir holds the data directory (data), the socket and the server log.
	Dir string
	// Bin is the directory of the server's binaries (psql is there too).
	Bin string
	// Version is the server_version_num, e.g. 150014.
	Version int

	cmd  *exec.Cmd
	done chan struct{}
}

// Config adjusts the server.
type Config struct {
	// MaxPreparedTransactions is the server's max_prepared_transactions;
	// 0 means the default of 20, a negative value turns prepared
	// transactions off (0 on the server).
	MaxPreparedTransactions int
}

// ErrNoServer is Launch's error when the binaries are missing.
var ErrNoServer = errors.New("PostgreSQL: no server binaries (initdb, postgres, psql) in $CLINK_POSTGRES_BIN, /usr/lib/postgresql/*/bin or on PATH (install: .ci/install-deps.sh, or apt-get install postgresql)")

// Start starts a server for t and stops it when t ends.
func Start(t testing.TB) *Server { return StartWith(t, Config{}) }

// StartWith starts a server with cfg for t and stops it when t ends.
func StartWith(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := Launch(cfg)
	if err != nil {
		SkipOrFail(t, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// SkipOrFail ends t after Launch failed: a skip when the binaries are
// missing (unless CLINK_REQUIRE_POSTGRES=1), else a failure.
func SkipOrFail(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoServer) {
		if os.Getenv("CLINK_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("%v; required (CLINK_REQUIRE_POSTGRES=1)", err)
		}
		t.Skip(err)
	}
	t.Fatalf("starting PostgreSQL: %v", err)
}

// Launch starts a server that the caller stops (Stop), for servers shared
// by the tests of a package. Without binaries it returns ErrNoServer.
func Launch(cfg Config) (*Server, error) {
	bin := BinDir()
	if bin == "" {
		return nil, ErrNoServer
	}
	return start(bin, cfg)
}

// BinDir finds the directory holding initdb and postgres, or "".
func BinDir() string {
	ok := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres", "psql"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("CLINK_POSTGRES_BIN"); d != "" {
		if ok(d) {
			return d
		}
		return ""
	}
	// Debian installs the server outside PATH, one directory per major
	// version: take the newest.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if ok(d) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p)
	}
	return ""
}

// runAs is the user the server's processes run as: the current one, or
// with root an unprivileged account (initdb and postgres refuse root).
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root and there is no 'postgres' or 'nobody' user to run the server as")
}

func start(bin string, cfg Config) (*Server, error) {
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	// Not t.TempDir(): the server's user must be able to reach it, and
	// a test's temporary directory is private to root.
	dir, err := os.MkdirTemp("", "clink-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", Dir: dir, Bin: bin, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	pw := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(pw, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	// initdb -D dir/data -U clink --pwfile dir/pwfile --auth-local=trust
	//   --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", User, "--pwfile", pw,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	maxPrepared := cfg.MaxPreparedTransactions
	if maxPrepared == 0 {
		maxPrepared = 20
	} else if maxPrepared < 0 {
		maxPrepared = 0
	}
	// The port is found by listening and closing, so another process may
	// take it before the server binds it: try again on another.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s.Port = port
		s.done = make(chan struct{})
		if lastErr = s.run(cred, maxPrepared); lastErr == nil {
			ok = true
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

// run starts postgres and waits until it accepts connections:
//
//	postgres -D dir/data -p PORT -k dir -c listen_addresses=127.0.0.1
//	  -c max_prepared_transactions=N -c fsync=off ...
func (s *Server) run(cred *syscall.Credential, maxPrepared int) error {
	logPath := filepath.Join(s.Dir, "server.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	s.cmd = exec.Command(filepath.Join(s.Bin, "postgres"), "-D", s.dataDir(), "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_prepared_transactions="+strconv.Itoa(maxPrepared),
		"-c", "max_connections=100",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	s.cmd.Dir = s.Dir
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// Pdeathsig: the server dies with the test binary (a timeout panic, a
	// kill), so none outlives its test. Go sets it after the credentials.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	done := s.done
	go func() { _ = s.cmd.Wait(); close(done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.kill()
		return fmt.Errorf("%w\n%s", err, s.logTail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		s.kill()
		return err
	}
	defer c.Close(ctx)
	var v string
	if err := c.QueryRow(ctx, "SHOW server_version_num").Scan(&v); err != nil {
		s.kill()
		return err
	}
	s.Version, _ = strconv.Atoi(v)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls with a connection attempt until the server answers.
func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited: %v", s.cmd.ProcessState)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		last = err
		time.Sleep(30 * time.Millisecond)
	}
	return fmt.Errorf("postgres did not accept connections on %s:%d within %s: %v", s.Host, s.Port, limit, last)
}

// Stop shuts the server down (fast shutdown: SIGINT, then SIGKILL after
// ten seconds) and removes its directory. Stopping twice is harmless.
func (s *Server) Stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.kill()
		}
	}
	os.RemoveAll(s.Dir)
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

// logTail is the end of the server log, for failures.
func (s *Server) logTail() string {
	data, err := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	if err != nil {
		return ""
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return "--- server.log:\n" + string(data)
}

// Addr is host:port.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// URL is a connection string for database db as User, with the password.
func (s *Server) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(User, Password), Host: s.Addr(), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates database name and returns its URL.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	s.Exec(t, "postgres", "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return s.URL(name)
}

// Connect opens a connection to database db, closed when t ends.
func (s *Server) Connect(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatalf("connecting to %s/%s: %v", s.Addr(), db, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Exec runs sql (one or more statements) in database db and fails t on an
// error.
func (s *Server) Exec(t testing.TB, db, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL(db))
	if err != nil {
		t.Fatalf("connecting to %s/%s: %v", s.Addr(), db, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Psql runs PostgreSQL's own client on database db with the given
// arguments (e.g. "-At", "-c", "SELECT ...") and returns its output.
func (s *Server) Psql(db string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.Bin, "psql"), append([]string{"-X", "-v", "ON_ERROR_STOP=1", "-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", User, "-d", db}, args...)...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+Password, "PGCONNECT_TIMEOUT=10")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("psql %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", err
	}
	return string(out), nil
}
