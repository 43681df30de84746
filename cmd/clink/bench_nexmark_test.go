package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int64{"10M": 10_000_000, "500k": 500_000, "1.5M": 1_500_000, "2000": 2000} {
		if got, err := parseCount(in); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseCount("ten"); err == nil {
		t.Error("parseCount(ten) did not fail")
	}
}

// clink bench nexmark runs end to end via Kafka on a small stream: broker
// and producer as child processes, hand loops and engine, latency and
// state runs, JSON results and the rendered table.
func TestBenchNexmarkSmall(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	doc := filepath.Join(dir, "perf.md")
	os.WriteFile(doc, []byte("# Performance\n\n<!-- nexmark:begin -->\nold\n<!-- nexmark:end -->\n\nafter\n"), 0o644)
	results := filepath.Join(dir, "results")
	out := clink(t, bin, "", "bench", "nexmark", "--query", "q0,q5,q12", "--events", "60k", "--via-kafka", "--runs", "1",
		"--latency-seconds", "1", "--state-events", "400k", "--results", results, "--doc", doc)
	for _, want := range []string{"nexmark: 60000 events (kafka)", "q0 ", "q5 ", "q12 "} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	for _, q := range []string{"q0", "q5", "q12"} {
		b, err := os.ReadFile(filepath.Join(results, q+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Mode   string
			Engine struct{ Events int64 }
			Hand   struct{ EventsPerCPUSecond float64 } `json:"hand_loop"`
			Ratio  float64                              `json:"engine_over_hand"`
			State  *struct{ Entries int64 }
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r.Mode != "kafka" || r.Engine.Events != 55200 || r.Ratio <= 0 {
			t.Errorf("%s: %s", q, b)
		}
		if q != "q0" && (r.State == nil || r.State.Entries == 0) {
			t.Errorf("%s: no state measured: %s", q, b)
		}
	}
	b, _ := os.ReadFile(doc)
	if s := string(b); strings.Contains(s, "old") || !strings.Contains(s, "| q5* |") || !strings.HasSuffix(s, "<!-- nexmark:end -->\n\nafter\n") {
		t.Errorf("rendered doc:\n%s", s)
	}
}
