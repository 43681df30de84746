package objectstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/clink-dev/clink/connectors"
)

// Validate refuses what NewSink refuses without I/O, in its words.
func TestValidateRefuses(t *testing.T) {
	for _, c := range []struct {
		opts connectors.Options
		want string
	}{
		{connectors.Options{"path": "s3://b/p", "format": "json"}, "sink 't': object stores take 'format' = 'parquet' (JSON lines are written to local files only)"},
		{connectors.Options{"path": "s3://b/p", "mode": "upsert"}, "sink 't': the Parquet sink appends; 'mode' = 'upsert' writes JSON lines only"},
		{connectors.Options{"path": "ftp://b/p"}, "option 'path': unknown scheme ftp:// (s3://, gs://, azure://, or a local directory)"},
		{connectors.Options{"path": "s3:///p"}, "option 'path': s3:///p has no bucket (s3://bucket/prefix)"},
		{connectors.Options{"path": "s3://b"}, "path s3://b/ is a bucket's root: give 'staging_path' (another bucket's root cannot be used: staging must be in the same bucket, not under the path), or write under a prefix"},
		{connectors.Options{"path": "s3://b/p", "staging_path": "gs://b/s"}, "option 'staging_path' (gs://b/s) must be in the same store and bucket as 'path' (s3://b/p): files are published by a server-side copy or a rename"},
		{connectors.Options{"path": "s3://b/p", "rolling_max_bytes": "big"}, "option 'rolling_max_bytes': 'big' is not a positive size (bytes, or with KB, MB, GB)"},
		{connectors.Options{"path": "s3://b/p", "rolling_interval_ms": "0"}, "option 'rolling_interval_ms': '0' is not a positive duration (milliseconds, or with a unit: ms, s, min, h)"},
		{connectors.Options{"path": "s3://b/p", "s3.endpoint": "ftp://minio"}, "sink 't' (s3://b/p): option 's3.endpoint': 'ftp://minio' is neither host[:port] nor an http(s) URL"},
		{connectors.Options{"path": "s3://b/p", "s3.access_key": "env://CLINK_TEST_UNSET"}, "sink 't' (s3://b/p): options 's3.access_key' and 's3.secret_key' go together"},
		{connectors.Options{"path": "gs://b/p", "gcs.endpoint": "::"}, "sink 't' (gs://b/p): option 'gcs.endpoint': '::' is not a URL"},
	} {
		if c.opts["format"] == "" {
			c.opts["format"] = "parquet"
		}
		tb := &connectors.Table{Name: "t", Schema: testSchema, Options: c.opts}
		verr := Validate(tb)
		_, nerr := NewSink(tb)
		if verr == nil || verr.Error() != c.want {
			t.Errorf("%v: Validate: %v\nwant %s", c.opts, verr, c.want)
		}
		if nerr == nil || nerr.Error() != c.want {
			t.Errorf("%v: NewSink: %v\nwant %s", c.opts, nerr, c.want)
		}
	}
}

// A valid table passes without I/O: no secret resolved, no credentials
// file read, no server asked (the endpoints are closed ports).
func TestValidateNoIO(t *testing.T) {
	local := t.TempDir() + "/never/created"
	for _, o := range []connectors.Options{
		{"path": "s3://lake/windows", "s3.endpoint": "http://127.0.0.1:1", "s3.access_key": "env://CLINK_TEST_UNSET", "s3.secret_key": "env://CLINK_TEST_UNSET"},
		{"path": "gs://lake/windows", "gcs.credentials_file": "/nonexistent/key.json"},
		{"path": "azure://c/windows", "azure.secret_key": "env://CLINK_TEST_UNSET"},
		{"path": local, "rolling_max_bytes": "64MB", "rolling_interval_ms": "15 min"},
	} {
		o["format"] = "parquet"
		if err := Validate(&connectors.Table{Name: "t", Schema: testSchema, Options: o}); err != nil {
			t.Errorf("%v: %v", o["path"], err)
		}
	}
	if _, err := os.Stat(filepath.Dir(local)); !os.IsNotExist(err) {
		t.Errorf("Validate touched %s: %v", filepath.Dir(local), err)
	}
}
