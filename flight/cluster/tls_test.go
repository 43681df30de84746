package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/proto"

	"github.com/clink-dev/clink/connectors/builtin"
	cflight "github.com/clink-dev/clink/flight"
	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/flight/tlsconf/tlstest"
)

// tlsFixture is a test CA, an untrusted one, and a directory for the
// files of the certificates they sign (made by each test, never
// committed).
type tlsFixture struct {
	dir       string
	ca, other *tlstest.CA
	log       *syncBuf
}

func newTLSFixture(t *testing.T) *tlsFixture {
	return &tlsFixture{dir: t.TempDir(), ca: tlstest.NewCA(t, "clink test CA"), other: tlstest.NewCA(t, "untrusted CA"), log: &syncBuf{}}
}

// config loads the files of a certificate of ca for name (valid for
// 127.0.0.1 and localhost), reloaded every 20 ms.
func (f *tlsFixture) config(t *testing.T, ca *tlstest.CA, name string) (*tlsconf.Config, tlsconf.Options) {
	t.Helper()
	o := ca.Files(t, f.dir, name, name, "127.0.0.1", "localhost")
	o.CAFile = filepath.Join(f.dir, "ca.crt") // every process trusts the right CA
	tlstest.Write(t, o.CAFile, f.ca.PEM)
	o.Reload = 20 * time.Millisecond
	o.Logf = func(format string, args ...any) { fmt.Fprintf(f.log, name+": "+format+"\n", args...) }
	c, err := tlsconf.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	return c, o
}

// addTLSWorker is addWorker with tc (nil: clear text).
func (tc *testCluster) addTLSWorker(t *testing.T, id string, slots int, tlsc *tlsconf.Config) {
	out := &syncBuf{}
	w, err := NewWorker(WorkerConfig{ID: id, Coordinator: tc.c.FlightAddr(), Slots: slots, TLS: tlsc,
		Connectors: builtin.Registry(), Stdout: out, Log: tc.log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	tc.workers = append(tc.workers, w)
	tc.outs = append(tc.outs, out)
	tc.stop = append(tc.stop, func() { cancel(); <-done })
}

func (tc *testCluster) registered() []string {
	tc.c.mu.Lock()
	defer tc.c.mu.Unlock()
	var ids []string
	for id := range tc.c.workers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (tc *testCluster) waitWorkers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(tc.registered()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("workers %v, want %d", tc.registered(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startTLSCluster is a Coordinator and two Workers of one slot over
// mutual TLS.
func startTLSCluster(t *testing.T, f *tlsFixture, cfg CoordinatorConfig) (*testCluster, tlsconf.Options) {
	var co tlsconf.Options
	cfg.TLS, co = f.config(t, f.ca, "coordinator")
	tc := startCluster(t, 0, 0, cfg)
	for _, id := range []string{"w1", "w2"} {
		wc, _ := f.config(t, f.ca, id)
		tc.addTLSWorker(t, id, 1, wc)
	}
	tc.waitWorkers(t, 2)
	return tc, co
}

// windowJob is a keyed window aggregate at parallelism 2 over a file:
// on two Workers of one slot the keyed exchange crosses them (the Flight
// shuffle).
func windowJob(t *testing.T, dir string) string {
	in := filepath.Join(dir, "in.jsonl")
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%7, i*100))
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return `CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector'='file', 'path'='` + in + `', 'event_time_column'='ts');
CREATE TABLE o (k STRING, window_start BIGINT, n BIGINT) WITH ('connector'='print');
INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k`
}

// TestTLSCluster: a Coordinator and two Workers over mutual TLS run a
// keyed job whose shuffle crosses the Workers, with the rows of the same
// job on a clear-text cluster; a client submits with its certificate,
// to the Flight port and through the HTTPS API's port.
func TestTLSCluster(t *testing.T) {
	f := newTLSFixture(t)
	tc, _ := startTLSCluster(t, f, CoordinatorConfig{MaxRestarts: -1})
	plan := compile(t, windowJob(t, t.TempDir()))
	rows, d, err := tc.runPlan(t, plan, 2, 7)
	if err != nil || d.State != StateFinished {
		t.Fatalf("over TLS: %v %s %s", err, d.State, d.Failure)
	}
	on := map[string]bool{}
	for _, task := range d.Tasks {
		on[task.Worker] = true
	}
	if len(on) != 2 {
		t.Fatalf("subtasks on %v, want both Workers (the shuffle between them)", on)
	}
	plain := startCluster(t, 2, 1, CoordinatorConfig{MaxRestarts: -1})
	want, pd, err := plain.runPlan(t, plan, 2, 7)
	if err != nil || pd.State != StateFinished {
		t.Fatalf("clear text: %v %s", err, pd.State)
	}
	if len(rows) == 0 || !slices.Equal(rows, want) {
		t.Fatalf("over TLS %d rows:\n%s\nclear text %d rows:\n%s", len(rows), strings.Join(rows, "\n"), len(want), strings.Join(want, "\n"))
	}
	cc, _ := f.config(t, f.ca, "client")
	data := marshalPlan(t, plan)
	ctx := context.Background()
	if resp, err := Submit(ctx, tc.c.FlightAddr(), "", &SubmitRequest{Name: "flight", Plan: data}, cflight.WithTLS(cc)); err != nil || resp.Via != "" {
		t.Fatalf("submit over TLS: %+v %v", resp, err)
	}
	if resp, err := Submit(ctx, tc.c.HTTPAddr(), "", &SubmitRequest{Name: "https", Plan: data}, cflight.WithTLS(cc)); err != nil || resp.Via != tc.c.FlightAddr() {
		t.Fatalf("submit through the HTTPS API's port: %+v %v", resp, err)
	}
}

// TestTLSRefusal (the mTLS refusal test): a Worker in clear text and one
// whose certificate an untrusted CA signed are refused at the handshake
// and never register, each logging that it is a TLS problem; a
// clear-text client and a client of the untrusted CA cannot submit.
func TestTLSRefusal(t *testing.T) {
	f := newTLSFixture(t)
	tc, _ := startTLSCluster(t, f, CoordinatorConfig{MaxRestarts: -1})
	tc.addTLSWorker(t, "plain", 1, nil)
	bad, _ := f.config(t, f.other, "intruder")
	tc.addTLSWorker(t, "intruder", 1, bad)
	for _, want := range []string{
		"cannot register with " + tc.c.FlightAddr(),
		"(does the server require TLS? give --tls-cert, --tls-key and --tls-ca) (retrying)",
		"TLS handshake failed, a certificate problem",
	} {
		tc.waitLog(t, want, 10*time.Second)
	}
	time.Sleep(200 * time.Millisecond)
	if got := tc.registered(); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Fatalf("registered %v: a Worker without a valid certificate got in", got)
	}
	if !strings.Contains(f.log.String(), "coordinator: flight: TLS handshake from") {
		t.Fatalf("the Coordinator did not log the refused handshakes:\n%s", f.log.String())
	}
	data := marshalPlan(t, compile(t, windowJob(t, t.TempDir())))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Submit(ctx, tc.c.FlightAddr(), "", &SubmitRequest{Name: "x", Plan: data}); err == nil {
		t.Fatal("a clear-text client submitted")
	} else {
		t.Logf("clear-text client: %v", err)
	}
	_, err := Submit(ctx, tc.c.FlightAddr(), "", &SubmitRequest{Name: "x", Plan: data}, cflight.WithTLS(bad))
	if err == nil || !strings.Contains(err.Error(), "TLS handshake failed") {
		t.Fatalf("a client of the untrusted CA: %v", err)
	}
	t.Logf("untrusted client: %v", err)
}

// peerCert is the certificate the server at addr presents.
func peerCert(t *testing.T, addr string, c *tlsconf.Config) *x509.Certificate {
	t.Helper()
	cfg := c.Client("")
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

// TestTLSReload: the Coordinator's certificate files replaced by a new
// pair, new connections get the new certificate while the Coordinator
// and its Workers run on (a job runs after it); files that do not load
// keep the pair in use, and are logged.
func TestTLSReload(t *testing.T) {
	f := newTLSFixture(t)
	tc, co := startTLSCluster(t, f, CoordinatorConfig{MaxRestarts: -1})
	cc, _ := f.config(t, f.ca, "client")
	addr := tc.c.FlightAddr()
	if cn := peerCert(t, addr, cc).Subject.CommonName; cn != "coordinator" {
		t.Fatalf("first certificate %q", cn)
	}
	// A half-written pair: the new certificate, the old key.
	cert, key := f.ca.Issue(t, "coordinator-2", "127.0.0.1")
	tlstest.Write(t, co.CertFile, cert)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(f.log.String(), "coordinator: TLS: keeping the previous certificate") {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the refused files:\n%s", f.log.String())
		}
		time.Sleep(10 * time.Millisecond)
		peerCert(t, addr, cc) // a handshake checks the files
	}
	if cn := peerCert(t, addr, cc).Subject.CommonName; cn != "coordinator" {
		t.Fatalf("with a mismatched pair: %q", cn)
	}
	tlstest.Write(t, co.KeyFile, key)
	for peerCert(t, addr, cc).Subject.CommonName != "coordinator-2" {
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate was not loaded:\n%s", f.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(f.log.String(), "loaded a new certificate") {
		t.Fatalf("no log of the reload:\n%s", f.log.String())
	}
	// The Workers registered before the change still heartbeat, and a
	// job runs on both (new connections from the Coordinator to them and
	// between them).
	rows, d, err := tc.runPlan(t, compile(t, windowJob(t, t.TempDir())), 2, 7)
	if err != nil || d.State != StateFinished || len(rows) == 0 {
		t.Fatalf("after the reload: %v %s %s, %d rows", err, d.State, d.Failure, len(rows))
	}
	if got := tc.registered(); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Fatalf("workers after the reload: %v", got)
	}
}

// TestTLSHTTPS: with TLS the HTTP API is HTTPS requiring a client
// certificate ("mtls"), or not requiring one ("tls"); plain HTTP is
// answered 400.
func TestTLSHTTPS(t *testing.T) {
	f := newTLSFixture(t)
	cc, _ := f.config(t, f.ca, "client")
	for _, mode := range []string{"", "tls"} {
		coord, _ := f.config(t, f.ca, "coordinator"+mode)
		tc := startCluster(t, 0, 0, CoordinatorConfig{TLS: coord, HTTPTLS: mode})
		base := tc.c.HTTPAddr() + "/api/v1/overview"
		get := func(c *http.Client, url string) (int, string, error) {
			resp, err := c.Get(url)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b), nil
		}
		withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: cc.Client("")}}
		if code, body, err := get(withCert, "https://"+base); err != nil || code != http.StatusOK {
			t.Fatalf("%q: HTTPS with a client certificate: %d %s %v", mode, code, body, err)
		}
		noCert := cc.Client("")
		noCert.GetClientCertificate = nil
		code, _, err := get(&http.Client{Transport: &http.Transport{TLSClientConfig: noCert}}, "https://"+base)
		if mode == "" && err == nil {
			t.Fatalf("mtls: HTTPS without a client certificate answered %d", code)
		}
		if mode == "tls" && (err != nil || code != http.StatusOK) {
			t.Fatalf("tls: HTTPS without a client certificate: %d %v", code, err)
		}
		if code, body, err := get(http.DefaultClient, "http://"+base); err != nil || code != http.StatusBadRequest || !strings.Contains(body, "HTTPS") {
			t.Fatalf("%q: plain HTTP: %d %q %v", mode, code, body, err)
		}
	}
}

func marshalPlan(t *testing.T, plan *pb.Plan) []byte {
	t.Helper()
	data, err := proto.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
