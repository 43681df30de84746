package objectstore

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/clink-dev/clink/connectors"
)

// checkS3 is newS3's checks that need no I/O: the endpoint, both keys or
// neither (as given: env:// references are not resolved).
func checkS3(o connectors.Options) error {
	if _, _, err := s3Endpoint(o); err != nil {
		return err
	}
	if (o["s3.access_key"] != "") != (o["s3.secret_key"] != "") {
		return s3KeysApart()
	}
	return nil
}

func s3KeysApart() error {
	return &connectors.OptionError{Key: "s3.secret_key", Msg: "options 's3.access_key' and 's3.secret_key' go together"}
}

// s3Endpoint reads 's3.endpoint': the endpoint URL ("" for AWS's) and its
// host.
func s3Endpoint(o connectors.Options) (endpoint, host string, err error) {
	e := o["s3.endpoint"]
	if e == "" {
		return "", "s3.amazonaws.com", nil
	}
	if !strings.Contains(e, "://") {
		e = "https://" + e
	}
	u, err := url.Parse(e)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", &connectors.OptionError{Key: "s3.endpoint", Msg: fmt.Sprintf("option 's3.endpoint': '%s' is neither host[:port] nor an http(s) URL", o["s3.endpoint"])}
	}
	return strings.TrimSuffix(e, "/"), u.Host, nil
}

// newS3 opens an S3 bucket (s3blob over aws-sdk-go-v2), on AWS or an
// S3-compatible server ('s3.endpoint'). Credentials: 's3.access_key' and
// 's3.secret_key', else the SDK's default chain (environment,
// ~/.aws/credentials and config, the instance's role). Without a region
// ('s3.region', AWS_REGION, the AWS config) the endpoint is asked for the
// bucket's on first use.
func newS3(o connectors.Options, bucket string) (bucket, error) {
	if err := checkS3(o); err != nil {
		return nil, err
	}
	endpoint, host, _ := s3Endpoint(o)
	ak, err := o.Secret("s3.access_key")
	if err != nil {
		return nil, err
	}
	sk, err := o.Secret("s3.secret_key")
	if err != nil {
		return nil, err
	}
	tok, err := o.Secret("s3.session_token")
	if err != nil {
		return nil, err
	}
	var load []func(*config.LoadOptions) error
	switch {
	case ak != "" && sk != "":
		load = append(load, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(ak, sk, tok)))
	case ak != "" || sk != "":
		return nil, s3KeysApart() // an env:// key named an empty variable
	}
	if r := o["s3.region"]; r != "" {
		load = append(load, config.WithRegion(r))
	}
	// Reads the environment and the AWS config files only; credentials
	// from the network (the instance's role) are fetched when needed.
	cfg, err := config.LoadDefaultConfig(context.Background(), load...)
	if err != nil {
		return nil, fmt.Errorf("s3://%s: AWS configuration: %w", bucket, err)
	}
	// Buckets on other servers than AWS's are addressed by path, as
	// virtual hosts (bucket.host) need DNS or an AWS-like server.
	pathStyle := o.Bool("s3.path_style") || (endpoint != "" && !strings.HasSuffix(host, ".amazonaws.com"))
	b := &blobBucket{name: "s3://" + bucket}
	var client *s3.Client
	b.open = func(ctx context.Context) (*blob.Bucket, error) {
		if cfg.Region == "" {
			r, err := bucketRegion(ctx, endpoint, bucket, pathStyle)
			if err != nil {
				return nil, err
			}
			cfg.Region = r
		}
		client = s3.NewFromConfig(cfg, func(so *s3.Options) {
			if endpoint != "" {
				so.BaseEndpoint = aws.String(endpoint)
			}
			so.UsePathStyle = pathStyle
		})
		return s3blob.OpenBucket(ctx, client, bucket, nil)
	}
	b.copy = func(ctx context.Context, bb *blob.Bucket, src, dst string) error {
		a, err := bb.Attributes(ctx, src)
		if err != nil {
			return err
		}
		if a.Size <= s3MaxCopy {
			return bb.Copy(ctx, dst, src, nil)
		}
		return s3MultipartCopy(ctx, client, bucket, src, dst, a.Size)
	}
	return b, nil
}

// bucketRegion asks the endpoint for the bucket's region: S3 (AWS, MinIO)
// names it in the x-amz-bucket-region header of a HEAD Bucket response,
// also an unauthenticated one (403) or a redirect (301). Without the
// header it is us-east-1, which S3-compatible servers accept.
func bucketRegion(ctx context.Context, endpoint, bucket string, pathStyle bool) (string, error) {
	u := "https://" + bucket + ".s3.amazonaws.com/"
	if endpoint != "" {
		e, _ := url.Parse(endpoint)
		if pathStyle {
			e.Path = strings.TrimSuffix(e.Path, "/") + "/" + url.PathEscape(bucket)
		} else {
			e.Host = bucket + "." + e.Host
		}
		u = e.String()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return "", err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking for the bucket's region (or set 's3.region'): %w", err)
	}
	resp.Body.Close()
	if r := resp.Header.Get("X-Amz-Bucket-Region"); r != "" {
		return r, nil
	}
	return "us-east-1", nil
}

// s3MaxCopy is the largest object one CopyObject copies (5 GiB); a
// variable so that a test can cross it.
var s3MaxCopy int64 = 5 << 30

// s3MultipartCopy copies an object above s3MaxCopy server side, part by
// part (UploadPartCopy); the copy appears at dst only when it completes.
func s3MultipartCopy(ctx context.Context, c *s3.Client, bucket, src, dst string, size int64) error {
	mu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &dst, ContentType: aws.String(parquetType)})
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			// A fresh context: ctx may be why the copy stopped.
			actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &dst, UploadId: mu.UploadId})
		}
	}()
	// Parts of 512 MiB (S3 takes 5 MiB to 5 GiB, at most 10,000 parts).
	part := min(max(size/10000+1, 512<<20), s3MaxCopy)
	source := url.PathEscape(bucket) + "/" + (&url.URL{Path: src}).EscapedPath()
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+part {
		end := min(off+part, size) - 1
		r, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &bucket, Key: &dst, UploadId: mu.UploadId, PartNumber: aws.Int32(n),
			CopySource: &source, CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", off, end))})
		if err != nil {
			return err
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: r.CopyPartResult.ETag})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &dst, UploadId: mu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	done = err == nil
	return err
}
