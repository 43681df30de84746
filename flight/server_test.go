package flight

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/flight/tlsconf/tlstest"
)

// TestCallAfterClose: a client closed while other goroutines still call
// through it (the Coordinator closes a lost Worker's client while its
// trigger and complete calls run) fails those calls instead of racing or
// panicking. Run it with -race.
func TestCallAfterClose(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("echo", func(_ context.Context, body []byte) ([]byte, error) { return body, nil })
	go srv.Serve()
	defer srv.Shutdown()
	cl, err := Dial(srv.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Call(context.Background(), cl, "echo", []byte("hi")); err != nil || string(out) != "hi" {
		t.Fatalf("call: %q %v", out, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				Call(context.Background(), cl, "echo", []byte("hi"))
			}
		}()
	}
	cl.Close()
	wg.Wait()
	if _, err := Call(context.Background(), cl, "echo", []byte("hi")); err == nil {
		t.Fatal("a call on a closed client succeeded")
	}
}

// tlsLoad loads options into a Config, failing the test on an error.
func tlsLoad(t *testing.T, o tlsconf.Options) *tlsconf.Config {
	t.Helper()
	c, err := tlsconf.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTLSRefusal: a server with WithTLS answers a client with a
// certificate of its CA, and refuses at the handshake a client without a
// certificate, one whose certificate another CA signed, and a clear-text
// one; a client refuses a server whose certificate does not name the
// address dialed. The clients' errors say it is TLS.
func TestTLSRefusal(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "clink test CA"), tlstest.NewCA(t, "untrusted CA")
	var logMu sync.Mutex
	var log strings.Builder
	so := ca.Files(t, dir, "server", "server", "127.0.0.1", "localhost")
	so.Logf = func(f string, a ...any) { logMu.Lock(); fmt.Fprintf(&log, f+"\n", a...); logMu.Unlock() }
	srv, err := NewServer("127.0.0.1:0", "", WithTLS(tlsLoad(t, so)))
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("echo", func(_ context.Context, body []byte) ([]byte, error) { return body, nil })
	go srv.Serve()
	defer srv.Shutdown()
	call := func(addr string, o ...Option) error {
		cl, err := Dial(addr, "", o...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := Call(ctx, cl, "echo", []byte("hi"))
		if err == nil && string(out) != "hi" {
			t.Fatalf("echo: %q", out)
		}
		return err
	}
	if err := call(srv.Addr(), WithTLS(tlsLoad(t, ca.Files(t, dir, "client", "client")))); err != nil {
		t.Fatalf("mTLS call: %v", err)
	}
	// A certificate another CA signed (the client trusts the server).
	bad := other.Files(t, dir, "other", "intruder")
	bad.CAFile = so.CAFile
	if err := call(srv.Addr(), WithTLS(tlsLoad(t, bad))); err == nil || !TLSError(err) || !Unreachable(err) {
		t.Fatalf("an untrusted client certificate: want a TLS handshake error, got %v", err)
	} else {
		t.Logf("untrusted client certificate: %v", err)
	}
	// No client certificate at all: a plain crypto/tls client.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	conn, err := tls.Dial("tcp", srv.Addr(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err == nil {
		_, err = conn.Read(make([]byte, 1)) // TLS 1.3: the server's alert comes after the client's handshake
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Fatalf("a client without a certificate: %v", err)
	}
	if err := call(srv.Addr()); err == nil || !strings.Contains(err.Error(), "require TLS") {
		t.Fatalf("clear text: want a refusal that names TLS, got %v", err)
	} else {
		t.Logf("clear text: %v", err)
	}
	// The server's certificate names 127.0.0.1 and localhost: a client
	// verifying it for another name (--tls-server-name) refuses it.
	co := ca.Files(t, dir, "client2", "client")
	co.ServerName = "clink.example"
	if err := call(srv.Addr(), WithTLS(tlsLoad(t, co))); err == nil || !TLSError(err) || !strings.Contains(err.Error(), "x509") {
		t.Fatalf("a wrong server name: want a TLS error, got %v", err)
	} else {
		t.Logf("wrong server name: %v", err)
	}
	co.ServerName = "localhost"
	if err := call(srv.Addr(), WithTLS(tlsLoad(t, co))); err != nil {
		t.Fatalf("--tls-server-name localhost: %v", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(log.String(), "TLS handshake from") {
		t.Fatalf("the server logged no refused handshake:\n%s", log.String())
	}
}
