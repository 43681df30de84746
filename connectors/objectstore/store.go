package objectstore

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// parquetType is the content type of every object a sink writes.
const parquetType = "application/vnd.apache.parquet"

// blobBucket is a bucket in an object store through gocloud.dev/blob,
// the API (and the S3 driver, s3blob over aws-sdk-go-v2) that iceberg-go
// uses for its warehouses. S3 is reached this way; GCS (gcs.go) and Azure
// (azure.go) are not, because their gocloud drivers measured worse (see
// there and docs/objectstore.md), but another gocloud driver would plug
// in here unchanged. The store's file reads the options and builds the
// client.
type blobBucket struct {
	name string // s3://bucket, gs://bucket, azure://container
	// open returns the bucket on first use: an S3 bucket without a
	// configured region asks the endpoint for it, and a sink does no I/O
	// before it is used.
	open func(ctx context.Context) (*blob.Bucket, error)
	// copy, when set, replaces the driver's server-side copy (S3: a
	// multipart copy above 5 GiB).
	copy func(ctx context.Context, b *blob.Bucket, src, dst string) error
	// closeClient, when set, closes the store's client after the bucket.
	closeClient func() error

	mu sync.Mutex
	b  *blob.Bucket
}

func (s *blobBucket) bucket(ctx context.Context) (*blob.Bucket, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		b, err := s.open(ctx)
		if err != nil {
			return nil, err
		}
		s.b = b
	}
	return s.b, nil
}

func (s *blobBucket) String() string { return s.name }

func (s *blobBucket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.b != nil {
		err = s.b.Close()
	}
	if s.closeClient != nil {
		if cerr := s.closeClient(); err == nil {
			err = cerr
		}
	}
	s.b, s.closeClient = nil, nil
	s.open = func(context.Context) (*blob.Bucket, error) { return nil, errors.New("bucket closed") }
	return err
}

func notFound(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// Create spools the object and uploads it at Commit: one request, or a
// multipart upload (S3: parts of 8 MiB above 16 MiB) that the store makes
// visible only when it completes.
func (s *blobBucket) Create(_ context.Context, key string) (upload, error) {
	return newSpool(func(ctx context.Context, f *os.File, _ int64) error {
		b, err := s.bucket(ctx)
		if err != nil {
			return err
		}
		// Upload, unlike a Writer, hands the file itself to the driver
		// (S3's transfer manager sends its parts concurrently).
		return b.Upload(ctx, key, f, &blob.WriterOptions{ContentType: parquetType})
	})
}

func (s *blobBucket) copyObj(ctx context.Context, src, dst string) error {
	b, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if s.copy != nil {
		return s.copy(ctx, b, src, dst)
	}
	return b.Copy(ctx, dst, src, nil)
}

func (s *blobBucket) Move(ctx context.Context, src, dst string) error {
	return move(ctx, s, s.copyObj, notFound, src, dst)
}

func (s *blobBucket) Delete(ctx context.Context, key string) error {
	b, err := s.bucket(ctx)
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, key); err != nil && !notFound(err) {
		return err
	}
	return nil
}

func (s *blobBucket) Exists(ctx context.Context, key string) (bool, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return false, err
	}
	return b.Exists(ctx, key)
}

func (s *blobBucket) List(ctx context.Context, prefix string) ([]string, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !o.IsDir && !strings.HasSuffix(o.Key, "/") {
			out = append(out, o.Key)
		}
	}
	sort.Strings(out)
	return out, nil
}
