package connectors

import "strings"

// Lineage is implemented by factories that can name a table's dataset the
// way the OpenLineage naming conventions do
// (https://openlineage.io/docs/spec/naming): Kafka
// kafka://{bootstrap host:port} and the topic, S3 s3://{bucket} and the
// key, PostgreSQL postgres://{host}:{port} and
// {database}.{schema}.{table}, and so on. Like SinkValidator it must not
// do I/O; it may resolve a secret (env://) where the connection string
// holds the host, and must never put a password in either part.
// A factory without it (or that returns "", "") gives the table no
// dataset in lineage events.
type Lineage interface {
	Dataset(t *Table) (namespace, name string, err error)
}

// ClinkNamespace is the dataset namespace of tables that live in no
// external system (generated input, printed or discarded output): the
// dataset is named by the connector, clink://{connector}, and the table.
func ClinkNamespace(connector string) string { return "clink://" + connector }

// FirstHostPort returns the first of a comma-separated list of
// host:port addresses, trimmed; def is the port of an address without
// one.
func FirstHostPort(list, def string) string {
	first, _, _ := strings.Cut(list, ",")
	first = strings.TrimSpace(first)
	if i := strings.LastIndex(first, ":"); i < 0 || strings.HasSuffix(first, "]") {
		first += ":" + def
	}
	return first
}
