// Package lineagetest is an OpenLineage backend for tests: an HTTP
// endpoint that validates every event it receives against the official
// OpenLineage JSON schemas (a copy in lineage/testdata/spec, registered
// under their $id URLs so that nothing is fetched) and checks that each
// run goes START → RUNNING* → one of COMPLETE, FAIL, ABORT.
package lineagetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/clink-dev/clink/lineage"
)

// specDir is lineage/testdata/spec, found from this file's path.
func specDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "spec")
}

type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not in lineage/testdata/spec (no network access in tests)", url)
}

// Validator validates events and facets against the spec copy.
type Validator struct {
	c     *jsonschema.Compiler
	mu    sync.Mutex
	cache map[string]*jsonschema.Schema
}

// NewValidator loads the schemas of lineage/testdata/spec.
func NewValidator() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.UseLoader(noNetwork{})
	files, _ := filepath.Glob(filepath.Join(specDir(), "*.json"))
	more, _ := filepath.Glob(filepath.Join(specDir(), "facets", "*.json"))
	files = append(files, more...)
	if len(files) == 0 {
		return nil, fmt.Errorf("no schemas in %s", specDir())
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if id == "" {
			return nil, fmt.Errorf("%s has no $id", f)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return &Validator{c: c, cache: map[string]*jsonschema.Schema{}}, nil
}

func (v *Validator) schema(url string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.cache[url]; ok {
		return s, nil
	}
	s, err := v.c.Compile(url)
	if err != nil {
		return nil, err
	}
	v.cache[url] = s
	return s, nil
}

// Validate checks one event (JSON) against the RunEvent schema its
// schemaURL names, and every facet against the schema its _schemaURL
// names (the core schema checks only that facets are facets).
func (v *Validator) Validate(body []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return err
	}
	ev, _ := inst.(map[string]any)
	url, _ := ev["schemaURL"].(string)
	if url != lineage.SchemaURL {
		return fmt.Errorf("schemaURL %q, want %q", url, lineage.SchemaURL)
	}
	s, err := v.schema(url)
	if err != nil {
		return err
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("event: %v", err)
	}
	var facets []map[string]any
	for _, k := range []string{"run", "job"} {
		if o, ok := ev[k].(map[string]any); ok {
			if f, ok := o["facets"].(map[string]any); ok {
				facets = append(facets, f)
			}
		}
	}
	for _, k := range []string{"inputs", "outputs"} {
		ds, _ := ev[k].([]any)
		for _, d := range ds {
			if f, ok := d.(map[string]any)["facets"].(map[string]any); ok {
				facets = append(facets, f)
			}
		}
	}
	for _, fs := range facets {
		for name, f := range fs {
			furl, _ := f.(map[string]any)["_schemaURL"].(string)
			root, _, _ := strings.Cut(furl, "#")
			s, err := v.schema(root)
			if err != nil {
				return fmt.Errorf("facet %s: %v", name, err)
			}
			// The facet file's root schema maps the facet's key to it.
			if err := s.Validate(map[string]any{name: f}); err != nil {
				return fmt.Errorf("facet %s: %v", name, err)
			}
			s, err = v.schema(furl)
			if err != nil {
				return fmt.Errorf("facet %s: %v", name, err)
			}
			if err := s.Validate(f); err != nil {
				return fmt.Errorf("facet %s: %v", name, err)
			}
		}
	}
	return nil
}

// Receiver is the test's OpenLineage backend.
type Receiver struct {
	// URL is the base URL to give as OPENLINEAGE_URL.
	URL string
	srv *httptest.Server
	v   *Validator

	mu     sync.Mutex
	events []lineage.Event
	errs   []string
	auth   []string
	posts  int
	// answer, when set, is the status of a POST (given the number of
	// POSTs so far, from 1); an answer ≥ 300 keeps no event.
	answer func(n int) int
}

// NewReceiver starts a receiver, closed at the end of the test.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{v: v}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

// Answer makes the receiver answer POST number n (from 1) with
// status(n); a status ≥ 300 keeps no event.
func (r *Receiver) Answer(status func(n int) int) {
	r.mu.Lock()
	r.answer = status
	r.mu.Unlock()
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	if req.Method != http.MethodPost || req.URL.Path != "/api/v1/lineage" {
		r.errs = append(r.errs, fmt.Sprintf("%s %s: not POST /api/v1/lineage", req.Method, req.URL.Path))
		http.NotFound(w, req)
		return
	}
	if r.answer != nil {
		if st := r.answer(r.posts); st >= 300 {
			w.WriteHeader(st)
			return
		}
	}
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	if err := r.v.Validate(body); err != nil {
		r.errs = append(r.errs, fmt.Sprintf("invalid event %s: %v", body, err))
	}
	var ev lineage.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		r.errs = append(r.errs, err.Error())
	}
	r.events = append(r.events, ev)
	w.WriteHeader(http.StatusCreated)
}

// Events are the events received so far, in order.
func (r *Receiver) Events() []lineage.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lineage.Event(nil), r.events...)
}

// Posts is how many POSTs arrived (answered or not).
func (r *Receiver) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// Authorization is each kept event's Authorization header.
func (r *Receiver) Authorization() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// Wait waits up to timeout for cond to hold over the events.
func (r *Receiver) Wait(t testing.TB, timeout time.Duration, what string, cond func([]lineage.Event) bool) []lineage.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := r.Events()
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("lineage: no %s within %s; events: %s", what, timeout, Summary(evs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Summary is one line per event: type, run id, job.
func Summary(evs []lineage.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %s %s %s/%s", e.EventType, e.Run.RunID, e.Job.Namespace, e.Job.Name)
	}
	return b.String()
}

// Check fails t on an event that did not validate, and on a run whose
// events are not START, RUNNING*, then one end (COMPLETE, FAIL, ABORT);
// with ended, every run must have its end.
func (r *Receiver) Check(t testing.TB, ended bool) {
	t.Helper()
	r.mu.Lock()
	errs := append([]string(nil), r.errs...)
	r.mu.Unlock()
	for _, e := range errs {
		t.Error(e)
	}
	for _, e := range Pairing(r.Events(), ended) {
		t.Error(e)
	}
}

// Pairing lists the runs whose events break START → RUNNING* → end.
func Pairing(evs []lineage.Event, ended bool) []string {
	state := map[string]string{}
	var order []string
	var errs []string
	for _, e := range evs {
		id, prev := e.Run.RunID, state[e.Run.RunID]
		if _, ok := state[id]; !ok {
			order = append(order, id)
		}
		switch {
		case e.EventType == lineage.Start && prev == "":
		case e.EventType == lineage.Running && (prev == lineage.Start || prev == lineage.Running):
		case (e.EventType == lineage.Complete || e.EventType == lineage.Fail || e.EventType == lineage.Abort) && (prev == lineage.Start || prev == lineage.Running):
		default:
			errs = append(errs, fmt.Sprintf("run %s: %s after %q", id, e.EventType, prev))
		}
		state[id] = e.EventType
	}
	if ended {
		for _, id := range order {
			if s := state[id]; s == lineage.Start || s == lineage.Running {
				errs = append(errs, fmt.Sprintf("run %s has no end (last %s)", id, s))
			}
		}
	}
	return errs
}

// Runs groups events by run id, in the order the runs started.
func Runs(evs []lineage.Event) (ids []string, byRun map[string][]lineage.Event) {
	byRun = map[string][]lineage.Event{}
	for _, e := range evs {
		if _, ok := byRun[e.Run.RunID]; !ok {
			ids = append(ids, e.Run.RunID)
		}
		byRun[e.Run.RunID] = append(byRun[e.Run.RunID], e)
	}
	return ids, byRun
}
