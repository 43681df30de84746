package registry

import (
	"net"
)

// StartLocal runs a development registry on a free port of 127.0.0.1 in
// the background and returns it (Close stops it) with its URL: for tests,
// benchmarks and `clink kafka serve --schema-registry-port 0`-like uses in
// one process.
func StartLocal(opts Options) (*Server, string, error) {
	srv, err := NewServer(opts)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}
