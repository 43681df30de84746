package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	cflight "github.com/clink-dev/clink/flight"
)

// deployAttempt deploys one attempt of j on assign and returns why it
// failed ("" when it runs).
func deployAttempt(c *Coordinator, j *job, assign map[int]string) string {
	ctl := &controller{c: c, j: j}
	next := ctl.startAttempt(assign)
	ctl.endAttempt()
	if next != phaseRestarting {
		return ""
	}
	return ctl.reason
}

// TestWorkerLostDuringDeploy: a Worker lost between scheduling and
// deployment fails the attempt while the deploy calls to the other Workers
// are still answering with errors. Each of them writes the attempt's
// failure: run it with -race.
func TestWorkerLostDuringDeploy(t *testing.T) {
	c, err := NewCoordinator(CoordinatorConfig{FlightAddr: "127.0.0.1:0", HTTPAddr: "off", Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.srv.Shutdown()
	// One endpoint stands for every Worker: it refuses deployments.
	srv, err := cflight.NewServer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	handle(srv, actDeploy, func(context.Context, *deployReq) (any, error) { return nil, errors.New("no room") })
	handle(srv, actCancel, func(context.Context, *attemptRef) (any, error) { return nil, nil })
	go srv.Serve()
	defer srv.Shutdown()

	const n = 16
	assign := map[int]string{}
	for i := range n {
		id := fmt.Sprintf("w%02d", i)
		cl, err := cflight.Dial(srv.Addr(), "")
		if err != nil {
			t.Fatal(err)
		}
		c.workers[id] = &workerInfo{id: id, addr: srv.Addr(), slots: 1, lastBeat: time.Now(), cl: cl}
		assign[i] = id
	}
	assign[n] = "gone" // scheduled, then lost before its deployment
	j := &job{id: "1", name: "lost", parallelism: n + 1, state: StateCreated, events: make(chan event, 64)}
	c.jobs[j.id] = j
	// Map order decides whether a deploy call starts before the lost
	// Worker is seen: try a few times.
	for range 5 {
		c.mu.Lock()
		for _, w := range c.workers {
			w.used = w.slots
		}
		c.mu.Unlock()
		reason := deployAttempt(c, j, assign)
		if !strings.Contains(reason, "worker lost: gone") && !strings.Contains(reason, "no room") {
			t.Fatalf("attempt failure %q", reason)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.workers {
		if w.used != 0 {
			t.Errorf("%s: %d slots still used", w.id, w.used)
		}
	}
}
