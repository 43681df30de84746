package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// clusterBinary finds clink-cluster, which runs the Coordinator, Workers
// and submissions (the engine binary does not link gRPC): next to this
// binary, or on the PATH.
func clusterBinary() (string, error) {
	const bin = "clink-cluster"
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), bin); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("the cluster runs in the separate binary clink-cluster (make build builds it into bin/), found neither next to clink nor on the PATH")
	}
	return p, nil
}

// execCluster replaces this process with clink-cluster (same pid, so
// signals such as SIGKILL reach the Coordinator or Worker itself).
func execCluster(args []string) int {
	bin, err := clusterBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	err = syscall.Exec(bin, append([]string{bin}, args...), os.Environ())
	fmt.Fprintln(os.Stderr, "error:", err)
	return 1
}
