package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/connectors/builtin"
)

// TestWorkerWarnsLostCoordinator: a Worker whose only Coordinator stops
// answering says so after three heartbeats, once, and says when a
// Coordinator answers on that address again.
func TestWorkerWarnsLostCoordinator(t *testing.T) {
	log := &syncBuf{}
	start := func(addr string) (*Coordinator, func()) {
		c, err := NewCoordinator(CoordinatorConfig{FlightAddr: addr, HTTPAddr: "off", Heartbeat: 100 * time.Millisecond, Connectors: builtin.Registry(), Log: log})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx); close(done) }()
		return c, func() { cancel(); <-done }
	}
	c, stop := start("127.0.0.1:0")
	addr := c.FlightAddr()
	w, err := NewWorker(WorkerConfig{ID: "w1", Coordinator: addr, Slots: 1, Connectors: builtin.Registry(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitLog := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), want); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", want, log.String())
			}
		}
	}
	waitLog("registered with " + addr)
	stop()
	waitLog("warning: the Coordinator at " + addr + " has not answered for")
	time.Sleep(500 * time.Millisecond)
	if n := strings.Count(log.String(), "has not answered for"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, log.String())
	}
	_, stop = start(addr)
	defer stop()
	waitLog("the Coordinator at " + addr + " answers again after")
	waitLog("registered with " + addr) // the new Coordinator did not know it
	if n := strings.Count(log.String(), "registered with "+addr); n != 2 {
		t.Fatalf("registered %d times:\n%s", n, log.String())
	}
}
