package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/vector"
)

// tee is a local one-to-many forward edge within one subtask: a source
// read by several nodes of a parallel plan (a self-join, a table joined
// with an aggregate of itself) runs once, in a pipeline of its own whose
// sink is the tee, and each reading node reads one of the tee's channels.
// The readings may then sit on either side of keyed exchanges. Every
// channel carries every message, in order.
type tee struct {
	ch      []chan Message
	ctx     context.Context
	bound   chan struct{}
	bindOne sync.Once
}

func newTee(readers, depth int) *tee {
	t := &tee{ch: make([]chan Message, readers), bound: make(chan struct{})}
	for i := range t.ch {
		t.ch[i] = make(chan Message, depth)
	}
	return t
}

func (t *tee) bind(ctx context.Context) {
	t.bindOne.Do(func() {
		t.ctx = ctx
		close(t.bound)
	})
}

// teeSink is the tee's sending end.
type teeSink struct{ t *tee }

// send gives every channel m, each a batch of its own over the shared
// record.
func (s *teeSink) send(m Message) error {
	t := s.t
	<-t.bound
	for i, ch := range t.ch {
		c := m
		if m.Batch != nil && i < len(t.ch)-1 {
			b := *m.Batch
			b.Rec.Retain()
			if b.Sel != nil {
				b.Sel = append([]int32(nil), b.Sel...)
			}
			c.Batch = &b
		}
		select {
		case ch <- c:
		case <-t.ctx.Done():
			if m.Batch != nil {
				for range t.ch[i:] {
					m.Batch.Rec.Release()
				}
			}
			return t.ctx.Err()
		}
	}
	return nil
}

func (s *teeSink) Write(b *vector.Batch) error { return s.send(Message{Kind: KindData, Batch: b}) }
func (s *teeSink) watermark(wm int64) error {
	return s.send(Message{Kind: KindWatermark, Watermark: wm})
}
func (s *teeSink) status(idle bool) error { return s.send(statusMessage(idle)) }
func (s *teeSink) barrier(id uint64) error {
	return s.send(Message{Kind: KindBarrier, Checkpoint: id})
}
func (s *teeSink) end() error {
	if err := s.send(Message{Kind: KindWatermark, Watermark: MaxWatermark}); err != nil {
		return err
	}
	return s.send(Message{Kind: KindEnd})
}
func (s *teeSink) Flush() error                     { return nil }
func (s *teeSink) Close() error                     { return nil }
func (s *teeSink) bindExchange(ctx context.Context) { s.t.bind(ctx) }

// teeSource is reading k of the tee: it passes the channel's messages on.
// It keeps no state (the source behind the tee does).
type teeSource struct {
	t *tee
	k int
}

func (s *teeSource) SetBarriers(*Barriers)            {}
func (s *teeSource) SnapshotState(*Snapshot) error    { return nil }
func (s *teeSource) RestoreState(*Restore) error      { return nil }
func (s *teeSource) Stats() map[string]int64          { return nil }
func (s *teeSource) String() string                   { return fmt.Sprintf("tee-%d", s.k) }
func (s *teeSource) bindExchange(ctx context.Context) { s.t.bind(ctx) }
func (s *teeSource) Run(ctx context.Context, emit func(Message) error) error {
	d := &driver{in: []<-chan Message{s.t.ch[s.k]}, ctx: ctx}
	ended, err := d.run(mergeTask{emit})
	if err != nil {
		return err
	}
	if !ended {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

var teeSig = checkpoint.Signature{"kind": "source", "table": "tee"}
