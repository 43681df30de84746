package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/clink-dev/clink/checkpoint"
	cflight "github.com/clink-dev/clink/flight"
)

// Pins of a job's checkpoints for readers in other processes (clink
// state-export --job, state-cat --job): the Coordinator, which prunes,
// keeps a pinned checkpoint until the reader releases it or its lease
// lapses (a reader that died does not hold it for ever). A reader renews
// its pin every third of the lease.

// DefaultPinLease is how long a pin lasts unrenewed.
const DefaultPinLease = 60 * time.Second

// PinRequest asks for a pin: of the job's newest completed checkpoint
// (Pin empty), or renews (Renew) or releases (Release) pin Pin.
type PinRequest struct {
	Job     string `json:"job,omitempty"`
	Pin     string `json:"pin,omitempty"`
	Renew   bool   `json:"renew,omitempty"`
	Release bool   `json:"release,omitempty"`
	LeaseMS int64  `json:"lease_ms,omitempty"`
}

// PinResponse names the pinned checkpoint.
type PinResponse struct {
	Pin        string `json:"pin"`
	Checkpoint uint64 `json:"checkpoint"`
	// Path is the checkpoint's directory (chk-N), as the Coordinator and
	// the Workers see it (a shared path or an object-store URL).
	Path    string `json:"path"`
	LeaseMS int64  `json:"lease_ms"`
}

type pin struct {
	unpin   func()
	expires time.Time
	lease   time.Duration
	resp    PinResponse
}

type pinTable struct {
	mu sync.Mutex
	m  map[string]*pin
}

// pinAction serves actPin.
func (c *Coordinator) pinAction(_ context.Context, r *PinRequest) (any, error) {
	if err := c.notLeader(); err != nil {
		return nil, err
	}
	c.pins.mu.Lock()
	if c.pins.m == nil {
		c.pins.m = map[string]*pin{}
	}
	c.pins.mu.Unlock()
	if r.Pin != "" {
		c.pins.mu.Lock()
		defer c.pins.mu.Unlock()
		p, ok := c.pins.m[r.Pin]
		if !ok {
			return nil, fmt.Errorf("no pin %s (released, or its lease lapsed)", r.Pin)
		}
		if r.Release {
			p.unpin()
			delete(c.pins.m, r.Pin)
			return &p.resp, nil
		}
		p.expires = time.Now().Add(p.lease)
		return &p.resp, nil
	}
	c.mu.Lock()
	j, ok := c.jobs[r.Job]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no job %s", r.Job)
	}
	if j.store == nil {
		return nil, fmt.Errorf("job %s has no checkpoints (no checkpoint directory)", r.Job)
	}
	lease := time.Duration(r.LeaseMS) * time.Millisecond
	if lease <= 0 {
		lease = DefaultPinLease
	}
	// Retention may remove the newest checkpoint between Latest and Pin:
	// pin, then check that it is still whole.
	for range 5 {
		id, ok, err := j.store.Latest()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("job %s has no completed checkpoint yet", r.Job)
		}
		unpin := checkpoint.Pin(j.store.Dir(), id)
		if _, err := j.store.Open(id); err != nil {
			unpin()
			continue
		}
		var b [8]byte
		rand.Read(b[:])
		p := &pin{unpin: unpin, lease: lease, expires: time.Now().Add(lease),
			resp: PinResponse{Pin: hex.EncodeToString(b[:]), Checkpoint: id, Path: j.store.Path(id), LeaseMS: lease.Milliseconds()}}
		c.pins.mu.Lock()
		c.pins.m[p.resp.Pin] = p
		c.pins.mu.Unlock()
		return &p.resp, nil
	}
	return nil, fmt.Errorf("job %s: its checkpoints were removed as fast as they were pinned; try again", r.Job)
}

// expirePins releases the pins whose lease lapsed.
func (c *Coordinator) expirePins() {
	now := time.Now()
	c.pins.mu.Lock()
	defer c.pins.mu.Unlock()
	for id, p := range c.pins.m {
		if now.After(p.expires) {
			p.unpin()
			delete(c.pins.m, id)
		}
	}
}

// PinCheckpoint pins the newest completed checkpoint of job on the
// Coordinator at addr (its Flight or HTTP API address, or a list of HA
// Coordinators) and renews the pin until release is called.
func PinCheckpoint(ctx context.Context, addr, token, job string, opts ...cflight.Option) (resp *PinResponse, release func(), err error) {
	resp, via, err := callCoordinator[PinResponse](ctx, addr, token, actPin, &PinRequest{Job: job}, opts...)
	if err != nil {
		return nil, nil, err
	}
	if via != "" {
		addr = via
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Duration(resp.LeaseMS) * time.Millisecond / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				callCoordinator[PinResponse](context.Background(), addr, token, actPin, &PinRequest{Pin: resp.Pin, Renew: true}, opts...)
			}
		}
	}()
	var once sync.Once
	return resp, func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			callCoordinator[PinResponse](context.Background(), addr, token, actPin, &PinRequest{Pin: resp.Pin, Release: true}, opts...)
		})
	}, nil
}
