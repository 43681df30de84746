package registry

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// countingServer serves our registry through a handler that counts
// requests.
func countingServer(t *testing.T, opts Options) (string, *atomic.Int64) {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, &n
}

func TestClientRegisterAndCache(t *testing.T) {
	ctx := context.Background()
	url, n := countingServer(t, Options{})
	c, err := NewClient(url+"/", ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Register(ctx, "users-value", userV1, Avro)
	if err != nil || id != 1 {
		t.Fatalf("register: %d %v", id, err)
	}
	s, err := c.SchemaByID(ctx, 1)
	if err != nil || s.Text != userV1 || s.Type != Avro || s.ID != 1 {
		t.Fatalf("by id: %+v %v", s, err)
	}
	before := n.Load()
	if id, err := c.Register(ctx, "users-value", userV1, ""); err != nil || id != 1 {
		t.Fatalf("register again: %d %v", id, err)
	}
	if again, err := c.SchemaByID(ctx, 1); err != nil || again.Text != s.Text {
		t.Fatalf("by id again: %+v %v", again, err)
	}
	if n.Load() != before {
		t.Fatalf("cached calls made %d requests", n.Load()-before)
	}

	// A second client (cold cache) finds the schema by lookup instead of
	// registering it again.
	c2, _ := NewClient(url, ClientOptions{})
	if id, err := c2.Register(ctx, "users-value", " "+userV1, Avro); err != nil || id != 1 {
		t.Fatalf("cold register: %d %v", id, err)
	}
	if v, _ := c2.Latest(ctx, "users-value"); v.Version != 1 {
		t.Fatalf("a lookup registered a new version: %+v", v)
	}

	// Incompatible under the default BACKWARD level.
	_, err = c.Register(ctx, "users-value", userV2NoDefault, Avro)
	var ie *IncompatibleError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), `"users-value"`) || !strings.Contains(err.Error(), "email") {
		t.Fatalf("incompatible: %v", err)
	}
	id2, err := c.Register(ctx, "users-value", userV2Default, Avro)
	if err != nil || id2 != 2 {
		t.Fatalf("compatible v2: %d %v", id2, err)
	}
	latest, err := c.Latest(ctx, "users-value")
	if err != nil || latest.Version != 2 || latest.ID != 2 || latest.Text != userV2Default {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if _, err := c.Latest(ctx, "nobody"); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
		t.Fatalf("latest of unknown subject: %v", err)
	}
	if l, err := c.Level(ctx, "users-value"); err != nil || l != Backward {
		t.Fatalf("level: %v %v", l, err)
	}

	_, err = c.SchemaByID(ctx, 999)
	if !errors.Is(err, ErrUnknownID) || !strings.Contains(err.Error(), "999") || !strings.Contains(err.Error(), url) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := c.Register(ctx, "x", `{"type":`, Avro); err == nil || !strings.Contains(err.Error(), "invalid AVRO") {
		t.Fatalf("invalid schema: %v", err)
	}

	// Concurrent misses of one id make one request.
	c3, _ := NewClient(url, ClientOptions{})
	before = n.Load()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c3.SchemaByID(ctx, 2); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := n.Load() - before; got > 8 || got < 1 {
		t.Fatalf("%d requests", got)
	}
}

// srfake accepts any schema as compatible; the client's own check does
// not.
func TestClientChecksAgainstPermissiveRegistry(t *testing.T) {
	ctx := context.Background()
	fake := srfake.New()
	defer fake.Close()
	c, err := NewClient(fake.URL(), ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(ctx, "users-value", userV1, Avro); err != nil {
		t.Fatal(err)
	}
	_, err = c.Register(ctx, "users-value", userV2NoDefault, Avro)
	var ie *IncompatibleError
	if !errors.As(err, &ie) || ie.Level != Backward {
		t.Fatalf("want IncompatibleError, got %v", err)
	}
	if _, err := c.Register(ctx, "users-value", userV2Default, Avro); err != nil {
		t.Fatal(err)
	}
}

func TestClientAuthAndTLS(t *testing.T) {
	ctx := context.Background()
	s, err := NewServer(Options{Users: map[string]string{"alice": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(s.Handler())
	defer ts.Close()
	tlsConf := ts.Client().Transport.(*http.Transport).TLSClientConfig

	c, _ := NewClient(ts.URL, ClientOptions{TLS: tlsConf})
	if _, err := c.SchemaByID(ctx, 1); err == nil || !strings.Contains(err.Error(), "basic auth") {
		t.Fatalf("no credentials: %v", err)
	}
	c, _ = NewClient(ts.URL, ClientOptions{TLS: tlsConf, User: "alice", Password: "s3cret"})
	if _, err := c.Register(ctx, "a", `"string"`, Avro); err != nil {
		t.Fatal(err)
	}
	c, _ = NewClient(ts.URL, ClientOptions{User: "alice", Password: "s3cret"}) // system roots: unknown CA
	if _, err := c.SchemaByID(ctx, 1); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	for _, bad := range []string{"", "localhost:8081", "ftp://x", "http://"} {
		if _, err := NewClient(bad, ClientOptions{}); err == nil {
			t.Errorf("NewClient(%q) accepted", bad)
		}
	}
}
