package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Events as go test -json writes them for a passing test, a skip with a
// reason logged before go test's own line, a skipped subtest, and a
// package-level line.
const events = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    chtest.go:54: ClickHouse: no clickhouse-server\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestC/sub","Output":"    c_test.go:9: -short: streams for about 15 s\n"}
{"Action":"skip","Package":"p","Test":"TestC/sub"}
{"Action":"pass","Package":"p","Test":"TestC"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.1s\n"}
{"Action":"pass","Package":"p"}
`

func TestRead(t *testing.T) {
	f := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(f, []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}
	tests, skips, err := read([]string{f})
	if err != nil {
		t.Fatal(err)
	}
	if tests != 4 || len(skips) != 2 {
		t.Fatalf("got %d tests, %d skips; want 4, 2", tests, len(skips))
	}
	want := []skip{
		{"p TestB", "chtest.go:54: ClickHouse: no clickhouse-server"},
		{"p TestC/sub", "c_test.go:9: -short: streams for about 15 s"},
	}
	for i, s := range skips {
		if s != want[i] {
			t.Errorf("skip %d: got %+v, want %+v", i, s, want[i])
		}
	}
}

// The messages of the helpers (chtest, pgtest, ostest, the kcat test)
// match; the allowed skips do not.
func TestRequiredComponents(t *testing.T) {
	re := regexp.MustCompile(requiredComponents)
	for _, m := range []string{
		"kcat: not on PATH (install: .ci/install-deps.sh, or apt-get install kcat)",
		"ClickHouse: no clickhouse-server (or clickhouse) binary on PATH",
		"PostgreSQL: no server binaries (initdb, postgres, psql)",
		"MinIO: minio not in /c/minio-v0/minio or on PATH",
		"fake-gcs-server: fake-gcs-server not in /c/x or on PATH",
		"Azurite: azurite-blob not in /c/x or on PATH",
	} {
		if !re.MatchString(m) {
			t.Errorf("%q does not match", m)
		}
	}
	for _, m := range []string{
		"CLINK_DEBUG_POOL is set",
		"-short: the conformance suite streams for about 10 s",
		"this platform makes no FIFO: operation not permitted",
		"go list: exec: \"go\": executable file not found in $PATH",
	} {
		if re.MatchString(m) {
			t.Errorf("%q matches", m)
		}
	}
}
