package blackhole

import "github.com/clink-dev/clink/connectors"

var _ connectors.Lineage = Connector{}

// Dataset names the table in Clink's own namespace, clink://blackhole: it lives
// in no external system.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	return connectors.ClinkNamespace("blackhole"), t.Name, nil
}
