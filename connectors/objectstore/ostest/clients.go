package ostest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// Client reaches a store through its own SDK.
type Client interface {
	CreateBucket(ctx context.Context, bucket string) error
	// List returns the keys under prefix, sorted.
	List(ctx context.Context, bucket, prefix string) ([]string, error)
	Get(ctx context.Context, bucket, key string) ([]byte, error)
	Put(ctx context.Context, bucket, key string, data []byte) error
}

// MinIO starts a MinIO server (S3), its region us-east-1.
func MinIO(t testing.TB) *Server {
	t.Helper()
	return MinIOIn(t, "us-east-1")
}

// MinIOIn starts a MinIO server whose region is region; Options name it
// in 's3.region'.
func MinIOIn(t testing.TB, region string) *Server {
	t.Helper()
	bin := find(t, "MinIO", filepath.Join("minio-"+MinIOVersion, "minio"), "minio")
	port, console := freePort(t), freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	const user, password = "clinktest", "clinktest-secret"
	cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", "127.0.0.1:"+strconv.Itoa(console), t.TempDir())
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+user, "MINIO_ROOT_PASSWORD="+password, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_REGION="+region)
	start(t, "minio", cmd, "http://"+addr+"/minio/health/live", true)
	c := s3.New(s3.Options{Region: region, BaseEndpoint: aws.String("http://" + addr), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(user, password, "")})
	s := &Server{Scheme: "s3", Client: s3Client{c, region}, Options: map[string]string{
		"s3.endpoint": "http://" + addr, "s3.path_style": "true", "s3.region": region,
		"s3.access_key": "env://CLINK_TEST_S3_ACCESS_KEY", "s3.secret_key": "env://CLINK_TEST_S3_SECRET_KEY",
	}}
	s.setEnv(t, "CLINK_TEST_S3_ACCESS_KEY", user)
	s.setEnv(t, "CLINK_TEST_S3_SECRET_KEY", password)
	return s
}

type s3Client struct {
	c      *s3.Client
	region string
}

func (c s3Client) CreateBucket(ctx context.Context, bucket string) error {
	in := &s3.CreateBucketInput{Bucket: &bucket}
	if c.region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(c.region)}
	}
	_, err := c.c.CreateBucket(ctx, in)
	return err
}

func (c s3Client) List(ctx context.Context, bucket, prefix string) ([]string, error) {
	var out []string
	p := s3.NewListObjectsV2Paginator(c.c, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, *o.Key)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (c s3Client) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	o, err := c.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, err
	}
	defer o.Body.Close()
	return io.ReadAll(o.Body)
}

func (c s3Client) Put(ctx context.Context, bucket, key string, data []byte) error {
	_, err := c.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
	return err
}

// FakeGCS starts fake-gcs-server (GCS's JSON API, in memory).
func FakeGCS(t testing.TB) *Server {
	t.Helper()
	bin := find(t, "fake-gcs-server", filepath.Join("fake-gcs-server-"+FakeGCSVersion, "fake-gcs-server"), "fake-gcs-server")
	port := freePort(t)
	host := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-public-host", host, "-external-url", "http://"+host, "-backend", "memory", "-log-level", "warn")
	start(t, "fake-gcs-server", cmd, "http://"+host+"/storage/v1/b", true)
	endpoint := "http://" + host + "/storage/v1/"
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(endpoint), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Server{Scheme: "gs", Client: gcsClient{c}, Options: map[string]string{"gcs.endpoint": endpoint}}
}

type gcsClient struct{ c *storage.Client }

func (c gcsClient) CreateBucket(ctx context.Context, bucket string) error {
	return c.c.Bucket(bucket).Create(ctx, "clink-test", nil)
}

func (c gcsClient) List(ctx context.Context, bucket, prefix string) ([]string, error) {
	var out []string
	it := c.c.Bucket(bucket).Objects(ctx, &storage.Query{Prefix: prefix})
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

func (c gcsClient) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	r, err := c.c.Bucket(bucket).Object(key).NewReader(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (c gcsClient) Put(ctx context.Context, bucket, key string, data []byte) error {
	w := c.c.Bucket(bucket).Object(key).NewWriter(ctx)
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Azurite's well-known development account.
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Azurite starts Azurite's blob service.
func Azurite(t testing.TB) *Server {
	t.Helper()
	bin := find(t, "Azurite", filepath.Join("azurite-"+AzuriteVersion, "node_modules", ".bin", "azurite-blob"), "azurite-blob")
	port := freePort(t)
	cmd := exec.Command(bin, "--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", t.TempDir(),
		"--skipApiVersionCheck", "--loose", "--silent")
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/%s", port, AzuriteAccount)
	start(t, "azurite-blob", cmd, endpoint+"?comp=list", false)
	cred, err := azblob.NewSharedKeyCredential(AzuriteAccount, AzuriteKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(endpoint+"/", cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Scheme: "azure", Client: azureClient{c}, Options: map[string]string{
		"azure.endpoint": endpoint, "azure.account": AzuriteAccount, "azure.secret_key": "env://CLINK_TEST_AZURE_KEY",
	}}
	s.setEnv(t, "CLINK_TEST_AZURE_KEY", AzuriteKey)
	return s
}

type azureClient struct{ c *azblob.Client }

func (c azureClient) CreateBucket(ctx context.Context, bucket string) error {
	_, err := c.c.CreateContainer(ctx, bucket, nil)
	return err
}

func (c azureClient) List(ctx context.Context, bucket, prefix string) ([]string, error) {
	var out []string
	pager := c.c.NewListBlobsFlatPager(bucket, &container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Segment.BlobItems {
			out = append(out, *it.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (c azureClient) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	r, err := c.c.DownloadStream(ctx, bucket, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (c azureClient) Put(ctx context.Context, bucket, key string, data []byte) error {
	_, err := c.c.UploadBuffer(ctx, bucket, key, data, nil)
	return err
}
