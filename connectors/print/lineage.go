package print

import "github.com/clink-dev/clink/connectors"

var _ connectors.Lineage = Connector{}

// Dataset names the table in Clink's own namespace, clink://print: it lives
// in no external system.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	return connectors.ClinkNamespace("print"), t.Name, nil
}
