package objectstore

import (
	"context"
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
