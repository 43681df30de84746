// Package objectstore writes a file-connector table as typed Parquet files
// to a local directory or an object store (s3://, gs://, azure://), staged
// and published with checkpoints. Linking it sets connectors.LakeSink; it
// is linked into clink-lake and clink-cluster, not into clink.
package objectstore
