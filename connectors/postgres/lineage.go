package postgres

import (
	"strconv"

	"github.com/clink-dev/clink/connectors"
)

var _ connectors.Lineage = Connector{}

// Dataset names the table by the OpenLineage conventions: namespace
// postgres://{host}:{port}, name {database}.{schema}.{table}, the schema
// "public" when the 'table' option names none (the default search path).
// A 'url' given as env://VAR is resolved here, in the process that emits
// the event; the user and password never appear.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	cs, err := connString(t.Options)
	if err != nil {
		return "", "", err
	}
	cfg, err := connConfig(t.Options, cs)
	if err != nil {
		return "", "", err
	}
	name := t.Name
	if n, ok := t.Options["table"]; ok && n != "" {
		name = n
	}
	tn, err := parseTableName(name)
	if err != nil {
		return "", "", err
	}
	schema := tn.schema
	if schema == "" {
		schema = "public"
	}
	return "postgres://" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)), cfg.Database + "." + schema + "." + tn.name, nil
}
