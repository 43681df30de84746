package tlsconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/flight/tlsconf"
	"github.com/clink-dev/clink/flight/tlsconf/tlstest"
)

// TestTLSLoad: no file is no TLS; the three files go together; files that
// do not load are refused at start, naming the flag.
func TestTLSLoad(t *testing.T) {
	if c, err := tlsconf.Load(tlsconf.Options{}); c != nil || err != nil {
		t.Fatalf("no files: %v %v", c, err)
	}
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	o := ca.Files(t, dir, "p", "p", "127.0.0.1")
	for _, tc := range []struct {
		o    tlsconf.Options
		want string
	}{
		{tlsconf.Options{CertFile: o.CertFile, KeyFile: o.KeyFile}, "--tls-ca is missing"},
		{tlsconf.Options{KeyFile: o.KeyFile, CAFile: o.CAFile}, "--tls-cert is missing"},
		{tlsconf.Options{CertFile: o.CertFile, CAFile: o.CAFile}, "--tls-key is missing"},
		{tlsconf.Options{ServerName: "x"}, "--tls-server-name needs"},
		{tlsconf.Options{CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: filepath.Join(dir, "nope")}, "--tls-ca"},
		{tlsconf.Options{CertFile: o.CertFile, KeyFile: o.CertFile, CAFile: o.CAFile}, "--tls-key"},
		{tlsconf.Options{CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.KeyFile}, "--tls-ca"},
	} {
		if _, err := tlsconf.Load(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	c, err := tlsconf.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server().MinVersion == 0 || c.Client("").MinVersion == 0 {
		t.Fatal("no minimum TLS version")
	}
}

// TestTLSReloadFiles: a changed pair is loaded at the next check, a
// broken one keeps the previous pair and is logged once.
func TestTLSReloadFiles(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	o := ca.Files(t, dir, "p", "first", "127.0.0.1")
	var logs []string
	o.Reload = time.Millisecond
	o.Logf = func(f string, a ...any) { logs = append(logs, f) }
	c, err := tlsconf.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	cn := func() string { time.Sleep(2 * time.Millisecond); return c.Certificate().Leaf.Subject.CommonName }
	if got := cn(); got != "first" {
		t.Fatal(got)
	}
	os.WriteFile(o.KeyFile, []byte("garbage"), 0o600)
	if got := cn(); got != "first" {
		t.Fatalf("a broken key: %s", got)
	}
	cn()
	if len(logs) != 1 || !strings.Contains(logs[0], "keeping the previous certificate") {
		t.Fatalf("logs %q", logs)
	}
	cert, key := ca.Issue(t, "second", "127.0.0.1")
	tlstest.Write(t, o.CertFile, cert)
	tlstest.Write(t, o.KeyFile, key)
	if got := cn(); got != "second" {
		t.Fatalf("after the new pair: %s", got)
	}
}
