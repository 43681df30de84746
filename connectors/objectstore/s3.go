package objectstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/clink-dev/clink/connectors"
)

// s3Bucket is an S3 bucket, through minio-go (a small S3 client that
// speaks to AWS and to S3-compatible servers alike).
type s3Bucket struct {
	c      *minio.Client
	bucket string
}

func newS3(o connectors.Options, bucket string) (bucket, error) {
	endpoint, secure := "s3.amazonaws.com", true
	if e := o["s3.endpoint"]; e != "" {
		host := e
		if u, err := url.Parse(e); err == nil && u.Host != "" {
			host, secure = u.Host, u.Scheme != "http"
		}
		endpoint = host
	}
	ak, err := secret(o, "s3.access_key")
	if err != nil {
		return nil, err
	}
	sk, err := secret(o, "s3.secret_key")
	if err != nil {
		return nil, err
	}
	tok, err := secret(o, "s3.session_token")
	if err != nil {
		return nil, err
	}
	var creds *credentials.Credentials
	switch {
	case ak != "" && sk != "":
		creds = credentials.NewStaticV4(ak, sk, tok)
	case ak != "" || sk != "":
		return nil, &connectors.OptionError{Key: "s3.secret_key", Msg: "options 's3.access_key' and 's3.secret_key' go together"}
	default:
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{},
			&credentials.IAM{},
		})
	}
	lookup := minio.BucketLookupAuto
	if o.Bool("s3.path_style") {
		lookup = minio.BucketLookupPath
	}
	region := o["s3.region"]
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	c, err := minio.New(endpoint, &minio.Options{Creds: creds, Secure: secure, Region: region, BucketLookup: lookup})
	if err != nil {
		return nil, &connectors.OptionError{Key: "s3.endpoint", Msg: fmt.Sprintf("option 's3.endpoint': %v", err)}
	}
	return &s3Bucket{c: c, bucket: bucket}, nil
}

func (b *s3Bucket) String() string { return "s3://" + b.bucket }

func (b *s3Bucket) Close() error { return nil }

func s3NotFound(err error) bool {
	code := minio.ToErrorResponse(err).Code
	return code == minio.NoSuchKey || code == "NotFound"
}

func (b *s3Bucket) Create(_ context.Context, key string) (upload, error) {
	return newSpool(func(ctx context.Context, f *os.File, size int64) error {
		_, err := b.c.PutObject(ctx, b.bucket, key, f, size, minio.PutObjectOptions{ContentType: "application/vnd.apache.parquet"})
		return err
	})
}

func (b *s3Bucket) copy(ctx context.Context, src, dst string) error {
	// ComposeObject copies objects over 5 GiB part by part.
	_, err := b.c.ComposeObject(ctx, minio.CopyDestOptions{Bucket: b.bucket, Object: dst}, minio.CopySrcOptions{Bucket: b.bucket, Object: src})
	return err
}

func (b *s3Bucket) Move(ctx context.Context, src, dst string) error {
	return move(ctx, b, b.copy, s3NotFound, src, dst)
}

func (b *s3Bucket) Delete(ctx context.Context, key string) error {
	err := b.c.RemoveObject(ctx, b.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && s3NotFound(err) {
		return nil
	}
	return err
}

func (b *s3Bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.c.StatObject(ctx, b.bucket, key, minio.StatObjectOptions{})
	if err != nil && s3NotFound(err) {
		return false, nil
	}
	return err == nil, err
}

func (b *s3Bucket) List(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	for o := range b.c.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		if !strings.HasSuffix(o.Key, "/") {
			out = append(out, o.Key)
		}
	}
	sort.Strings(out)
	return out, nil
}
