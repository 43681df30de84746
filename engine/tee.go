package engine

import (
	"context"
	"fmt"

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
	ch []chan Message
	binding
}

func newTee(readers, depth int) *tee {
	t := &tee{ch: make([]chan Message, readers), binding: newBinding()}
	for i := range t.ch {
		t.ch[i] = make(chan Message, depth)
	}
	return t
}

// teeSink is the tee's sending end.
type teeSink struct{ t *tee }

// send gives every channel m, each a batch of its own over the shared
// record.
func (s *teeSink) send(m Message) error {
	t := s.t
	for i, ch := range t.ch {
		c, last := m, i == len(t.ch)-1
		if m.Batch != nil && !last {
			b := *m.Batch
			b.Rec.Retain()
			if b.Sel != nil {
				b.Sel = append([]int32(nil), b.Sel...)
			}
			c.Batch = &b
		}
		if err := t.send(ch, c); err != nil { // c's batch released
			if m.Batch != nil && !last {
				m.Batch.Release() // the last channel's, never sent
			}
			return err
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
func (s *teeSink) end() error                       { return endStream(s.send) }
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
	return runMerged(ctx, []<-chan Message{s.t.ch[s.k]}, emit)
}

var teeSig = checkpoint.Signature{"kind": "source", "table": "tee"}
