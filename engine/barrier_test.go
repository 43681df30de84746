package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// barrierSpy records, in order, the rows and barriers an operator sees
// and when its state is written: the runtime must write the state, then
// hand the barrier to OnBarrier, in band between the rows before it and
// the rows after it.
type barrierSpy struct {
	mu     sync.Mutex
	events []string
	rows   int
}

var (
	_ Operator       = (*barrierSpy)(nil)
	_ BarrierHandler = (*barrierSpy)(nil)
	_ Stateful       = (*barrierSpy)(nil)
)

func (s *barrierSpy) log(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *barrierSpy) Process(b *vector.Batch, out Output) error {
	s.rows += b.Len()
	return out.Emit(b)
}

func (s *barrierSpy) SnapshotState(*Snapshot) error {
	s.log(fmt.Sprintf("snapshot after %d rows", s.rows))
	return nil
}

func (s *barrierSpy) RestoreState(*Restore) error { return nil }

func (s *barrierSpy) OnBarrier(id uint64, out Output) error {
	s.log(fmt.Sprintf("barrier %d after %d rows", id, s.rows))
	return out.EmitBarrier(id)
}

func TestBarrierReachesOperatorInBand(t *testing.T) {
	spy := &barrierSpy{}
	src := &genSource{n: 1000, seed: 3, delay: 3 * time.Millisecond}
	db := &published{txns: map[string]bool{}}
	p := &Pipeline{Root: &Node{Source: src, SourceName: "gen", Ops: []Operator{spy}, Names: []string{"spy"}},
		Sink: &memSink{db: db, run: "r"}, SinkName: "out"}
	store, err := checkpoint.NewStore(t.TempDir(), checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunJob(context.Background(), []*Pipeline{p}, &CheckpointConfig{Store: store, Interval: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	barriers := 0
	for i, e := range spy.events {
		var id uint64
		var n int
		if _, err := fmt.Sscanf(e, "barrier %d after %d rows", &id, &n); err != nil {
			continue
		}
		barriers++
		if i == 0 || spy.events[i-1] != fmt.Sprintf("snapshot after %d rows", n) {
			t.Errorf("barrier %d: the state was not written just before it reached the operator: %v", id, spy.events[:i+1])
		}
	}
	if barriers == 0 {
		t.Fatalf("no barrier reached the operator: %v", spy.events)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.rows) != 1000 {
		t.Errorf("sink committed %d rows, want 1000", len(db.rows))
	}
}
