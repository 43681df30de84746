package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/clink-dev/clink/connectors"
)

var _ connectors.Lineage = Connector{}

// Dataset names the path by the OpenLineage conventions: a local path is
// namespace "file" (the local file system) and the absolute path; an
// object-store prefix is s3://{bucket}, gs://{bucket} or, for Azure Blob
// Storage (azure://container/prefix), wasbs://{container}@{account}.dfs.core.windows.net
// (the spec's WASBS form; the account is 'azure.account' or
// AZURE_STORAGE_ACCOUNT), and the key prefix.
func (Connector) Dataset(t *connectors.Table) (string, string, error) {
	p := t.Options["path"]
	if scheme, rest, ok := strings.Cut(p, "://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		key = strings.TrimSuffix(key, "/")
		switch scheme {
		case "s3", "gs":
			return scheme + "://" + bucket, key, nil
		case "azure":
			account := t.Options["azure.account"]
			if account == "" {
				account = os.Getenv("AZURE_STORAGE_ACCOUNT")
			}
			return fmt.Sprintf("wasbs://%s@%s.dfs.core.windows.net", bucket, account), key, nil
		case "file":
			p = rest
		default:
			return "", "", fmt.Errorf("path %s: unknown scheme %s", p, scheme)
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", err
	}
	return "file", abs, nil
}
