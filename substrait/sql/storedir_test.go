package sql

import "testing"

// TestStoreDir: SET 'execution.checkpointing.dir' (and the savepoint
// directory) take a local path or an object store's URL.
func TestStoreDir(t *testing.T) {
	for in, want := range map[string]string{
		"/var/ck":           "/var/ck",
		"file:///var/ck":    "/var/ck",
		"s3://state/ck/job": "s3://state/ck/job",
		"s3a://state/ck":    "s3a://state/ck",
		"gs://state":        "gs://state",
		"azure://c/ck":      "azure://c/ck",
	} {
		if got, err := storeDir(in); err != nil || got != want {
			t.Errorf("storeDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "hdfs://nn/ck", "s3:///ck"} {
		if got, err := storeDir(in); err == nil {
			t.Errorf("storeDir(%q) = %q, want an error", in, got)
		}
	}
}
