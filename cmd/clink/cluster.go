package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/clink-dev/clink/bench/clusterbench"
	"github.com/clink-dev/clink/connectors/builtin"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/cluster"
	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/lineage"
)

// The cluster's roles run in this binary: `clink coordinator`, `clink
// worker`, and `clink run --coordinator` (submit in run.go).

func cmdCoordinator(args []string) int {
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6123", "Arrow Flight address for Workers and job submission")
	httpAddr := fs.String("http-addr", "127.0.0.1:8081", "HTTP API and /metrics address (off: none)")
	sqlAddr := fs.String("flight-sql-addr", "127.0.0.1:0", "Flight SQL address for clink sql and Flight SQL clients (port 0: any, logged; off: none)")
	dir := fs.String("checkpoint-dir", "", "jobs' checkpoints go to DIR/<job name> unless their SQL sets execution.checkpointing.dir; must be shared with the Workers (a shared directory, or s3://, gs://, azure://bucket/prefix)")
	spDir := fs.String("savepoint-dir", "", "savepoints go to DIR/savepoint-<job name>-<id> unless the request or the job's SQL (execution.checkpointing.savepoint-dir) names another (default: <checkpoint-dir>/savepoints); must be shared with the Workers")
	interval := fs.Duration("checkpoint-interval", time.Second, "default time between checkpoints")
	ckLog := fs.Duration("checkpoint-log-interval", time.Minute, "log a summary of each job's completed checkpoints this often (the first of each attempt, savepoints, failures and the first completion after one at once; 0: a line per checkpoint)")
	restarts := fs.Int("max-restarts", 10, "restarts of a failing job before it is FAILED")
	delay := fs.Duration("restart-delay", 200*time.Millisecond, "wait before a restart")
	beat := fs.Duration("heartbeat", 500*time.Millisecond, "the Workers' heartbeat interval; three missed beats lose a Worker")
	haDir := fs.String("ha-dir", "", "highly available Coordinators: a directory they share (POSIX file system) for the leader lease, the jobs and the job ids")
	haID := fs.String("ha-id", "", "this Coordinator's name in the lease (default: its Flight address and a random suffix)")
	leaseTTL := fs.Duration("lease", cluster.DefaultLease, "with --ha-dir: how long a leader lease lasts unrenewed")
	leaseRenew := fs.Duration("lease-renew", cluster.DefaultLeaseRenew, "with --ha-dir: how often the leader renews the lease and standbys look at it")
	var tf tlsFlags
	tf.register(fs)
	httpTLS := fs.String("http-tls", "mtls", "with --tls-cert: the HTTP API serves HTTPS requiring a client certificate of --tls-ca (mtls), HTTPS without client certificates (tls: the token authenticates), or plain HTTP (off)")
	insecure := fs.Bool("insecure", false, "listen on a non-loopback --addr, --http-addr or --flight-sql-addr without CLINK_AUTH_TOKEN or mutual TLS (anyone who reaches it can register a Worker or submit a job)")
	maxBody := fs.Int64("max-request-bytes", 4<<20, "largest HTTP request body the API reads (larger: 413)")
	var of otelFlags
	of.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := of.apply(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	if *maxBody <= 0 {
		fmt.Fprintln(os.Stderr, "error: --max-request-bytes must be positive")
		return 2
	}
	if *ckLog <= 0 {
		*ckLog = -1 // every checkpoint
	}
	if *httpTLS != "mtls" && *httpTLS != "tls" && *httpTLS != "off" {
		fmt.Fprintf(os.Stderr, "error: --http-tls %q: want mtls, tls or off\n", *httpTLS)
		return 2
	}
	tc, err := tf.load("coordinator")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	lc := openLineage(os.Stderr)
	defer lc.Close(lineage.DefaultFlushTimeout)
	c, err := cluster.NewCoordinator(cluster.CoordinatorConfig{FlightAddr: *addr, HTTPAddr: *httpAddr, FlightSQLAddr: *sqlAddr, Version: versionString(), CheckpointDir: *dir, SavepointDir: *spDir,
		TLS: tc, HTTPTLS: *httpTLS,
		Token: os.Getenv("CLINK_AUTH_TOKEN"), Heartbeat: *beat, MaxRestarts: *restarts, RestartDelay: *delay,
		CheckpointInterval: *interval, CheckpointLogInterval: *ckLog, Connectors: builtin.Registry(), Log: os.Stderr,
		HADir: *haDir, HAID: *haID, LeaseTTL: *leaseTTL, LeaseRenew: *leaseRenew,
		Insecure: *insecure, MaxBodyBytes: *maxBody, OTel: true, LogFormat: of.logFormat, Lineage: lc})
	return serve(c, err)
}

// tlsFlags are --tls-cert, --tls-key, --tls-ca (mutual TLS with the
// cluster's other processes) and --tls-server-name, defaulting to
// CLINK_TLS_CERT, CLINK_TLS_KEY, CLINK_TLS_CA and CLINK_TLS_SERVER_NAME.
type tlsFlags struct{ cert, key, ca, serverName string }

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", os.Getenv("CLINK_TLS_CERT"), "PEM certificate (chain) of this process for mutual TLS with the cluster (with --tls-key and --tls-ca; reloaded when the file changes; env CLINK_TLS_CERT)")
	fs.StringVar(&f.key, "tls-key", os.Getenv("CLINK_TLS_KEY"), "PEM private key of --tls-cert (env CLINK_TLS_KEY)")
	fs.StringVar(&f.ca, "tls-ca", os.Getenv("CLINK_TLS_CA"), "PEM CA certificates peers' certificates must chain to (env CLINK_TLS_CA)")
	fs.StringVar(&f.serverName, "tls-server-name", os.Getenv("CLINK_TLS_SERVER_NAME"), "verify servers' certificates for this name instead of the host dialed (env CLINK_TLS_SERVER_NAME)")
}

// load is the flags' TLS configuration (nil without files); role
// prefixes its log lines.
func (f *tlsFlags) load(role string) (*tlsconf.Config, error) {
	return tlsconf.Load(tlsconf.Options{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca, ServerName: f.serverName,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+" "+role+": "+format+"\n", args...)
		}})
}

// coordinatorFlags are --coordinator HOST:PORT and its Flink-style
// spelling --coordinator-host H --coordinator-port P (either alone: host
// 127.0.0.1, port 6123), and the TLS flags to reach it with.
type coordinatorFlags struct {
	addr, host string
	port       int
	tls        tlsFlags
	// opts are the Flight options of the TLS flags, set by address.
	opts []cflight.Option
}

func (f *coordinatorFlags) register(fs *flag.FlagSet, addrDefault, usage string) {
	fs.StringVar(&f.addr, "coordinator", addrDefault, usage)
	fs.StringVar(&f.host, "coordinator-host", "", "the Coordinator's host, with or instead of --coordinator-port (default 127.0.0.1)")
	fs.IntVar(&f.port, "coordinator-port", 0, "the Coordinator's port, with or instead of --coordinator-host (default 6123)")
	f.tls.register(fs)
}

// address is the Coordinator's address the flags give ("" when none
// does); with one, it loads the TLS flags into f.opts.
func (f *coordinatorFlags) address(fs *flag.FlagSet) (string, error) {
	addr, err := f.hostPort(fs)
	if err != nil || addr == "" {
		return addr, err
	}
	tc, err := f.tls.load("clink")
	if err != nil {
		return "", err
	}
	f.opts = []cflight.Option{cflight.WithTLS(tc)}
	return addr, nil
}

func (f *coordinatorFlags) hostPort(fs *flag.FlagSet) (string, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["coordinator-host"] && !set["coordinator-port"] {
		return f.addr, nil
	}
	if set["coordinator"] {
		return "", fmt.Errorf("give --coordinator HOST:PORT or --coordinator-host/--coordinator-port, not both")
	}
	host, port := f.host, f.port
	if !set["coordinator-host"] {
		host = "127.0.0.1"
	}
	if !set["coordinator-port"] {
		port = 6123
	}
	if host == "" {
		return "", fmt.Errorf("--coordinator-host is empty")
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("--coordinator-port %d: want 1 to 65535", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// serve runs a cluster role until SIGINT or SIGTERM.
func serve(role interface{ Run(context.Context) error }, err error) int {
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = role.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func cmdWorker(args []string) int {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var coord coordinatorFlags
	coord.register(fs, "127.0.0.1:6123", "the Coordinator's Flight address HOST:PORT (its --addr, port 6123; not the HTTP API's)")
	addr := fs.String("addr", "127.0.0.1:0", "address for control calls and shuffle streams (port 0: any)")
	slots := fs.Int("slots", 1, "subtasks of each job this Worker runs at once")
	id := fs.String("id", "", "the Worker's id (default: a random one)")
	coords := fs.String("coordinators", "", "highly available Coordinators: their Flight addresses, comma-separated (the Worker registers with the leader)")
	haDir := fs.String("ha-dir", "", "the Coordinators' --ha-dir, if this Worker sees it: the leader's address is read there")
	fence := fs.Duration("fence-timeout", 0, "cancel the tasks when no leader answered for this long (default: 3 heartbeats + 5s)")
	httpAddr := fs.String("http-addr", "127.0.0.1:0", "/metrics, /healthz and /readyz (port 0: any, logged; off: none)")
	insecure := fs.Bool("insecure", false, "listen on a non-loopback --addr without CLINK_AUTH_TOKEN or mutual TLS (anyone who reaches it can deploy subtasks)")
	var of otelFlags
	of.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := of.apply(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	caddr, err := coord.address(fs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2
	}
	var list []string
	for _, a := range strings.Split(*coords, ",") {
		if a = strings.TrimSpace(a); a != "" {
			list = append(list, a)
		}
	}
	if len(list) > 0 || *haDir != "" {
		set := false
		fs.Visit(func(fl *flag.Flag) {
			set = set || fl.Name == "coordinator" || fl.Name == "coordinator-host" || fl.Name == "coordinator-port"
		})
		if !set {
			caddr = ""
		}
	}
	token, tc := os.Getenv("CLINK_AUTH_TOKEN"), cflight.TLSOf(coord.opts...)
	if tc == nil { // with mutual TLS the certificates authenticate the peers
		if err := cluster.CheckBinds(os.Stderr, token, *insecure, *addr); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			return 1
		}
	}
	w, err := cluster.NewWorker(cluster.WorkerConfig{ID: *id, Coordinator: caddr, Coordinators: list, HADir: *haDir, FenceTimeout: *fence, HTTPAddr: *httpAddr,
		Addr: *addr, Slots: *slots, TLS: tc, Token: token, Connectors: builtin.Registry(), Stdout: os.Stdout, Log: os.Stderr, OTel: true, LogFormat: of.logFormat})
	return serve(w, err)
}

func cmdBenchShuffle(args []string) int {
	fs := flag.NewFlagSet("bench shuffle", flag.ContinueOnError)
	n := fs.Int64("n", 5_000_000, "readings")
	sensors := fs.Int("sensors", 1000, "sensors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return inBenchDir("shuffle", func(self, dir string) error {
		r, err := clusterbench.RunShuffle(context.Background(), self, dir, *n, *sensors)
		if err == nil {
			clusterbench.FormatShuffle(os.Stdout, r, *sensors)
		}
		return err
	})
}

// inBenchDir runs a cluster bench with this binary and a temporary
// directory (removed after); the exit code.
func inBenchDir(name string, run func(self, dir string) error) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "clink-bench-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := run(self, dir); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func cmdBenchOTel(args []string) int {
	fs := flag.NewFlagSet("bench otel", flag.ContinueOnError)
	n := fs.Int64("n", 10_000_000, "readings")
	sensors := fs.Int("sensors", 1000, "sensors")
	rounds := fs.Int("rounds", 3, "runs with OpenTelemetry off, and as many on, alternating")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return inBenchDir("otel", func(self, dir string) error {
		r, err := clusterbench.RunOTel(context.Background(), self, dir, *n, *sensors, *rounds)
		if err == nil {
			clusterbench.FormatOTel(os.Stdout, r, *sensors)
		}
		return err
	})
}

func cmdBenchRecovery(args []string) int {
	fs := flag.NewFlagSet("bench recovery", flag.ContinueOnError)
	runs := fs.Int("runs", 5, "Worker kills")
	rate := fs.Int("rate", 5000, "rows per second into the source topic")
	par := fs.Int("parallelism", 2, "the job's parallelism (1 or 2; three Workers of one slot)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	if *par < 1 || *par > 2 {
		fmt.Fprintln(os.Stderr, "error: -parallelism must be 1 or 2")
		return 2
	}
	rs, err := clusterbench.RunRecovery(context.Background(), self, *runs, *rate, *par)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	clusterbench.FormatRecovery(os.Stdout, rs, *rate, *par)
	return 0
}
