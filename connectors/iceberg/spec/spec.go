// Package spec is the light half of the 'iceberg' connector: its options.
// The sink (package connectors/iceberg, which links iceberg-go) registers
// them as its own; a slim build of clink (`-tags slim`, see
// docs/performance.md: iceberg-go's package initialization costs every
// start of a binary that links it about 0.15 s and 32 MB) registers
// Connector instead, which validates (Parse, the checks of both builds)
// and documents the options and refuses to open a sink with a plain error.
package spec

import (
	"errors"
	"fmt"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'iceberg' connector of a slim build: its options, and
// no sink.
type Connector struct{}

var _ connectors.SinkFactory = Connector{}

var deliveryGuarantee = func() connectors.Option {
	o := connectors.DeliveryGuaranteeOption
	o.Default = "exactly_once"
	o.Description = "'exactly_once' (needs checkpoints): the data files written between two checkpoints are added to the table in one snapshot when the checkpoint completes, tagged with its id, so that a re-commit after a crash finds it and does nothing; " +
		"'at_least_once' (and 'none', or a job without checkpoints): files are committed at every checkpoint, every commit_interval_ms and at the end of input, and a restarted job writes the rows after its checkpoint again"
	o.Example = "exactly_once"
	return o
}()

var spec = &connectors.Spec{
	Name: "iceberg",
	Description: "Appends rows to an Apache Iceberg table as Parquet data files, one snapshot per checkpoint (exactly once: a snapshot is tagged with its checkpoint's id, so a commit redone after a crash is recognized), in a SQL catalog (SQLite or PostgreSQL) or a REST catalog, with the warehouse on a local disk or S3. " +
		"The table is created from the Clink table's columns when missing. Changelogs are refused. See docs/iceberg.md.",
	Guarantee: "Sink: **exactly-once** with checkpoints: one snapshot per checkpoint and sink subtask, tagged with the checkpoint id, so a re-commit after recovery adds nothing; data files written before their checkpoint completes are invisible.",
	Sink:      true,
	Options: []connectors.Option{
		{Name: "connector", Type: connectors.String, Required: true, Description: "the connector name", Example: "iceberg"},
		deliveryGuarantee,
		{Name: "catalog_type", Aliases: []string{"catalog-type"}, Type: connectors.Enum, Values: []string{"sql", "rest"}, Default: "sql", Description: "the catalog: 'sql' (a SQL database holds the tables' metadata pointers: SQLite or PostgreSQL) or 'rest' (an Iceberg REST catalog server; not tested with Clink, see docs/iceberg.md)", Example: "sql"},
		{Name: "catalog_uri", Aliases: []string{"uri"}, Type: connectors.String, Required: true, Description: "sql: the catalog database, a SQLite file (`sqlite:///path/catalog.db`, or a path ending in .db) or a PostgreSQL URL (`postgres://user@host:5432/db`); rest: the server's URL. A password in a URL is masked by `clink explain`; prefer 'catalog_password'", Example: "sqlite:///var/lib/lake/catalog.db"},
		{Name: "catalog_name", Aliases: []string{"catalog-name"}, Type: connectors.String, Default: "clink", Description: "the catalog's name (a SQL catalog database can hold several catalogs; readers must use the same name)", Example: "lake"},
		{Name: "catalog_password", Type: connectors.String, Secret: true, Description: "sql on PostgreSQL: the password, replacing one in catalog_uri; give it as `env://VAR` (a literal value is stored in the plan). Never logged", Example: "env://PGPASSWORD"},
		{Name: "warehouse", Type: connectors.String, Description: "where new tables go: a local directory or `s3://bucket/prefix` (a table is created at <warehouse>/<namespace>.db/<table>); needed by the SQL catalog, passed to a REST catalog as its warehouse", Example: "s3://lake/warehouse"},
		{Name: "namespace", Aliases: []string{"database", "catalog-database"}, Type: connectors.String, Default: "default", Description: "the table's namespace (Flink's database); dots separate levels", Example: "sensors"},
		{Name: "table", Aliases: []string{"catalog-table"}, Type: connectors.String, Description: "the Iceberg table's name; default: the Clink table's name", Example: "windows"},
		{Name: "create_table", Type: connectors.Bool, Default: "true", Description: "create the namespace and the table (unpartitioned, format version 2, columns typed from the Clink table's) when missing; false: a missing table fails the job", Example: "false"},
		{Name: "sink_id", Type: connectors.String, Description: "names this job's writes to the table: snapshots carry it as clink.sink, data files are named after it (clink-<hash of it>-...); default: the Clink table's name. It must differ between jobs writing one Iceberg table: recovery deletes the files of its sink id that no snapshot and no checkpoint references", Example: "windows-job"},
		{Name: "target_file_size", Type: connectors.String, Default: "128MB", Description: "a data file is closed when it reaches about this size, and at every checkpoint (bytes, or with KB, MB, GB)", Example: "512MB"},
		{Name: "commit_interval_ms", Type: connectors.Int, Default: "60000", Description: "at_least_once or without checkpoints: written rows are committed at least this often (and at every checkpoint and the end of input)", Example: "10000"},
		{Name: "parquet.compression", Type: connectors.Enum, Values: []string{"zstd", "snappy", "gzip", "none"}, Default: "zstd", Description: "the data files' compression codec", Example: "snappy"},
		{Name: "s3.endpoint", Aliases: []string{"s3.endpoint-url"}, Type: connectors.String, Description: "S3 warehouse: the endpoint URL (MinIO and other S3-compatible servers); default AWS", Example: "http://127.0.0.1:9000"},
		{Name: "s3.region", Type: connectors.String, Description: "S3 warehouse: the bucket's region (default us-east-1 with an s3.endpoint, which S3-compatible servers ignore)", Example: "eu-west-1"},
		{Name: "s3.access_key", Aliases: []string{"s3.access-key"}, Type: connectors.String, Secret: true, Description: "S3 warehouse: the access key id; `env://VAR` reads it from the environment. Without it: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, then the instance's IAM role", Example: "env://AWS_ACCESS_KEY_ID"},
		{Name: "s3.secret_key", Aliases: []string{"s3.secret-key"}, Type: connectors.String, Secret: true, Description: "S3 warehouse: the secret access key; give it as `env://VAR` (a literal value is stored in the plan). Never logged", Example: "env://AWS_SECRET_ACCESS_KEY"},
		{Name: "s3.session_token", Type: connectors.String, Secret: true, Description: "S3 warehouse: a session token for temporary credentials (`env://VAR`)", Example: "env://AWS_SESSION_TOKEN"},
		{Name: "s3.path_style", Aliases: []string{"s3.path.style.access"}, Type: connectors.Bool, Description: "S3 warehouse: address buckets as endpoint/bucket (MinIO) instead of bucket.endpoint; default true with an s3.endpoint, false without", Example: "true"},
		{Name: "rest.token", Type: connectors.String, Secret: true, Description: "rest: a bearer token for the catalog server (`env://VAR`). Never logged", Example: "env://ICEBERG_TOKEN"},
		{Name: "rest.credential", Type: connectors.String, Secret: true, Description: "rest: an OAuth2 client credential `client_id:client_secret` exchanged for a token (`env://VAR`). Never logged", Example: "env://ICEBERG_CREDENTIAL"},
	},
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Spec describes the connector's options (for package connectors/iceberg).
func Spec() *connectors.Spec { return spec }

// ErrSlim is what a slim build answers for an Iceberg sink.
var ErrSlim = errors.New("this clink is a slim build (go build -tags slim) without the Iceberg sink; use a build without the tag (go install ./cmd/clink)")

var _ connectors.SinkValidator = Connector{}

// ValidateSink checks the options as the sink of a full build does
// (Parse), and accepts a valid table: `clink explain` and a client
// submitting to a cluster check the plan, which the cluster's Workers,
// built with the sink, run. NewSink, where the job runs, refuses.
func (Connector) ValidateSink(t *connectors.Table) error {
	_, err := Parse(t)
	return err
}

// NewSink refuses: a slim build links no Iceberg library. A table with
// invalid options is refused for them first, as a full build refuses it.
func (Connector) NewSink(t *connectors.Table) (engine.Sink, error) {
	if _, err := Parse(t); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("iceberg sink '%s': %w", t.Name, ErrSlim)
}
