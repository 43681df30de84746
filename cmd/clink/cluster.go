package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// clusterBinary finds clink-cluster, which runs the Coordinator, Workers
// and submissions (the engine binary does not link gRPC).
func clusterBinary() (string, error) {
	return sibling("clink-cluster", "the cluster runs in the separate binary clink-cluster")
}

// sibling finds a companion binary: next to this one, or on the PATH.
func sibling(bin, why string) (string, error) {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), bin); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%s (make build builds it into bin/), found neither next to clink nor on the PATH", why)
	}
	return p, nil
}

// execLake re-runs this command in clink-lake or clink-iceberg (same pid
// and arguments).
func execLake(name string) int {
	bin, err := sibling(name, "the job needs the lake connectors, which run in the separate binary "+name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	err = syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "error:", err)
	return 1
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
