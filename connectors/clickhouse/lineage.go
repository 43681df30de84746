package clickhouse

import (
	"strconv"

	"github.com/clink-dev/clink/connectors"
)

var _ connectors.Lineage = Connector{}

// Dataset names the table by the OpenLineage conventions: namespace
// clickhouse://{host}:{port}, name {database}.{table}.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	o := t.Options
	return "clickhouse://" + o["host"] + ":" + strconv.FormatInt(o.Int("port"), 10), o["database"] + "." + o["table"], nil
}
