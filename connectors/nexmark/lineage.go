package nexmark

import "github.com/clink-dev/clink/connectors"

var _ connectors.Lineage = Connector{}

// Dataset names the table in Clink's own namespace, clink://nexmark: it lives
// in no external system.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	return connectors.ClinkNamespace("nexmark"), t.Name, nil
}
