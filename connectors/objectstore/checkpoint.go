package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/connectors"
)

// CheckpointSchemes are the URL schemes CheckpointStorage opens; the
// binary registers them with checkpoint.RegisterScheme at startup.
var CheckpointSchemes = []string{"s3", "s3a", "gs", "azure"}

// CheckpointStorage opens a checkpoint store (or savepoint) location in an
// object store, s3://bucket/prefix, gs://bucket/prefix or
// azure://container/prefix, through the sinks' clients. A checkpoint
// directory is a command-line flag or a SET, not a table: the options
// come from the environment (CheckpointOptions).
func CheckpointStorage(loc string) (checkpoint.Storage, error) {
	return OpenCheckpointStorage(loc, CheckpointOptions())
}

// CheckpointOptions are the options of the object stores' clients that
// the environment gives checkpoints:
//
//   - S3: 's3.endpoint' from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (a
//     server other than AWS's is addressed by path); region, keys and
//     profiles by the AWS SDK's default chain (AWS_REGION,
//     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
//     ~/.aws, the instance's or pod's role).
//   - GCS: 'gcs.endpoint' from STORAGE_EMULATOR_HOST (anonymous); else
//     the application default credentials (GOOGLE_APPLICATION_CREDENTIALS,
//     gcloud, the metadata server).
//   - Azure: AZURE_STORAGE_CONNECTION_STRING (AccountName, AccountKey,
//     BlobEndpoint), else AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY
//     (a SAS or a public container: AZURE_STORAGE_BLOB_ENDPOINT).
func CheckpointOptions() map[string]string {
	o := map[string]string{}
	set := func(key, v string) {
		if v != "" {
			o[key] = v
		}
	}
	set("s3.endpoint", firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"))
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		if !strings.Contains(h, "://") {
			h = "http://" + h
		}
		set("gcs.endpoint", h)
	}
	set("azure.endpoint", os.Getenv("AZURE_STORAGE_BLOB_ENDPOINT"))
	for _, kv := range strings.Split(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch strings.TrimSpace(k) {
		case "AccountName":
			set("azure.account", v)
		case "AccountKey":
			set("azure.secret_key", strings.TrimSpace(v)) // base64: its '=' padding is kept by Cut
		case "BlobEndpoint":
			set("azure.endpoint", v)
		}
	}
	return o
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// OpenCheckpointStorage opens loc with the given client options (the
// sinks' option names: 's3.endpoint', 's3.access_key', 'gcs.endpoint',
// 'azure.account', ...; secrets may be env://VAR).
func OpenCheckpointStorage(loc string, opts map[string]string) (checkpoint.Storage, error) {
	l, err := parseLocation("checkpoint directory", loc)
	if err != nil {
		return nil, err
	}
	o := connectors.Options{}
	for k, v := range opts {
		o[k] = v
	}
	var b bucket
	switch l.scheme {
	case "s3":
		b, err = newS3(o, l.bucket)
	case "gs":
		b, err = newGCS(o, l.bucket)
	case "azure":
		b, err = newAzure(o, l.bucket)
	default:
		return nil, fmt.Errorf("%s is not an object store's URL (s3://, gs://, azure://)", loc)
	}
	if err != nil {
		return nil, err
	}
	r, ok := b.(objectReader)
	if !ok {
		return nil, fmt.Errorf("%s: the store cannot read objects", l)
	}
	return &ckStorage{b: b, r: r, loc: l}, nil
}

// objectReader is what checkpoints read of a store besides a sink's
// bucket calls. A missing object is an error for which notFound is true.
type objectReader interface {
	Read(ctx context.Context, key string) ([]byte, error)
	Size(ctx context.Context, key string) (int64, error)
	isNotFound(err error) bool
}

// ckStorage is checkpoint.Storage on a bucket: every object is uploaded
// in one request at Commit (a spooled upload: S3 and Azure switch to a
// multipart or block upload for big objects, which also appears only
// when complete), so a part or a manifest is visible whole or not at all.
type ckStorage struct {
	b   bucket
	r   objectReader
	loc location
}

var _ checkpoint.Storage = (*ckStorage)(nil)

func (s *ckStorage) key(name string) string { return s.loc.key(name) }

func (s *ckStorage) Path(name string) string {
	return strings.TrimSuffix(s.loc.scheme+"://"+s.loc.bucket+"/"+s.loc.key(name), "/")
}

func (s *ckStorage) notExist(name string, err error) error {
	if s.r.isNotFound(err) || errors.Is(err, errNotFound) {
		return &fs.PathError{Op: "read", Path: s.Path(name), Err: fs.ErrNotExist}
	}
	return fmt.Errorf("%s: %w", s.Path(name), err)
}

type ckUpload struct{ u upload }

func (u ckUpload) Write(p []byte) (int, error) { return u.u.Write(p) }
func (u ckUpload) Commit() error               { return u.u.Commit(context.Background()) }
func (u ckUpload) Abort() error                { return u.u.Abort() }

func (s *ckStorage) Create(name string) (checkpoint.ObjectWriter, error) {
	u, err := s.b.Create(context.Background(), s.key(name))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path(name), err)
	}
	return ckUpload{u}, nil
}

func (s *ckStorage) WriteFile(name string, data []byte) error {
	u, err := s.b.Create(context.Background(), s.key(name))
	if err != nil {
		return fmt.Errorf("%s: %w", s.Path(name), err)
	}
	if _, err := u.Write(data); err != nil {
		u.Abort()
		return fmt.Errorf("%s: %w", s.Path(name), err)
	}
	if err := u.Commit(context.Background()); err != nil {
		return fmt.Errorf("%s: %w", s.Path(name), err)
	}
	return nil
}

func (s *ckStorage) ReadFile(name string) ([]byte, error) {
	data, err := s.r.Read(context.Background(), s.key(name))
	if err != nil {
		return nil, s.notExist(name, err)
	}
	return data, nil
}

func (s *ckStorage) Stat(name string) (int64, error) {
	n, err := s.r.Size(context.Background(), s.key(name))
	if err != nil {
		return 0, s.notExist(name, err)
	}
	return n, nil
}

// List lists every key under dir (one LIST, paged) and folds deeper levels.
func (s *ckStorage) List(dir string) ([]string, error) {
	prefix := s.loc.dirPrefix() + dir
	keys, err := s.b.List(context.Background(), prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path(dir), err)
	}
	out := checkpoint.ListFlat(keys, prefix)
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "list", Path: s.Path(dir), Err: fs.ErrNotExist}
	}
	return out, nil
}

func (s *ckStorage) Remove(name string) error {
	ctx := context.Background()
	if !strings.HasSuffix(name, "/") {
		if err := s.b.Delete(ctx, s.key(name)); err != nil {
			return fmt.Errorf("%s: %w", s.Path(name), err)
		}
		return nil
	}
	keys, err := s.b.List(ctx, s.loc.dirPrefix()+name)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Path(name), err)
	}
	var errs []error
	for _, k := range keys {
		if err := s.b.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("%s://%s/%s: %w", s.loc.scheme, s.loc.bucket, k, err))
		}
	}
	return errors.Join(errs...)
}

// S3 (gocloud.dev/blob).

func (s *blobBucket) Read(ctx context.Context, key string) ([]byte, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return nil, err
	}
	return b.ReadAll(ctx, key)
}

func (s *blobBucket) Size(ctx context.Context, key string) (int64, error) {
	b, err := s.bucket(ctx)
	if err != nil {
		return 0, err
	}
	a, err := b.Attributes(ctx, key)
	if err != nil {
		return 0, err
	}
	return a.Size, nil
}

func (s *blobBucket) isNotFound(err error) bool { return notFound(err) }

// GCS (JSON API).

func (b *gcsBucket) Read(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := b.doRaw(ctx, b.object(key)+"?alt=media", &out)
	return out, err
}

func (b *gcsBucket) Size(ctx context.Context, key string) (int64, error) {
	var meta struct {
		Size string `json:"size"`
	}
	err := b.do(ctx, func() (*http.Request, error) {
		return http.NewRequest(http.MethodGet, b.object(key)+"?fields=size", nil)
	}, &meta)
	if err != nil {
		return 0, err
	}
	var n int64
	if _, err := fmt.Sscan(meta.Size, &n); err != nil {
		return 0, fmt.Errorf("gs://%s/%s: size %q: %v", b.name, key, meta.Size, err)
	}
	return n, nil
}

func (b *gcsBucket) isNotFound(err error) bool { return gcsNotFound(err) }

// doRaw GETs u and reads the whole body (do reads at most 1 MiB of JSON),
// retrying as do does.
func (b *gcsBucket) doRaw(ctx context.Context, u string, out *[]byte) error {
	var last error
	for attempt, wait := 1, 100; attempt <= 6; attempt, wait = attempt+1, wait*2 {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := b.c.Do(r)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case resp.StatusCode/100 == 2:
				*out = body
				return nil
			default:
				err = &gcsError{Status: resp.StatusCode, Msg: strings.TrimSpace(string(bytes.TrimSpace(body[:min(len(body), 512)])))}
				if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
					return err
				}
			}
		}
		last = err
		select {
		case <-time.After(time.Duration(wait) * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return last
}

// Azure (azblob).

func (b *azureBucket) Read(ctx context.Context, key string) ([]byte, error) {
	r, err := b.container.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *azureBucket) Size(ctx context.Context, key string) (int64, error) {
	p, err := b.container.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return 0, err
	}
	if p.ContentLength == nil {
		return 0, fmt.Errorf("azure://%s/%s: no Content-Length", b.name, url.PathEscape(key))
	}
	return *p.ContentLength, nil
}

func (b *azureBucket) isNotFound(err error) bool {
	if bloberror.HasCode(err, bloberror.BlobNotFound) {
		return true
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode == "" // HEAD: no body to name the code
}
