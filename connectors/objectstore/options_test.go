package objectstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1000": 1000, "128MB": 128 << 20, "64 mb": 64 << 20, "2KiB": 2048, "1g": 1 << 30} {
		if got, err := parseSize("rolling_max_bytes", in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "12XB", "MB"} {
		if _, err := parseSize("rolling_max_bytes", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]time.Duration{"60000": time.Minute, "15 min": 15 * time.Minute, "30s": 30 * time.Second, "1h30m": 90 * time.Minute, "2 h": 2 * time.Hour} {
		if got, err := parseInterval("rolling_interval_ms", in); err != nil || got != want {
			t.Errorf("%q: %s %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "soon", "5 fortnights"} {
		if _, err := parseInterval("rolling_interval_ms", in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestStagingLocation(t *testing.T) {
	cases := []struct{ path, staging, want, err string }{
		{path: "s3://lake/a/b", want: "s3://lake/a/_clink_staging/b"},
		{path: "gs://lake/b/", want: "gs://lake/_clink_staging/b"},
		{path: "azure://c/x/y/z", want: "azure://c/x/y/_clink_staging/z"},
		{path: "s3://lake", err: "bucket's root"},
		{path: "s3://lake/a", staging: "s3://lake/tmp/a", want: "s3://lake/tmp/a"},
		{path: "s3://lake/a", staging: "s3://other/a", err: "same store and bucket"},
		{path: "s3://lake/a", staging: "s3://lake/a/staging", err: "must not contain"},
		{path: "/data/out", want: "/data/_clink_staging/out"},
		{path: "/data/out", staging: "/data/out/.staging", err: "must not contain"},
	}
	for _, c := range cases {
		pub, err := parseLocation("path", c.path)
		if err != nil {
			t.Fatal(err)
		}
		st, err := stagingLocation(connectors.Options{"staging_path": c.staging}, pub)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s / %s: error %v, want %q", c.path, c.staging, err, c.err)
			}
			continue
		}
		if err != nil || st.String() != c.want {
			t.Errorf("%s / %s: %s %v, want %s", c.path, c.staging, st, err, c.want)
		}
	}
}

// Secrets never appear in errors: not a literal, not a variable's value.
func TestSecretsNotInErrors(t *testing.T) {
	t.Setenv("CLINK_TEST_BAD_KEY", "not-base64-secret!")
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, []byte(`{"type": "service_account", "private_key": "not-a-key-secret!"`), 0o600); err != nil {
		t.Fatal(err)
	}
	table := func(o connectors.Options) *connectors.Table {
		o["format"], o["connector"] = "parquet", "filesystem"
		return &connectors.Table{Name: "t", Schema: testSchema, Options: o, Runtime: connectors.Runtime{Mem: memory.DefaultAllocator}}
	}
	for _, o := range []connectors.Options{
		{"path": "azure://c/p", "azure.account": "acct", "azure.secret_key": "env://CLINK_TEST_BAD_KEY"},
		{"path": "azure://c/p", "azure.account": "acct", "azure.secret_key": "not-base64-secret!"},
		{"path": "s3://b/p", "s3.access_key": "AKIDSECRET", "s3.secret_key": "env://CLINK_TEST_UNSET_VAR"},
		{"path": "s3://b/p", "s3.secret_key": "not-base64-secret!"},
		{"path": "gs://b/p", "gcs.credentials_file": keyFile},
	} {
		_, err := NewSink(table(o))
		if err == nil {
			t.Errorf("%v: accepted", o["path"])
			continue
		}
		if strings.Contains(err.Error(), "secret!") || strings.Contains(err.Error(), "AKIDSECRET") {
			t.Errorf("error quotes a secret: %v", err)
		}
	}
}

func TestNewSinkRefuses(t *testing.T) {
	for _, o := range []connectors.Options{
		{"path": "s3://b/p", "format": "json"},
		{"path": "s3://b/p", "format": "parquet", "mode": "upsert"},
		{"path": "ftp://b/p", "format": "parquet"},
		{"path": "s3://b/p", "format": "parquet", "rolling_max_bytes": "big"},
	} {
		if _, err := NewSink(&connectors.Table{Name: "t", Schema: testSchema, Options: o}); err == nil {
			t.Errorf("%v accepted", o)
		}
	}
}
