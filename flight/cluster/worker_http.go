package cluster

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The Worker's HTTP endpoint (WorkerConfig.HTTPAddr): /healthz (the
// process answers), /readyz (registered with a leader that answered within
// the fence timeout: 200, else 503) and /metrics (Prometheus text).
// CLINK_AUTH_TOKEN, when set, applies as on the Coordinator's API.

// serveHTTP starts the endpoint; it ends with the listener.
func (w *Worker) serveHTTP(l net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprintln(rw, "ok") })
	mux.HandleFunc("GET /readyz", func(rw http.ResponseWriter, _ *http.Request) {
		if ok, why := w.ready(); !ok {
			http.Error(rw, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(rw, "ready")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.reg, promhttp.HandlerOpts{}))
	var h http.Handler = mux
	if tok := w.cfg.Token; tok != "" {
		h = http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+tok {
				http.Error(rw, "unauthorized", http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(rw, r)
		})
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: httpReadTimeout, IdleTimeout: 2 * time.Minute}
	srv.Serve(l)
}

// ready: registered with a Coordinator that answered within the fence
// timeout.
func (w *Worker) ready() (bool, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.registered:
		return false, "not registered with a Coordinator"
	case time.Since(w.lastOK) > w.fenceTimeoutLocked():
		return false, fmt.Sprintf("no leader answered for %s", time.Since(w.lastOK).Round(time.Millisecond))
	}
	return true, ""
}

// HTTPAddr is the address of /metrics, /healthz and /readyz ("" when off).
func (w *Worker) HTTPAddr() string {
	if w.hl == nil {
		return ""
	}
	return w.hl.Addr().String()
}
