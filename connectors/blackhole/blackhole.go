// Package blackhole is the blackhole connector: a sink that discards every
// row, as in Flink. Benchmarks measure the engine with it.
package blackhole

import (
	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
	"github.com/clink-dev/clink/vector"
)

// Connector is the 'blackhole' connector.
type Connector struct{}

var spec = &connectors.Spec{
	Name:        "blackhole",
	Description: "Discards every row (counting them). For benchmarks and for jobs run only for their side effects.",
	Guarantee:   "Sink: discards every row, so there is nothing to deliver; `delivery_guarantee = 'exactly_once'` is refused.",
	Sink:        true,
	Options:     append([]connectors.Option{}, connectors.CommonSinkOptions...),
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

var _ connectors.SinkValidator = Connector{}

// ValidateSink refuses 'exactly_once'.
func (Connector) ValidateSink(t *connectors.Table) error {
	if t.Options["delivery_guarantee"] == "exactly_once" {
		return connectors.ExactlyOnceRefused(t, "blackhole", "it keeps no transactions")
	}
	return nil
}

// NewSink returns a discarding sink.
func (c Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	if err := c.ValidateSink(t); err != nil {
		return nil, err
	}
	return &Sink{}, nil
}

// Sink counts and drops rows.
type Sink struct{ rows int64 }

var (
	_ engine.Sink          = (*Sink)(nil)
	_ engine.StatsReporter = (*Sink)(nil)
)

// Write drops the batch.
func (s *Sink) Write(b *vector.Batch) error {
	s.rows += int64(b.Len())
	b.Release()
	return nil
}

// Flush does nothing.
func (s *Sink) Flush() error { return nil }

// Close does nothing.
func (s *Sink) Close() error { return nil }

// Stats reports rows discarded.
func (s *Sink) Stats() map[string]int64 { return map[string]int64{"rows_discarded": s.rows} }

// AcceptsUpdates: the blackhole discards changelogs too.
func (Connector) AcceptsUpdates(connectors.Options) error { return nil }
