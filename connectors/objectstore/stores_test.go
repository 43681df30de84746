package objectstore

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/clink-dev/clink/connectors"
	"github.com/clink-dev/clink/connectors/objectstore/ostest"
)

// The scenarios against real servers on 127.0.0.1 (skipped when a server
// is not installed, unless CLINK_REQUIRE_OBJECTSTORES=1). Each scenario
// gets its own server: a bucket named "lake" is created in each.

func TestS3(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.MinIO(t)) })
}

func TestGCS(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.FakeGCS(t)) })
}

func TestAzure(t *testing.T) {
	testStore(t, func(t *testing.T) *target { return serverTarget(t, ostest.Azurite(t)) })
}

// TestS3MultipartCopy publishes an object bigger than one CopyObject may
// copy (the limit lowered from 5 GiB to 5 MiB): the multipart copy must
// yield the same bytes at the final key and remove the staged one.
func TestS3MultipartCopy(t *testing.T) {
	s := ostest.MinIO(t)
	ctx := context.Background()
	if err := s.Client.CreateBucket(ctx, "lake"); err != nil {
		t.Fatal(err)
	}
	defer func(n int64) { s3MaxCopy = n }(s3MaxCopy)
	s3MaxCopy = 5 << 20
	b, err := newS3(connectors.Options(s.Options), "lake")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	data := make([]byte, 12<<20+12345)
	rand.NewChaCha8([32]byte{3, 4}).Read(data)
	up, err := b.Create(ctx, "stage/x.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := up.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Move(ctx, "stage/x.parquet", "pub/x.parquet"); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client.Get(ctx, "lake", "pub/x.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("copied %d bytes, not the %d staged", len(got), len(data))
	}
	if keys, err := s.Client.List(ctx, "lake", ""); err != nil || len(keys) != 1 {
		t.Fatalf("bucket holds %v (%v), want only pub/x.parquet", keys, err)
	}
	// Redone after the delete: published before, nothing to do.
	if err := b.Move(ctx, "stage/x.parquet", "pub/x.parquet"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move(ctx, "stage/y.parquet", "pub/y.parquet"); !errors.Is(err, errNotFound) {
		t.Fatalf("moving a missing object: %v, want errNotFound", err)
	}
}

// TestS3AsksRegion: without 's3.region' (and no region in the
// environment or an AWS config file) the sink asks the endpoint for the
// bucket's region; requests signed for another region would be refused.
func TestS3AsksRegion(t *testing.T) {
	s := ostest.MinIOIn(t, "eu-west-3")
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials")} {
		t.Setenv(k, v)
	}
	tg := serverTarget(t, s)
	delete(tg.opts, "s3.region")
	tx := tg.txSink(t, 0, 1)
	defer tx.Close()
	write(t, tx, 0, 10)
	if err := tx.PreCommit(); err != nil {
		t.Fatal(err)
	}
	if staged := tg.staged(t); len(staged) != 1 {
		t.Fatalf("staged %v, want one file", staged)
	}
}
