package objectstore

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"

	"github.com/clink-dev/clink/connectors"
)

// newAzure opens an Azure Blob Storage container (azureblob over azblob);
// azure:// paths name the container, the account comes from
// 'azure.account'. With the account's shared key ('azure.secret_key',
// AZURE_STORAGE_KEY) requests are signed with it; without, the endpoint
// may carry a SAS in its query (or the container is public).
func newAzure(o connectors.Options, containerName string) (bucket, error) {
	account := o["azure.account"]
	if account == "" {
		account = os.Getenv("AZURE_STORAGE_ACCOUNT")
	}
	key, err := secret(o, "azure.secret_key")
	if err != nil {
		return nil, err
	}
	if key == "" {
		key = os.Getenv("AZURE_STORAGE_KEY")
	}
	endpoint := o["azure.endpoint"]
	if endpoint == "" {
		if account == "" {
			return nil, &connectors.OptionError{Key: "azure.account", Msg: "an azure:// path needs 'azure.account' (or 'azure.endpoint')"}
		}
		endpoint = "https://" + account + ".blob.core.windows.net/"
	}
	if !strings.HasSuffix(endpoint, "/") && !strings.Contains(endpoint, "?") {
		endpoint += "/"
	}
	var c *azblob.Client
	if key != "" {
		if account == "" {
			return nil, &connectors.OptionError{Key: "azure.account", Msg: "option 'azure.secret_key' needs 'azure.account'"}
		}
		cred, err := azblob.NewSharedKeyCredential(account, key)
		if err != nil {
			// The error would quote the key: say only what is wrong.
			return nil, &connectors.OptionError{Key: "azure.secret_key", Msg: "option 'azure.secret_key' is not a base64 account key"}
		}
		c, err = azblob.NewClientWithSharedKeyCredential(endpoint, cred, nil)
		if err != nil {
			return nil, &connectors.OptionError{Key: "azure.endpoint", Msg: fmt.Sprintf("option 'azure.endpoint': %v", err)}
		}
	} else if c, err = azblob.NewClientWithNoCredential(endpoint, nil); err != nil {
		return nil, &connectors.OptionError{Key: "azure.endpoint", Msg: fmt.Sprintf("option 'azure.endpoint': %v", err)}
	}
	// The container's client keeps the endpoint's query (a SAS) and
	// authorizes a Copy Blob within the account with the same key.
	b, err := azureblob.OpenBucket(context.Background(), c.ServiceClient().NewContainerClient(containerName), nil)
	if err != nil {
		return nil, fmt.Errorf("azure://%s: %w", containerName, err)
	}
	return &blobBucket{name: "azure://" + containerName, open: func(context.Context) (*blob.Bucket, error) { return b, nil }}, nil
}
