// Package objectstore writes a file-connector table as typed Parquet files
// to a local directory or an object store (s3://, gs://, azure://), staged
// and published with checkpoints. connectors/builtin hands NewSink to the
// file connector (file.Connector.Lake), which declares the options.
//
// A sink writes one Parquet file at a time per subtask, typed from the
// table's Arrow schema. A file is closed when it reaches
// rolling_max_bytes, when it has been open rolling_interval_ms, and at
// every checkpoint barrier (PreCommit); a closed file is uploaded to the
// staging prefix, which is not under the published one. With checkpoints
// (exactly once, TxSink) the checkpoint records each staged file with its
// final name, and Commit publishes it once the checkpoint completes: a
// server-side copy to the final name, then the staging object is deleted
// (a rename on a local file system). Readers of the published prefix thus
// never see a partial file or rows of a checkpoint that did not complete.
// See docs/objectstore.md.
package objectstore
