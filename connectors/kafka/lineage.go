package kafka

import "github.com/clink-dev/clink/connectors"

var _ connectors.Lineage = Connector{}

// Dataset names the topic by the OpenLineage conventions: namespace
// kafka://{first bootstrap broker host:port}, name the topic.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	return "kafka://" + connectors.FirstHostPort(t.Options["brokers"], "9092"), t.Options["topic"], nil
}
