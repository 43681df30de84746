package objectstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"

	"github.com/clink-dev/clink/connectors"
)

// newGCS opens a Google Cloud Storage bucket (gcsblob over
// cloud.google.com/go/storage, JSON API). Credentials: a service-account
// key file ('gcs.credentials_file'), else the application default
// credentials; with 'gcs.endpoint' (an emulator or proxy) and no key file,
// requests are anonymous.
func newGCS(o connectors.Options, bucket string) (bucket, error) {
	// The sink reads, writes and deletes objects, nothing more.
	opts := []option.ClientOption{option.WithScopes(storage.ScopeReadWrite)}
	if api := o["gcs.endpoint"]; api != "" {
		u, err := url.Parse(api)
		if err != nil || u.Host == "" {
			return nil, &connectors.OptionError{Key: "gcs.endpoint", Msg: fmt.Sprintf("option 'gcs.endpoint': '%s' is not a URL", api)}
		}
		if !strings.HasSuffix(u.Path, "/storage/v1/") {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/storage/v1/"
		}
		opts = append(opts, option.WithEndpoint(u.String()))
	}
	switch file := o["gcs.credentials_file"]; {
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &connectors.OptionError{Key: "gcs.credentials_file", Msg: fmt.Sprintf("option 'gcs.credentials_file': %v", err)}
		}
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, data))
	case o["gcs.endpoint"] != "":
		opts = append(opts, option.WithoutAuthentication())
	}
	// No network I/O but for the default credentials' lookup (the
	// metadata server on Google Cloud); tokens are fetched when needed.
	c, err := storage.NewClient(context.Background(), opts...)
	if err != nil {
		if o["gcs.credentials_file"] != "" {
			// Do not quote the parser: it may echo the key.
			return nil, &connectors.OptionError{Key: "gcs.credentials_file", Msg: fmt.Sprintf("option 'gcs.credentials_file': %s is not a Google service-account JSON key file", o["gcs.credentials_file"])}
		}
		return nil, fmt.Errorf("gs://%s: no credentials ('gcs.credentials_file', GOOGLE_APPLICATION_CREDENTIALS, gcloud or the metadata server): %w", bucket, err)
	}
	// The client retries only calls it deems idempotent; a sink's are,
	// the upload and the copy too: each writes a key nothing else writes,
	// with the same bytes every time, and a delete that finds nothing is
	// no error.
	c.SetRetry(storage.WithPolicy(storage.RetryAlways))
	b, err := gcsblob.OpenBucket(context.Background(), nil, bucket, &gcsblob.Options{Client: c})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("gs://%s: %w", bucket, err)
	}
	return &blobBucket{name: "gs://" + bucket, open: func(context.Context) (*blob.Bucket, error) { return b, nil },
		closeClient: c.Close}, nil // gcsblob leaves a client it was given open
}
