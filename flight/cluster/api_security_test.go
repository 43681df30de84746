package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// request sends method path to c's HTTP API with the Authorization
// header auth ("": none) and returns the status and body.
func request(t *testing.T, c *Coordinator, method, path, auth string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+c.HTTPAddr()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(data)
}

// noRedirects answers a redirect as it is (the console's 303s).
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// publicStatus is what each public route answers without the token: the
// probes, and the console's sign-in (its form refuses a wrong token).
var publicStatus = map[string]int{
	"GET /healthz":   http.StatusOK,
	"GET /readyz":    http.StatusOK,
	"GET /ui":        http.StatusMovedPermanently,
	"GET /ui/login":  http.StatusOK,
	"POST /ui/login": http.StatusUnauthorized,
}

// routeRequest turns a route's pattern into a request's method and path.
func routeRequest(pattern string) (string, string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "GET", pattern
	}
	if path == "/" {
		path = "/no/such/path"
	}
	return method, strings.ReplaceAll(path, "{id}", "1")
}

// TestAPISecurityEveryRouteNeedsToken walks the API's own route table:
// with a token configured every route but /healthz and /readyz answers
// 401 without it or with a wrong one (so a route added later cannot skip
// auth), and no route answers 401 with it.
func TestAPISecurityEveryRouteNeedsToken(t *testing.T) {
	c := startAPI(t, "s3cret")
	routes := c.routes()
	public := 0
	for _, rt := range routes {
		method, path := routeRequest(rt.pattern)
		for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret-and-more", "s3cret", "Basic czNjcmV0"} {
			code, body := request(t, c, method, path, auth, nil)
			switch {
			case rt.public && code != publicStatus[rt.pattern]:
				t.Errorf("%s %s (public) with %q: %d %s", method, path, auth, code, body)
			case rt.console && code != http.StatusSeeOther:
				t.Errorf("%s %s (console) with %q: %d, want 303 to /ui/login: %s", method, path, auth, code, body)
			case rt.console || rt.public:
			case !rt.public && code != http.StatusUnauthorized:
				t.Errorf("%s %s with %q: %d, want 401: %s", method, path, auth, code, body)
			case !rt.public && !strings.Contains(body, "bearer token"):
				t.Errorf("%s %s: 401 body %s", method, path, body)
			}
		}
		code, body := request(t, c, method, path, "Bearer s3cret", strings.NewReader("{}"))
		if code == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401 %s", method, path, body)
		}
		if rt.public {
			public++
		}
	}
	if public != len(publicStatus) {
		t.Errorf("%d public routes, want %d: the probes and the console's sign-in", public, len(publicStatus))
	}
	for _, path := range []string{"/metrics", "/api/v1/jobs", "/api/v1/config"} {
		if code, _ := request(t, c, "GET", path, "", nil); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d", path, code)
		}
	}
	// Without a token configured every route answers (as before).
	open := startAPI(t, "")
	for _, rt := range open.routes() {
		method, path := routeRequest(rt.pattern)
		if code, body := request(t, open, method, path, "", strings.NewReader("{}")); code == http.StatusUnauthorized {
			t.Errorf("%s %s without a token configured: 401 %s", method, path, body)
		}
	}
}

// TestAPISecurityProbes: /healthz is "ok" and /readyz "leader", both 200
// without the token.
func TestAPISecurityProbes(t *testing.T) {
	c := startAPI(t, "s3cret")
	if code, body := request(t, c, "GET", "/healthz", "", nil); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := request(t, c, "GET", "/readyz", "", nil); code != http.StatusOK || strings.TrimSpace(body) != "leader" {
		t.Errorf("/readyz: %d %q", code, body)
	}
}

// endless is a JSON body {"sql": "xxxx... of n bytes, made as it is read.
type endless struct{ n, off int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.off >= e.n {
		return 0, io.EOF
	}
	const head = `{"sql": "`
	k := 0
	for k < len(p) && e.off < e.n {
		if e.off < int64(len(head)) {
			p[k] = head[e.off]
		} else {
			p[k] = 'x'
		}
		k++
		e.off++
	}
	return k, nil
}

// TestAPISecurityBodyLimit: a 100 MB body (streamed, with no
// Content-Length, or announced by one) is answered 413 with the limit in
// its JSON error in well under a second, without the Coordinator reading
// the rest or growing by the body's size; the limit applies to every
// route that reads a body.
func TestAPISecurityBodyLimit(t *testing.T) {
	c := startAPI(t, "")
	const size = 100 << 20
	for _, announce := range []bool{false, true} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, err := http.NewRequest("POST", "http://"+c.HTTPAddr()+"/api/v1/jobs", &endless{n: size})
		if err != nil {
			t.Fatal(err)
		}
		if announce {
			req.ContentLength = size
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("announce %v: %v", announce, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("announce %v: %d %s", announce, resp.StatusCode, data)
		}
		var e struct{ Errors []string }
		if err := json.Unmarshal(data, &e); err != nil || len(e.Errors) != 1 || !strings.Contains(e.Errors[0], "4194304 bytes") {
			t.Errorf("announce %v: error %s (%v)", announce, data, err)
		}
		// Generous: the machine is shared; the body alone would take
		// seconds to read.
		if took > time.Second {
			t.Errorf("announce %v: 413 after %v", announce, took)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 40<<20 {
			t.Errorf("announce %v: %d MB allocated for a %d MB body", announce, grew>>20, size>>20)
		}
		t.Logf("announce %v: 413 in %v, %.1f MB allocated", announce, took, float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
	}
	// The savepoint routes read bodies too; MaxBodyBytes sets the cap.
	small := startAPIWith(t, CoordinatorConfig{MaxBodyBytes: 1000})
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/1/stop", "/api/v1/jobs/1/savepoints"} {
		body := `{"target-directory": "` + strings.Repeat("d", 2000) + `"}`
		if code, data := request(t, small, "POST", path, "", strings.NewReader(body)); code != http.StatusRequestEntityTooLarge || !strings.Contains(data, "1000 bytes") {
			t.Errorf("POST %s of 2 KB with a 1000-byte cap: %d %s", path, code, data)
		}
	}
	if code, data := request(t, small, "POST", "/api/v1/jobs/1/stop", "", strings.NewReader(`{}`)); code == http.StatusRequestEntityTooLarge {
		t.Errorf("small body: %d %s", code, data)
	}
}

// TestAPISecuritySmallErrors: a megabyte of SQL with an error is answered
// 400 with an error of a few hundred bytes that names line:column, not the
// SQL echoed back.
func TestAPISecuritySmallErrors(t *testing.T) {
	c := startAPI(t, "")
	sql := "CREATE TABLE t (a BIGINT) WITH ('connector'='file','path'='x');\nSELECT " + strings.Repeat("a, ", 1<<18) + " FROM t"
	body, _ := json.Marshal(map[string]any{"sql": sql})
	code, data := request(t, c, "POST", "/api/v1/jobs", "", strings.NewReader(string(body)))
	if code != http.StatusBadRequest || len(data) > 4096 || !strings.Contains(data, "line 2:786441") {
		t.Errorf("%d, %d bytes: %.500s", code, len(data), data)
	}
	// Nearly 4 MiB of "a + a + ..." is refused by the parser, not a stack
	// overflow that ends the Coordinator.
	sql = "CREATE TABLE t (a BIGINT) WITH ('connector'='file','path'='x');\nSELECT " + strings.Repeat("a + ", 1_000_000) + "a FROM t"
	body, _ = json.Marshal(map[string]any{"sql": sql})
	code, data = request(t, c, "POST", "/api/v1/jobs", "", strings.NewReader(string(body)))
	if code != http.StatusBadRequest || len(data) > 4096 || !strings.Contains(data, "expression too long") {
		t.Errorf("%d, %d bytes: %.500s", code, len(data), data)
	}
	if code, _ := request(t, c, "GET", "/healthz", "", nil); code != http.StatusOK {
		t.Errorf("after: /healthz %d", code)
	}
}

// TestCheckBind: without a token only loopback addresses are allowed
// unless insecure; the error says why and what to do.
func TestCheckBind(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:6123", "127.0.0.1:0", "localhost:8081", "LOCALHOST:1", "[::1]:6123", "127.1.2.3:80", "[::ffff:127.0.0.1]:1"} {
		if err := CheckBind(addr, "", false); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:6123", ":6123", "[::]:6123", "10.0.0.5:8081", "192.168.1.2:0", "[2001:db8::1]:6123", "coordinator.example.com:6123", "my-host:1", "[fe80::1%eth0]:1"} {
		err := CheckBind(addr, "", false)
		if err == nil {
			t.Errorf("%s: no error", addr)
			continue
		}
		for _, want := range []string{addr, "CLINK_AUTH_TOKEN", "--tls-cert", "--insecure", "not a loopback address"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want it to say %q", addr, err, want)
			}
		}
		if err := CheckBind(addr, "tok", false); err != nil {
			t.Errorf("%s with a token: %v", addr, err)
		}
		if err := CheckBind(addr, "", true); err != nil {
			t.Errorf("%s insecure: %v", addr, err)
		}
	}
}

// TestCheckBindCoordinator: NewCoordinator refuses a non-loopback HTTP or
// Flight address without a token (unless mutual TLS authenticates it),
// and with Insecure starts and warns.
func TestCheckBindCoordinator(t *testing.T) {
	for _, cfg := range []CoordinatorConfig{
		{FlightAddr: "0.0.0.0:0", HTTPAddr: "127.0.0.1:0"},
		{FlightAddr: "127.0.0.1:0", HTTPAddr: ":0"},
	} {
		cfg.Log = io.Discard
		if c, err := NewCoordinator(cfg); err == nil {
			c.srv.Shutdown()
			t.Errorf("%s, %s without a token: started", cfg.FlightAddr, cfg.HTTPAddr)
		} else if !strings.Contains(err.Error(), "CLINK_AUTH_TOKEN") {
			t.Errorf("%v", err)
		}
	}
	log := &syncBuf{}
	c := startAPIWith(t, CoordinatorConfig{FlightAddr: "0.0.0.0:0", Insecure: true, Log: log})
	if got := log.take(); !strings.Contains(got, fmt.Sprintf("warning: --insecure: listening on %s without a token", "0.0.0.0:0")) {
		t.Errorf("log %q", got)
	}
	if code, _ := request(t, c, "GET", "/healthz", "", nil); code != http.StatusOK {
		t.Errorf("insecure coordinator: /healthz %d", code)
	}
	// With mutual TLS the certificates authenticate: Flight needs no
	// token, nor HTTPS requiring client certificates; HTTPS without them
	// (or plain HTTP) does.
	f := newTLSFixture(t)
	tlsc, _ := f.config(t, f.ca, "coordinator")
	for _, c := range []struct {
		cfg CoordinatorConfig
		ok  bool
	}{
		{CoordinatorConfig{FlightAddr: "0.0.0.0:0", HTTPAddr: "0.0.0.0:0", TLS: tlsc}, true},
		{CoordinatorConfig{FlightAddr: "0.0.0.0:0", HTTPAddr: "0.0.0.0:0", TLS: tlsc, HTTPTLS: "mtls"}, true},
		{CoordinatorConfig{FlightAddr: "0.0.0.0:0", HTTPAddr: "127.0.0.1:0", TLS: tlsc, HTTPTLS: "tls"}, true},
		{CoordinatorConfig{FlightAddr: "0.0.0.0:0", HTTPAddr: "0.0.0.0:0", TLS: tlsc, HTTPTLS: "tls"}, false},
		{CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "0.0.0.0:0", TLS: tlsc, HTTPTLS: "off"}, false},
	} {
		c.cfg.Log = io.Discard
		co, err := NewCoordinator(c.cfg)
		if err == nil {
			co.srv.Shutdown()
			if co.hl != nil {
				co.hl.Close()
			}
		}
		if (err == nil) != c.ok {
			t.Errorf("flight %s, http %s, http-tls %q: %v, want ok %v", c.cfg.FlightAddr, c.cfg.HTTPAddr, c.cfg.HTTPTLS, err, c.ok)
		}
	}
}
