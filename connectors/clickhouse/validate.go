package clickhouse

import (
	"maps"

	"github.com/clink-dev/clink/connectors"
)

var _ connectors.SinkValidator = Connector{}

// ValidateSink refuses 'exactly_once' and checks the options, without a
// connection. The password is not resolved: an env:// secret is read where
// the sink runs, which may not be where the plan is checked.
func (Connector) ValidateSink(t *connectors.Table) error {
	if t.Options["delivery_guarantee"] == "exactly_once" {
		return connectors.ExactlyOnceRefused(t, "clickhouse", "an INSERT (over HTTP or the native protocol) is applied at once and cannot be staged until a checkpoint completes; a restart inserts the rows after the restored checkpoint again, which a ReplacingMergeTree table collapses")
	}
	o := maps.Clone(t.Options)
	delete(o, "password")
	_, err := newConfig(o)
	return err
}
