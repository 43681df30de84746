package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/flight/tlsconf/tlstest"
)

// TestClusterTLS: `clink coordinator` and `clink worker` with the TLS
// flags (the Worker through CLINK_TLS_*), `clink run --coordinator`
// with them (to the Flight port and to the HTTPS API's port) and `clink
// savepoint`; without them a client is refused, saying TLS.
func TestClusterTLS(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "clink test CA")
	co := ca.Files(t, dir, "coordinator", "coordinator", "127.0.0.1")
	wo := ca.Files(t, dir, "worker", "worker", "127.0.0.1")
	cl := ca.Files(t, dir, "client", "client")
	log := &syncBuffer{}
	coord, httpAddr := startCoordinator(t, bin, log, "--tls-cert", co.CertFile, "--tls-key", co.KeyFile, "--tls-ca", co.CAFile,
		"--checkpoint-dir", filepath.Join(dir, "ck"))
	w := exec.Command(bin, "worker", "--coordinator", coord, "--id", "w1", "--slots", "2")
	w.Env = append(os.Environ(), "CLINK_TLS_CERT="+wo.CertFile, "CLINK_TLS_KEY="+wo.KeyFile, "CLINK_TLS_CA="+wo.CAFile)
	w.Stdout, w.Stderr = log, log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Process.Kill(); w.Wait() })
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"k":"a","ts":1}`+"\n"+`{"k":"b","ts":2}`+"\n"), 0o644)
	sqlFile := filepath.Join(dir, "copy.sql")
	os.WriteFile(sqlFile, []byte(`CREATE TABLE t (k STRING, ts BIGINT) WITH ('connector' = 'file', 'path' = '`+in+`', 'event_time_column' = 'ts');
CREATE TABLE o (k STRING, window_start BIGINT, n BIGINT) WITH ('connector' = 'file', 'path' = '`+filepath.Join(dir, "out")+`');
INSERT INTO o SELECT k, window_start, COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '1' SECOND), k;`), 0o644)
	tlsArgs := []string{"--tls-cert", cl.CertFile, "--tls-key", cl.KeyFile, "--tls-ca", cl.CAFile}
	for _, addr := range []string{coord, httpAddr} {
		out := clink(t, bin, "", append([]string{"run", sqlFile, "--coordinator", addr, "--parallelism", "2"}, tlsArgs...)...)
		if !jobIDRE.MatchString(out) {
			t.Fatalf("run --coordinator %s: %q", addr, out)
		}
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(log.String(), "job_id=2 FINISHED"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not finish over TLS:\n%s", log.String())
		}
	}
	// A savepoint of a finished job is refused by the Coordinator: it
	// answered over TLS.
	out, _ := exec.Command(bin, append([]string{"savepoint", "1", "--coordinator", coord}, tlsArgs...)...).CombinedOutput()
	if !strings.Contains(string(out), "job 1 is FINISHED") {
		t.Fatalf("savepoint over TLS: %s", out)
	}
	out, err := exec.Command(bin, "run", sqlFile, "--coordinator", coord).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does the server require TLS?") {
		t.Fatalf("a clear-text client: %v %s", err, out)
	}
	out, err = exec.Command(bin, "run", sqlFile, "--coordinator", coord, "--tls-cert", cl.CertFile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--tls-key is missing") {
		t.Fatalf("--tls-cert alone: %v %s", err, out)
	}
}
