// Command skips reads the test events gotestsum wrote (--jsonfile, the
// test2json stream of `go test -json`) and judges the run's skips, after
// gotestsum's own summary has listed each with its reason.
//
//	skips FILE.json...         fail when a skip names a required component
//	skips -quick FILE.json     count only: the line that closes make test-quick
//
// The count is of tests that ended (subtests included) over all the
// files, as gotestsum counts them.
//
// A skip names a required component when its test's output matches
// -components (kcat, ClickHouse, PostgreSQL, MinIO, fake-gcs-server,
// Azurite): `make test` sets CLINK_REQUIRE_*=1, under which the helpers
// fail instead of skipping, so such a skip means a test that skips on its
// own, without asking its helper; `make test` must not pass over it.
// Other skips (a platform without FIFOs, CLINK_DEBUG_POOL set) stay
// allowed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// requiredComponents matches the skip messages of the servers make test
// installs (each helper's message starts with its component's name).
const requiredComponents = `(?i)kcat|clickhouse|postgres|initdb|minio|fake-gcs|azurite|opentelemetry collector|chromium`

// module is trimmed from package paths, as gotestsum trims it.
const module = "github.com/clink-dev/clink/"

// event is the part of a test2json event read here.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct {
	name   string // package and test
	reason string // the test's output, without go test's own lines
}

func main() {
	quick := flag.Bool("quick", false, "print the closing line of make test-quick and never fail on skips")
	title := flag.String("title", "skips", "the start of the line that reports a run without such skips")
	components := flag.String("components", requiredComponents, "a skip whose output matches fails the run")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: skips [-quick] [-components RE] FILE.json...")
		os.Exit(2)
	}
	re, err := regexp.Compile(*components)
	if err != nil {
		fatal(fmt.Errorf("-components: %w", err))
	}
	tests, skips, err := read(flag.Args())
	if err != nil {
		fatal(err)
	}
	var required []skip
	for _, s := range skips {
		if re.MatchString(s.reason) {
			required = append(required, s)
		}
	}
	if *quick {
		fmt.Printf("NOT THE FULL TEST (make test-quick: nothing installed, no CLINK_REQUIRE_*): %d tests, %d skipped, %d of them for a missing component; make test runs everything\n",
			tests, len(skips), len(required))
		return
	}
	if len(required) > 0 {
		fmt.Printf("FAIL: %d of %d skipped tests name a required component (make test runs every one; see docs/testing.md):\n", len(required), len(skips))
		for _, s := range required {
			reason := s.reason
			if len(reason) > 100 {
				reason = reason[:100] + "..."
			}
			fmt.Printf("  %s: %s\n", strings.TrimPrefix(s.name, module), reason)
		}
		os.Exit(1)
	}
	fmt.Printf("%s: %d tests, %d skipped, none for a required component\n", *title, tests, len(skips))
}

// read returns the number of tests that ended (passed, failed or
// skipped, subtests included) and the skipped ones in the order they
// ended.
func read(files []string) (int, []skip, error) {
	tests := 0
	var skips []skip
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return 0, nil, err
		}
		output := map[string]*strings.Builder{}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for line := 1; sc.Scan(); line++ {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				f.Close()
				return 0, nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if e.Test == "" {
				continue
			}
			key := e.Package + " " + e.Test
			switch e.Action {
			case "output":
				if ownLine(e.Output) {
					continue
				}
				b := output[key]
				if b == nil {
					b = &strings.Builder{}
					output[key] = b
				}
				b.WriteString(e.Output)
			case "pass", "fail":
				tests++
				delete(output, key)
			case "skip":
				tests++
				reason := "(no reason given)"
				if b := output[key]; b != nil {
					reason = strings.Join(strings.Fields(b.String()), " ")
				}
				skips = append(skips, skip{name: key, reason: reason})
				delete(output, key)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return 0, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return tests, skips, nil
}

// ownLine reports whether a line of output is go test's own (=== RUN,
// --- SKIP: ...), not the test's.
func ownLine(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "skips:", err)
	os.Exit(2)
}
