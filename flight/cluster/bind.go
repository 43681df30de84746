package cluster

import (
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// CheckBind refuses to listen on addr (HOST:PORT) without a token unless
// insecure: anyone who reaches a non-loopback address could register a
// Worker, submit a job or read the API. Loopback is 127.0.0.0/8, ::1 and
// the name localhost; any other host, an empty one (":6123") and the
// unspecified addresses (0.0.0.0, ::) are not. Host names are not
// resolved: a name is refused even if it resolves to loopback.
func CheckBind(addr, token string, insecure bool) error {
	if token != "" || insecure || isLoopback(addr) {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: it is not a loopback address, so anyone who reaches it could register Workers, submit jobs or deploy subtasks; set CLINK_AUTH_TOKEN (the same value on the Coordinator, the Workers and clients), use mutual TLS (--tls-cert, --tls-key, --tls-ca), or pass --insecure to listen without authentication", addr)
}

// CheckBinds is CheckBind for each address of a role (those "" or "off"
// are skipped); with insecure it warns on log about each that CheckBind
// would refuse.
func CheckBinds(log io.Writer, token string, insecure bool, addrs ...string) error {
	for _, a := range addrs {
		if a == "" || a == "off" {
			continue
		}
		if err := CheckBind(a, token, false); err != nil {
			if !insecure {
				return err
			}
			if log != nil {
				fmt.Fprintf(log, "warning: --insecure: listening on %s without a token: anyone who reaches it can register a Worker or submit a job\n", a)
			}
		}
	}
	return nil
}

// unauthenticatedAddrs are the Coordinator's addresses that nothing but
// the token authenticates: Flight and Flight SQL unless mutual TLS is on; HTTP unless
// it is HTTPS requiring client certificates (HTTPTLS "mtls", the
// default with TLS). CheckBind applies to them.
func (cfg *CoordinatorConfig) unauthenticatedAddrs() []string {
	var out []string
	if cfg.TLS == nil {
		out = append(out, cfg.FlightAddr, cfg.FlightSQLAddr)
	}
	if cfg.TLS == nil || cfg.HTTPTLS == "tls" || cfg.HTTPTLS == "off" {
		out = append(out, cfg.HTTPAddr)
	}
	return out
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 {
		host = host[:i] // fe80::1%eth0
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpReadTimeout bounds the reading of a whole request, body included:
// a client that sends its body slower than --max-request-bytes in this
// time (a slowloris) loses the connection instead of holding it.
const httpReadTimeout = 30 * time.Second
