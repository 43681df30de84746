// Package file is the file connector: a bounded JSON-lines source over a
// file or a directory, and a JSON-lines sink writing into a directory.
package file

import (
	"fmt"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/engine"
)

// Connector is the 'file' connector.
type Connector struct {
	// Lake opens the sink of a table written as Parquet or to an object
	// store (package connectors/objectstore; connectors/builtin sets it):
	// a field, not an import, because no connector imports another.
	Lake func(t *connectors.Table) (engine.Sink, error)
	// ValidateLake makes Lake's checks that need no I/O (the connector's
	// SinkValidator for such a table); nil: none.
	ValidateLake func(t *connectors.Table) error
}

var spec = &connectors.Spec{
	Name:        "file",
	Description: "JSON lines in local files; as a sink also typed Parquet files in a local directory or an object store (s3://, gs://, azure://; see docs/objectstore.md). As a source: one JSON-lines file, or every file in a directory (sorted by name; each file is one partition), read once (bounded). As a sink: one JSON-lines file, part files in a directory, or Parquet files published with checkpoints.",
	Guarantee:   "Source: replayed exactly once from checkpoints (byte offset per file). Sink: **exactly-once** with checkpoints by default (rows staged per checkpoint and appended to the part files, or for `format = 'parquet'` staged objects published, when the checkpoint completes); `delivery_guarantee = 'at_least_once'` writes directly and flushes at every checkpoint; `mode = 'upsert'` is at-least-once (`exactly_once` refused).",
	Source:      true,
	Sink:        true,
	Options: append(append(sourceOptions(),
		connectors.Option{Name: "path", Type: connectors.String, Required: true, Description: "source: a file or a directory of files; sink: a file when the path ends in .jsonl, .json or .ndjson, else a directory that receives part files (part-<subtask>.jsonl); with 'format' = 'parquet' a directory or an object-store prefix: s3://bucket/prefix, gs://bucket/prefix, azure://container/prefix", Example: "data/readings.jsonl"},
		connectors.Option{Name: "mode", Type: connectors.Enum, Values: []string{"append", "upsert"}, Default: "append", Description: "sink: 'append' writes every row; 'upsert' applies a changelog by primary_key and writes the resulting table at each flush (JSON only)", Example: "upsert"},
		connectors.Option{Name: "primary_key", Type: connectors.String, Description: "sink, upsert mode: comma-separated key columns (or PRIMARY KEY (...) NOT ENFORCED in CREATE TABLE)", Example: "sensor_id"},
		connectors.DeliveryGuaranteeOption,
	), objectStoreOptions...),
}

// sourceOptions are the common source options with a 'format' that also
// names Parquet (a sink format: the file source reads JSON lines).
func sourceOptions() []connectors.Option {
	opts := append(append([]connectors.Option{}, connectors.CommonSourceOptions...), connectors.ScanParallelismOption)
	for i := range opts {
		if opts[i].Name == "format" {
			opts[i].Values = []string{"json", "parquet"}
			opts[i].Description = "record format: 'json' (JSON lines; sources and sinks) or 'parquet' (sinks: typed Parquet files from the table's schema)"
		}
	}
	return opts
}

// objectStoreOptions are read by the Parquet / object-store sink (package
// connectors/objectstore); they are declared here, with the connector's
// other options, so that one spec validates and documents them.
var objectStoreOptions = []connectors.Option{
	{Name: "staging_path", Type: connectors.String, Description: "Parquet sink: where files wait for their checkpoint to complete, in the same bucket (or file system) as 'path' and not under it; one per sink. Default: the sibling _clink_staging/<last segment of path>", Example: "s3://lake/_staging/sensor_windows"},
	{Name: "rolling_max_bytes", Aliases: []string{"sink.rolling-policy.file-size"}, Type: connectors.String, Default: "128MB", Description: "Parquet sink: a file is closed (and a new one begun) once it holds about this many bytes: a number of bytes, or with a unit (KB, MB, GB); files are closed at every checkpoint too", Example: "64MB"},
	{Name: "rolling_interval_ms", Aliases: []string{"sink.rolling-policy.rollover-interval"}, Type: connectors.String, Default: "1800000", Description: "Parquet sink: a file is closed once it has been open this long: milliseconds, or a duration with a unit ('15 min', '30s')", Example: "60000"},
	{Name: "parquet.compression", Type: connectors.Enum, Values: []string{"zstd", "snappy", "gzip", "none"}, ValueAliases: map[string]string{"ZSTD": "zstd", "SNAPPY": "snappy", "GZIP": "gzip", "UNCOMPRESSED": "none", "uncompressed": "none"}, Default: "zstd", Description: "Parquet sink: the column chunks' compression codec", Example: "snappy"},
	{Name: "s3.endpoint", Aliases: []string{"s3.endpoint-url"}, Type: connectors.String, Description: "S3: the endpoint, host[:port] or a URL (http:// turns TLS off); default AWS's s3.amazonaws.com", Example: "http://127.0.0.1:9000"},
	{Name: "s3.region", Type: connectors.String, Description: "S3: the bucket's region (default: asked of the endpoint)", Example: "eu-west-1"},
	{Name: "s3.access_key", Aliases: []string{"s3.access-key"}, Type: connectors.String, Secret: true, Description: "S3: the access key id; `env://VAR` reads it from the environment. Without it: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ~/.aws/credentials, then the instance's IAM role", Example: "env://AWS_ACCESS_KEY_ID"},
	{Name: "s3.secret_key", Aliases: []string{"s3.secret-key"}, Type: connectors.String, Secret: true, Description: "S3: the secret access key; give it as `env://VAR` (a literal value is stored in the plan). Never logged", Example: "env://AWS_SECRET_ACCESS_KEY"},
	{Name: "s3.session_token", Type: connectors.String, Secret: true, Description: "S3: a session token for temporary credentials (`env://VAR`)", Example: "env://AWS_SESSION_TOKEN"},
	{Name: "s3.path_style", Aliases: []string{"s3.path.style.access"}, Type: connectors.Bool, Default: "false", Description: "S3: address buckets as endpoint/bucket (MinIO and most S3-compatible servers) instead of bucket.endpoint", Example: "true"},
	{Name: "gcs.endpoint", Type: connectors.String, Description: "GCS: the JSON API endpoint of an emulator or proxy (default Google's); with it and no credentials file, requests are anonymous", Example: "http://127.0.0.1:4443/storage/v1/"},
	{Name: "gcs.credentials_file", Type: connectors.String, Description: "GCS: a service-account JSON key file; default the application default credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud, the metadata server)", Example: "/etc/clink/gcs-key.json"},
	{Name: "azure.account", Type: connectors.String, Description: "Azure Blob: the storage account (default AZURE_STORAGE_ACCOUNT)", Example: "mylake"},
	{Name: "azure.secret_key", Type: connectors.String, Secret: true, Description: "Azure Blob: the storage account's shared key (its access key); give it as `env://VAR` (a literal value is stored in the plan). Default AZURE_STORAGE_KEY. Never logged", Example: "env://AZURE_STORAGE_KEY"},
	{Name: "azure.endpoint", Type: connectors.String, Description: "Azure Blob: the blob service URL, e.g. an Azurite emulator's (http://host:port/<account>); default https://<account>.blob.core.windows.net", Example: "http://127.0.0.1:10000/devstoreaccount1"},
}

// AcceptsUpdates: a file sink consumes a changelog only in upsert mode.
func (Connector) AcceptsUpdates(opts connectors.Options) error {
	if opts["mode"] != "upsert" || opts["primary_key"] == "" {
		return fmt.Errorf("the file sink applies updates only with 'mode' = 'upsert' and a 'primary_key'")
	}
	return nil
}

// Spec describes the connector's options.
func (Connector) Spec() *connectors.Spec { return spec }

// Bounded: a file source ends when every file has been read.
func (Connector) Bounded(connectors.Options) bool { return true }
