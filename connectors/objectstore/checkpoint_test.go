package objectstore

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/storagetest"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// TestCheckpointStorage runs the checkpoint Storage conformance suite and
// a Store (checkpoints, retention by listing, the fence) on each store,
// under a prefix and at a bucket's root.
func TestCheckpointStorage(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(testing.TB) *ostest.Server
	}{{"s3", ostest.MinIO}, {"gcs", ostest.FakeGCS}, {"azure", ostest.Azurite}} {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t)
			ctx := context.Background()
			for _, b := range []string{"chk", "root", "store"} {
				if err := s.Client.CreateBucket(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			open := func(url string) checkpoint.Storage {
				st, err := OpenCheckpointStorage(url, s.Options)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			t.Run("conformance", func(t *testing.T) {
				storagetest.Run(t, open(s.URL("chk", "jobs/a")), storagetest.Options{HiddenUntilCommit: true})
				// Nothing leaked outside the prefix.
				keys, err := s.Client.List(ctx, "chk", "")
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					if len(k) < 7 || k[:7] != "jobs/a/" {
						t.Errorf("key %s outside the prefix", k)
					}
				}
			})
			t.Run("root", func(t *testing.T) {
				storagetest.Run(t, open(s.Scheme+"://root"), storagetest.Options{HiddenUntilCommit: true})
			})
			t.Run("store", func(t *testing.T) {
				storagetest.RunStore(t, open(s.URL("store", "ck/job")))
			})
		})
	}
}

// TestCheckpointStorageFromEnv opens each store as the binary does, with
// endpoints and credentials from the environment only.
func TestCheckpointStorageFromEnv(t *testing.T) {
	ctx := context.Background()
	t.Run("s3", func(t *testing.T) {
		s := ostest.MinIO(t)
		if err := s.Client.CreateBucket(ctx, "env"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("CLINK_TEST_S3_ACCESS_KEY"))
		t.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("CLINK_TEST_S3_SECRET_KEY"))
		t.Setenv("AWS_ENDPOINT_URL_S3", "")
		t.Setenv("AWS_ENDPOINT_URL", s.Options["s3.endpoint"])
		t.Setenv("AWS_REGION", "")
		runFromEnv(t, "s3a://env/ck")
	})
	t.Run("gcs", func(t *testing.T) {
		s := ostest.FakeGCS(t)
		if err := s.Client.CreateBucket(ctx, "env"); err != nil {
			t.Fatal(err)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(s.Options["gcs.endpoint"], "http://"), "/storage/v1/")
		t.Setenv("STORAGE_EMULATOR_HOST", host)
		runFromEnv(t, "gs://env/ck")
	})
	t.Run("azure", func(t *testing.T) {
		s := ostest.Azurite(t)
		if err := s.Client.CreateBucket(ctx, "env"); err != nil {
			t.Fatal(err)
		}
		t.Setenv("AZURE_STORAGE_ACCOUNT", "")
		t.Setenv("AZURE_STORAGE_KEY", "")
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=http;AccountName="+ostest.AzuriteAccount+
			";AccountKey="+ostest.AzuriteKey+";BlobEndpoint="+s.Options["azure.endpoint"]+";")
		runFromEnv(t, "azure://env/ck")
	})
}

func runFromEnv(t *testing.T, url string) {
	t.Helper()
	st, err := CheckpointStorage(url)
	if err != nil {
		t.Fatal(err)
	}
	storagetest.RunStore(t, st)
}
