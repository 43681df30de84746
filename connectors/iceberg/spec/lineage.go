package spec

import (
	"net/url"
	"strings"

	"github.com/clink-dev/clink/connectors"
)

var _ connectors.Lineage = Connector{}

// Dataset names an Iceberg table by its catalog and table: namespace the
// catalog's URI without its user and password (sqlite:///…/catalog.db,
// postgres://host:5432/db, or the REST server's https:// URL), name
// {catalog_name}.{namespace}.{table}. The OpenLineage conventions list no
// Iceberg catalog form of their own; this is the table's identity as
// Iceberg readers address it, and needs no I/O (a table's location would).
func Dataset(t *connectors.Table) (string, string, error) {
	c, err := Parse(t)
	if err != nil {
		return "", "", err
	}
	ns := c.URI
	if u, err := url.Parse(ns); err == nil && u.User != nil {
		u.User = nil
		ns = u.String()
	}
	return ns, c.CatalogName + "." + strings.Join(c.Namespace, ".") + "." + c.Table, nil
}

// Dataset names the table (package function Dataset).
func (Connector) Dataset(t *connectors.Table) (string, string, error) { return Dataset(t) }
