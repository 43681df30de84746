package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Defaults of Config.
const (
	DefaultEndpoint        = "api/v1/lineage"
	DefaultNamespace       = "default"
	DefaultQueueSize       = 1000
	DefaultRunningInterval = 60 * time.Second
	DefaultFlushTimeout    = 10 * time.Second
	DefaultRetries         = 5
)

// Config configures a Client the way OpenLineage's own clients are
// configured (ConfigFromEnv), plus the sending's bounds.
type Config struct {
	// URL is the backend's base URL (OPENLINEAGE_URL); events are POSTed
	// to URL/Endpoint (OPENLINEAGE_ENDPOINT, default api/v1/lineage).
	URL, Endpoint string
	// APIKey is sent as "Authorization: Bearer" (OPENLINEAGE_API_KEY).
	APIKey string
	// Namespace is the jobs' namespace (OPENLINEAGE_NAMESPACE, default
	// "default").
	Namespace string
	// Producer is the events' producer URI (default
	// https://github.com/clink-dev/clink, with /tree/<Version> when the
	// version is known); Version is Clink's.
	Producer, Version string
	// QueueSize bounds the events waiting to be sent (default 1000).
	QueueSize int
	// RunningInterval is the least time between two RUNNING events of
	// a run (CLINK_OPENLINEAGE_RUNNING_INTERVAL, default 60 s; < 0: no
	// RUNNING events; 0: one per completed checkpoint).
	RunningInterval time.Duration
	// Retries is how often a failed POST is tried again (default 5),
	// Backoff the first wait (default 200 ms), doubling up to 5 s;
	// Timeout bounds one POST (default 5 s).
	Retries          int
	Backoff, Timeout time.Duration
	// HTTP is the client that POSTs (default one of its own).
	HTTP *http.Client
	// Logf receives a line per event given up on (nil: silent).
	Logf func(format string, args ...any)
}

// ConfigFromEnv reads OPENLINEAGE_URL, OPENLINEAGE_ENDPOINT,
// OPENLINEAGE_API_KEY, OPENLINEAGE_NAMESPACE, OPENLINEAGE_DISABLED and
// CLINK_OPENLINEAGE_RUNNING_INTERVAL. ok is false when lineage is off:
// OPENLINEAGE_URL unset or empty, or OPENLINEAGE_DISABLED=true.
func ConfigFromEnv() (cfg Config, ok bool, err error) {
	cfg = Config{URL: os.Getenv("OPENLINEAGE_URL"), Endpoint: os.Getenv("OPENLINEAGE_ENDPOINT"),
		APIKey: os.Getenv("OPENLINEAGE_API_KEY"), Namespace: os.Getenv("OPENLINEAGE_NAMESPACE")}
	if d, _ := strconv.ParseBool(os.Getenv("OPENLINEAGE_DISABLED")); d || cfg.URL == "" {
		return cfg, false, nil
	}
	if v := os.Getenv("CLINK_OPENLINEAGE_RUNNING_INTERVAL"); v != "" {
		if cfg.RunningInterval, err = time.ParseDuration(v); err != nil {
			return cfg, false, fmt.Errorf("CLINK_OPENLINEAGE_RUNNING_INTERVAL: %w", err)
		}
		if cfg.RunningInterval == 0 {
			cfg.RunningInterval = 1 // every checkpoint (0 is "the default" in Config)
		}
	}
	return cfg, true, nil
}

// FromEnv is the Client ConfigFromEnv configures, or nil when lineage is
// off (a nil Client and its nil Runs do nothing).
func FromEnv(version string, logf func(string, ...any)) (*Client, error) {
	cfg, ok, err := ConfigFromEnv()
	if err != nil || !ok {
		return nil, err
	}
	cfg.Version, cfg.Logf = version, logf
	return New(cfg), nil
}

// Client queues events and one goroutine sends them in order. Emitting
// never blocks: a full queue drops its oldest RUNNING event first (else
// the new RUNNING event, else the oldest event) and counts the drop.
type Client struct {
	cfg  Config
	post string

	mu      sync.Mutex
	queue   []*Event
	closing bool
	closed  bool // Close returned: events are not sent
	wake    chan struct{}
	done    chan struct{}
	stop    context.CancelFunc
	ctx     context.Context

	dropped, sent, failed atomic.Int64
}

// New starts a client; Close flushes and stops it.
func New(cfg Config) *Client {
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Producer == "" {
		cfg.Producer = defaultProducerURL
		if cfg.Version != "" && !strings.Contains(cfg.Version, " ") {
			cfg.Producer += "/tree/" + cfg.Version
		}
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.RunningInterval == 0 {
		cfg.RunningInterval = DefaultRunningInterval
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 200 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	c := &Client{cfg: cfg, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.post = strings.TrimSuffix(cfg.URL, "/") + "/" + strings.TrimPrefix(cfg.Endpoint, "/")
	c.ctx, c.stop = context.WithCancel(context.Background())
	go c.send()
	return c
}

// Namespace is the jobs' namespace.
func (c *Client) Namespace() string {
	if c == nil {
		return ""
	}
	return c.cfg.Namespace
}

// Stats are the client's counts: events sent, dropped from a full queue,
// and given up on after their retries (or at Close's deadline).
func (c *Client) Stats() (sent, dropped, failed int64) {
	if c == nil {
		return 0, 0, 0
	}
	return c.sent.Load(), c.dropped.Load(), c.failed.Load()
}

// emit queues ev without blocking.
func (c *Client) emit(ev *Event) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.failed.Add(1)
		return
	}
	if len(c.queue) >= c.cfg.QueueSize {
		i := -1
		for k, q := range c.queue {
			if q.EventType == Running {
				i = k
				break
			}
		}
		switch {
		case i >= 0:
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
		case ev.EventType == Running:
			c.mu.Unlock()
			c.dropped.Add(1)
			return
		default:
			c.queue = c.queue[1:]
		}
		c.dropped.Add(1)
	}
	c.queue = append(c.queue, ev)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// send posts the queued events in order until Close.
func (c *Client) send() {
	defer close(c.done)
	for {
		if c.ctx.Err() != nil {
			return // Close's deadline: it counts what is left
		}
		c.mu.Lock()
		if len(c.queue) == 0 {
			closing := c.closing
			c.mu.Unlock()
			if closing {
				return
			}
			select {
			case <-c.wake:
			case <-c.ctx.Done():
			}
			continue
		}
		ev := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		if err := c.deliver(ev); err != nil {
			c.failed.Add(1)
			if c.cfg.Logf != nil {
				c.cfg.Logf("openlineage: %s event of run %s not delivered: %v", ev.EventType, ev.Run.RunID, err)
			}
		} else {
			c.sent.Add(1)
		}
	}
}

// deliver POSTs ev, retrying connection errors, 429 and 5xx answers with
// a doubling backoff until Close's deadline.
func (c *Client) deliver(ev *Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	wait := c.cfg.Backoff
	for try := 0; ; try++ {
		err = c.postOnce(body)
		if err == nil {
			return nil
		}
		if _, permanent := err.(permanentError); permanent || try >= c.cfg.Retries || c.ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(wait):
		case <-c.ctx.Done():
			return fmt.Errorf("%w (flush timed out)", err)
		}
		wait = min(2*wait, 5*time.Second)
	}
}

type permanentError struct{ error }

func (c *Client) postOnce(body []byte) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.post, bytes.NewReader(body))
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("POST %s: %s", c.post, resp.Status)
	}
	return permanentError{fmt.Errorf("POST %s: %s", c.post, resp.Status)}
}

// Close sends what is queued, waiting at most timeout (default 10 s), and
// stops the client; events still queued then are counted as failed.
func (c *Client) Close(timeout time.Duration) {
	if c == nil {
		return
	}
	if timeout <= 0 {
		timeout = DefaultFlushTimeout
	}
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.stop()
		<-c.done
	}
	c.stop()
	c.mu.Lock()
	c.failed.Add(int64(len(c.queue)))
	c.queue, c.closed = nil, true
	c.mu.Unlock()
}

// Run is one job attempt's OpenLineage run: one run id, START once, then
// RUNNING on checkpoints, then one of COMPLETE, FAIL or ABORT. A nil Run
// does nothing; a Run is safe for concurrent use.
type Run struct {
	c      *Client
	job    *Job
	id     string
	parent string

	mu          sync.Mutex
	started     bool
	ended       bool
	lastRunning time.Time
}

// NewRun is a new run (a new id: UUIDv7) of job; parent, when set, is
// the run id of the whole job that this attempt belongs to (the parent
// run facet). Nil when c is nil.
func (c *Client) NewRun(job *Job, parent string) *Run {
	if c == nil || job == nil {
		return nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	return &Run{c: c, job: job, id: id.String(), parent: parent}
}

// NewRunID is a fresh run id, e.g. for a parent run.
func NewRunID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// ID is the run id ("" for a nil Run).
func (r *Run) ID() string {
	if r == nil {
		return ""
	}
	return r.id
}

// Start sends START (once).
func (r *Run) Start() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.ended {
		return
	}
	r.started = true
	r.lastRunning = time.Now()
	r.c.emit(r.event(Start, "", time.Now()))
}

// Checkpoint sends RUNNING for a completed checkpoint, unless the run's
// last START or RUNNING is younger than the RunningInterval.
func (r *Run) Checkpoint() {
	if r == nil || r.c.cfg.RunningInterval < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if !r.started || r.ended || now.Sub(r.lastRunning) < r.c.cfg.RunningInterval {
		return
	}
	r.lastRunning = now
	r.c.emit(r.event(Running, "", now))
}

// Complete, Fail and Abort end the run (the first end wins; a run that
// never started sends nothing).
func (r *Run) Complete()          { r.end(Complete, "") }
func (r *Run) Fail(reason string) { r.end(Fail, reason) }
func (r *Run) Abort()             { r.end(Abort, "") }

func (r *Run) end(typ, reason string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.ended {
		return
	}
	r.ended = true
	r.c.emit(r.event(typ, reason, time.Now()))
}
