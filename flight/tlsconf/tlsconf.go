// Package tlsconf turns the --tls-cert, --tls-key and --tls-ca PEM files
// into the *tls.Config of mutual TLS between a cluster's processes:
// servers require a client certificate signed by the CA, clients verify
// the server against the CA and present their own certificate.
//
// The files are re-read when they change (their size, modification time
// or content), checked at most once per Options.Reload on a handshake, so
// certificates can be rotated without a restart: new connections get the
// new pair, open ones keep theirs. A new set of files that does not load
// (a half-written pair, a key that does not match) keeps the previous one
// and is logged.
package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Options name the PEM files.
type Options struct {
	// CertFile is this process's certificate chain (it serves it as a
	// server and presents it as a client), KeyFile its private key,
	// CAFile the CA certificates peers' certificates must chain to.
	CertFile, KeyFile, CAFile string
	// ServerName, when set, is the name a client verifies the server's
	// certificate for instead of the host it dials (--tls-server-name).
	ServerName string
	// Reload is the longest a changed file goes unnoticed (default 1 s).
	Reload time.Duration
	// Logf receives a line when changed files are loaded or refused.
	Logf func(format string, args ...any)
}

// Enabled reports whether any file is named.
func (o Options) Enabled() bool { return o.CertFile != "" || o.KeyFile != "" || o.CAFile != "" }

// Config holds the current certificate and CA pool; it is safe for
// concurrent use.
type Config struct {
	o Options

	mu      sync.Mutex
	cur     *material
	checked time.Time
	stamps  [3]stamp // of the files cur was read from
	bad     [3]stamp // of the last files that did not load (logged once)
}

type material struct {
	cert *tls.Certificate
	pool *x509.CertPool
	raw  [3][]byte
}

type stamp struct {
	size int64
	mod  time.Time
}

// Load reads the files. None named: nil, nil (no TLS). Some but not all,
// or files that do not load: an error naming the flag.
func Load(o Options) (*Config, error) {
	if !o.Enabled() {
		if o.ServerName != "" {
			return nil, errors.New("--tls-server-name needs --tls-cert, --tls-key and --tls-ca")
		}
		return nil, nil
	}
	switch {
	case o.CertFile == "":
		return nil, errors.New("TLS: --tls-cert is missing (--tls-cert, --tls-key and --tls-ca go together)")
	case o.KeyFile == "":
		return nil, errors.New("TLS: --tls-key is missing (--tls-cert, --tls-key and --tls-ca go together)")
	case o.CAFile == "":
		return nil, errors.New("TLS: --tls-ca is missing (--tls-cert, --tls-key and --tls-ca go together)")
	}
	if o.Reload <= 0 {
		o.Reload = time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	c := &Config{o: o}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	m, err := c.read(nil)
	if err != nil {
		return nil, err
	}
	c.cur, c.stamps, c.checked = m, st, time.Now()
	return c, nil
}

// ServerName is Options.ServerName.
func (c *Config) ServerName() string { return c.o.ServerName }

// Logf logs through Options.Logf (the Flight server logs refused
// handshakes with it).
func (c *Config) Logf(format string, args ...any) { c.o.Logf(format, args...) }

func (c *Config) files() [3]string { return [3]string{c.o.CertFile, c.o.KeyFile, c.o.CAFile} }

var flags = [3]string{"--tls-cert", "--tls-key", "--tls-ca"}

func (c *Config) stat() ([3]stamp, error) {
	var st [3]stamp
	for i, f := range c.files() {
		fi, err := os.Stat(f)
		if err != nil {
			return st, fmt.Errorf("TLS: %s: %w", flags[i], err)
		}
		st[i] = stamp{fi.Size(), fi.ModTime()}
	}
	return st, nil
}

// read loads the files; old (may be nil) is returned as is when their
// content did not change.
func (c *Config) read(old *material) (*material, error) {
	var raw [3][]byte
	for i, f := range c.files() {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("TLS: %s: %w", flags[i], err)
		}
		raw[i] = b
	}
	if old != nil && bytes.Equal(raw[0], old.raw[0]) && bytes.Equal(raw[1], old.raw[1]) && bytes.Equal(raw[2], old.raw[2]) {
		return old, nil
	}
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return nil, fmt.Errorf("TLS: --tls-cert %s / --tls-key %s: %w", c.o.CertFile, c.o.KeyFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw[2]) {
		return nil, fmt.Errorf("TLS: --tls-ca %s: no PEM certificate in it", c.o.CAFile)
	}
	return &material{cert: &cert, pool: pool, raw: raw}, nil
}

// current is the loaded pair and pool, re-read first when the files
// changed since the last check (at most one check per Reload).
func (c *Config) current() *material {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) < c.o.Reload {
		return c.cur
	}
	c.checked = time.Now()
	st, err := c.stat()
	if err == nil && st == c.stamps {
		return c.cur
	}
	var m *material
	if err == nil {
		m, err = c.read(c.cur)
	}
	if err != nil {
		if st != c.bad {
			c.o.Logf("TLS: keeping the previous certificate: %v", err)
			c.bad = st
		}
		return c.cur
	}
	if m != c.cur {
		c.o.Logf("TLS: loaded a new certificate from %s (subject %s)", c.o.CertFile, subject(m.cert))
	}
	c.cur, c.stamps, c.bad = m, st, [3]stamp{}
	return c.cur
}

func subject(cert *tls.Certificate) string {
	if cert.Leaf != nil {
		return cert.Leaf.Subject.String()
	}
	return "?"
}

// Certificate is the current certificate (reloaded as for a handshake).
func (c *Config) Certificate() *tls.Certificate { return c.current().cert }

// Server is the configuration of a server of mutual TLS: it requires a
// client certificate that chains to the CA. nextProtos are its ALPN
// protocols ("h2" for gRPC).
func (c *Config) Server(nextProtos ...string) *tls.Config {
	return c.server(tls.RequireAndVerifyClientCert, nextProtos)
}

// HTTPServer is Server for the HTTP API: with clientAuth false clients
// need no certificate (the bearer token authenticates them).
func (c *Config) HTTPServer(clientAuth bool) *tls.Config {
	auth := tls.RequireAndVerifyClientCert
	if !clientAuth {
		auth = tls.NoClientCert
	}
	return c.server(auth, []string{"h2", "http/1.1"})
}

func (c *Config) server(auth tls.ClientAuthType, nextProtos []string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: auth,
		NextProtos: nextProtos,
		// Each handshake takes the current files' pair and CA (the
		// returned config replaces this one, so it repeats its settings).
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := c.current()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				ClientAuth:   auth,
				NextProtos:   nextProtos,
				Certificates: []tls.Certificate{*m.cert},
				ClientCAs:    m.pool,
			}, nil
		},
	}
}

// Client is the configuration of a client of mutual TLS: it verifies the
// server's certificate against the CA for serverName (empty: Options'
// ServerName, else whoever sets ServerName, gRPC the host dialed) and
// presents its certificate. The CA pool is the current one; make a new
// Client for each connection of a long-lived process to follow its
// reloads (the certificate it presents follows them anyway).
func (c *Config) Client(serverName string) *tls.Config {
	if serverName == "" {
		serverName = c.o.ServerName
	}
	m := c.current()
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    m.pool,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return c.current().cert, nil
		},
	}
}
