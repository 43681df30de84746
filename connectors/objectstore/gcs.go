package objectstore

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/clink-dev/clink/connectors"
)

// gcsBucket is a Google Cloud Storage bucket (cloud.google.com/go/storage,
// JSON API).
type gcsBucket struct {
	c      *storage.Client
	bucket *storage.BucketHandle
	name   string
}

func newGCS(o connectors.Options, bucket string) (bucket, error) {
	opts := []option.ClientOption{}
	endpoint := o["gcs.endpoint"]
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	switch {
	case o["gcs.credentials_file"] != "":
		opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, o["gcs.credentials_file"]))
	case endpoint != "":
		opts = append(opts, option.WithoutAuthentication())
	}
	c, err := storage.NewClient(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	return &gcsBucket{c: c, bucket: c.Bucket(bucket), name: bucket}, nil
}

func (b *gcsBucket) String() string { return "gs://" + b.name }

func (b *gcsBucket) Close() error { return b.c.Close() }

func gcsNotFound(err error) bool { return errors.Is(err, storage.ErrObjectNotExist) }

func (b *gcsBucket) Create(_ context.Context, key string) (upload, error) {
	return newSpool(func(ctx context.Context, f *os.File, size int64) error {
		w := b.bucket.Object(key).NewWriter(ctx)
		w.ContentType = "application/vnd.apache.parquet"
		w.ChunkSize = 0 // one request: the object appears whole or not at all
		if size > 16<<20 {
			w.ChunkSize = 16 << 20 // resumable upload; still invisible until finished
		}
		if _, err := io.Copy(w, f); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	})
}

func (b *gcsBucket) copy(ctx context.Context, src, dst string) error {
	_, err := b.bucket.Object(dst).CopierFrom(b.bucket.Object(src)).Run(ctx)
	return err
}

func (b *gcsBucket) Move(ctx context.Context, src, dst string) error {
	return move(ctx, b, b.copy, gcsNotFound, src, dst)
}

func (b *gcsBucket) Delete(ctx context.Context, key string) error {
	err := b.bucket.Object(key).Delete(ctx)
	if err != nil && gcsNotFound(err) {
		return nil
	}
	return err
}

func (b *gcsBucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.bucket.Object(key).Attrs(ctx)
	if err != nil && gcsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (b *gcsBucket) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	it := b.bucket.Objects(ctx, &storage.Query{Prefix: prefix})
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out, nil
}
