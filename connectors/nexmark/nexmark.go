// Package nexmark is the Nexmark connector: a seeded generator of the
// Nexmark benchmark's event stream (persons, auctions and bids of an online
// auction) as a source, written straight into Arrow micro-batches. The
// SQL layer has flat tables, so the one stream is exposed as three tables
// ('table' = 'person' | 'auction' | 'bid'), each the deterministic slice
// of the same stream holding its kind of event: a bid names an auction and
// a person that exist earlier in the stream. See docs/nexmark.md.
package nexmark

import (
	"time"

	"github.com/clink-dev/clink/connectors"
)

// Connector is the 'nexmark' connector.
type Connector struct{}

var (
	_ connectors.SourceFactory = Connector{}
	_ connectors.Boundedness   = Connector{}
)

// commonOptions are the shared source options that apply to a generator
// (no format, no malformed records).
func commonOptions() []connectors.Option {
	var out []connectors.Option
	for _, o := range connectors.CommonSourceOptions {
		switch o.Name {
		case "connector", "event_time_column", "watermark_lag_ms", "allowed_lateness_ms":
			out = append(out, o)
		}
	}
	return out
}

var spec = &connectors.Spec{
	Name: "nexmark",
	Description: "The Nexmark benchmark's event stream, generated (seeded, deterministic at any parallelism): of every 50 events 1 is a person, 3 are auctions and 46 are bids, as in the standard generator. " +
		"Each table is one kind of event of the same stream. Columns are matched by name, any subset in any order: " +
		"person (id, name, emailAddress, creditCard, city, state, dateTime, extra), " +
		"auction (id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra), " +
		"bid (auction, bidder, price, channel, url, dateTime, extra); numbers are BIGINT, strings VARCHAR, dateTime and expires BIGINT epoch ms or TIMESTAMP(3). " +
		"Event time advances 1/events_per_second s per event. Checkpointed: the next event of each of 128 splits (epochs of 50 events, by epoch number mod 128; a subtask owns the splits whose number mod parallelism is its index). See docs/nexmark.md.",
	Guarantee: "Source: replayed exactly once from checkpoints (the next event of each split is state); the stream is a pure function of the seed, so a replay emits the same events.",
	Source:    true,
	Options: append(commonOptions(),
		connectors.Option{Name: "table", Type: connectors.Enum, Values: []string{"person", "auction", "bid"}, Required: true, Description: "which kind of event this table holds", Example: "bid"},
		connectors.Option{Name: "events", Type: connectors.Int, Description: "total events of the stream (all three kinds; the table holds its share of them): the table is bounded and ends after them; unbounded without it", Example: "10000000"},
		connectors.Option{Name: "seed", Type: connectors.Int, Default: "0", Description: "the random seed: tables with the same seed, events_per_second and base_time_ms are slices of one stream", Example: "42"},
		connectors.Option{Name: "events_per_second", Type: connectors.Int, Default: "100000", Description: "event-time rate: event i has dateTime = base_time_ms + i*1000/events_per_second (not wall-clock pacing unless pace = 'true')", Example: "10000"},
		connectors.Option{Name: "base_time_ms", Type: connectors.Int, Description: "event time (epoch ms) of the stream's first event; default 1767225600000 (2026-01-01 UTC), or with pace = 'true' the time the process started, so that event time is wall-clock time", Example: "1767225600000"},
		connectors.Option{Name: "pace", Type: connectors.Bool, Default: "false", Description: "emit each event no earlier than its event time on the wall clock (events_per_second events per second); a partly filled micro-batch leaves after the linger time", Example: "true"},
	),
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Bounded: a table with 'events' ends.
func (Connector) Bounded(opts connectors.Options) bool { return opts.Has("events") }

// processStart is the base time of paced streams without base_time_ms:
// every table of a job (in one process) shares it.
var processStart = time.Now().UnixMilli()
