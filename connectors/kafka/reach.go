package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unreachableAfter is how long a client's broker requests fail, with none
// succeeding, before a warning says so (a variable for tests).
var unreachableAfter = 5 * time.Second

// reach watches whether a source's or sink's clients reach the brokers.
// franz-go retries a lost broker by itself, so an outage shows in no
// error: a job reading a topic just reads nothing. Its hooks (kgo.WithHooks)
// see every connection and every response: when requests have failed for
// unreachableAfter with none succeeding, reach warns once, naming the
// brokers and the last error, and when a request succeeds again it says
// after how long. Any success counts: with several brokers, one of them
// down while the others answer is not an outage of the system.
type reach struct {
	what    string // "kafka source 'readings' (topic readings)"
	brokers string
	out     io.Writer

	mu      sync.Mutex
	since   time.Time // the first failure since the last success; zero while reachable
	lastErr error
	warned  bool
	done    chan struct{}
	stop    sync.Once
}

// newReach starts watching; out nil: no warnings (and no goroutine).
func newReach(what, brokers string, out io.Writer) *reach {
	r := &reach{what: what, brokers: brokers, out: out, done: make(chan struct{})}
	if out != nil {
		go r.watch()
	}
	return r
}

// opt is the client option that feeds r.
func (r *reach) opt() kgo.Opt { return kgo.WithHooks(r) }

// close stops watching (a warning given stays given).
func (r *reach) close() { r.stop.Do(func() { close(r.done) }) }

func (r *reach) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	r.observe(err)
}

func (r *reach) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	r.observe(err)
}

func (r *reach) observe(err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed)) {
		return // ours, not the broker's
	}
	now := time.Now()
	r.mu.Lock()
	if err != nil {
		if r.since.IsZero() {
			r.since = now
		}
		r.lastErr = err
		r.mu.Unlock()
		return
	}
	since, warned := r.since, r.warned
	r.since, r.lastErr, r.warned = time.Time{}, nil, false
	r.mu.Unlock()
	if warned && r.out != nil {
		fmt.Fprintf(r.out, "%s clink: %s: brokers %s reachable again after %s\n", stamp(now), r.what, r.brokers, now.Sub(since).Round(100*time.Millisecond))
	}
}

func (r *reach) watch() {
	t := time.NewTicker(max(unreachableAfter/5, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case now := <-t.C:
			r.mu.Lock()
			warn := !r.since.IsZero() && !r.warned && now.Sub(r.since) >= unreachableAfter
			since, lastErr := r.since, r.lastErr
			if warn {
				r.warned = true
			}
			r.mu.Unlock()
			if warn {
				fmt.Fprintf(r.out, "%s clink: warning: %s: cannot reach brokers %s for %s: %v (retrying)\n", stamp(now), r.what, r.brokers, now.Sub(since).Round(100*time.Millisecond), lastErr)
			}
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
