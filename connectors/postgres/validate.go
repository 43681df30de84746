package postgres

import "github.com/clink-dev/clink/connectors"

var _ connectors.SinkValidator = Connector{}

// ValidateSink makes NewSink's option checks (checkConfig) without a
// connection: the secrets ('url', 'password') are not resolved, and the
// connection string is not parsed, because pgx reads files (~/.pgpass, TLS
// certificates) as it parses; both happen where the sink runs.
func (Connector) ValidateSink(t *connectors.Table) error {
	_, _, err := checkConfig(t)
	return err
}
