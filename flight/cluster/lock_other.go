//go:build !unix

package cluster

import (
	"fmt"
	"time"
)

func lockFile(path string, _ time.Duration) (func(), error) {
	return nil, fmt.Errorf("locking %s: --ha-dir needs a POSIX system (flock)", path)
}
