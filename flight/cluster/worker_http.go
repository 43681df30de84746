package cluster

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
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
	mux.HandleFunc("GET /metrics", w.metrics)
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

func (w *Worker) metrics(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
	var b strings.Builder
	w.mu.Lock()
	reg := 0
	if w.registered {
		reg = 1
	}
	fmt.Fprintf(&b, "# HELP clink_worker_registered 1 while registered with a Coordinator.\n# TYPE clink_worker_registered gauge\nclink_worker_registered %d\n", reg)
	fmt.Fprintf(&b, "# HELP clink_worker_leader_epoch The newest leader epoch this Worker has seen.\n# TYPE clink_worker_leader_epoch gauge\nclink_worker_leader_epoch %d\n", w.epoch)
	fmt.Fprintf(&b, "# HELP clink_worker_slots Slots of this Worker.\n# TYPE clink_worker_slots gauge\nclink_worker_slots %d\n", w.cfg.Slots)
	fmt.Fprintf(&b, "# HELP clink_worker_attempts Job attempts running here.\n# TYPE clink_worker_attempts gauge\nclink_worker_attempts %d\n", len(w.attempts))
	fmt.Fprintf(&b, "# HELP clink_worker_self_fences_total Times this Worker cancelled its tasks for want of a leader.\n# TYPE clink_worker_self_fences_total counter\nclink_worker_self_fences_total %d\n", w.selfFences)
	var lines []string
	for ref, a := range w.attempts {
		for _, o := range a.live.Snapshot() {
			l := fmt.Sprintf(`job="%s",attempt="%d",operator="%s",subtask="%d"`, ref.Job, ref.Attempt, o.Name, o.Subtask)
			lines = append(lines, fmt.Sprintf("clink_operator_records_in_total{%s} %d\nclink_operator_records_out_total{%s} %d\n", l, o.RowsIn, l, o.RowsOut))
		}
	}
	w.mu.Unlock()
	sort.Strings(lines)
	if len(lines) > 0 {
		b.WriteString("# TYPE clink_operator_records_in_total counter\n# TYPE clink_operator_records_out_total counter\n")
		for _, l := range lines {
			b.WriteString(l)
		}
	}
	rw.Write([]byte(b.String()))
}

// HTTPAddr is the address of /metrics, /healthz and /readyz ("" when off).
func (w *Worker) HTTPAddr() string {
	if w.hl == nil {
		return ""
	}
	return w.hl.Addr().String()
}
