package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestLoggerFormats: the text form keeps Clink's lines (job_id first,
// "warning: " for warnings, no other attributes); the JSON form carries
// them all as fields.
func TestLoggerFormats(t *testing.T) {
	var tb, jb bytes.Buffer
	text, err := NewLogger(&tb, "text", "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	js, err := NewLogger(&jb, "json", "coordinator")
	if err != nil {
		t.Fatal(err)
	}
	Line(text.With("attempt", 2), "job_id=7 checkpoint 3 complete (2 parts, 10ms)")
	Line(text, "warning: the Coordinator at x has not answered for 1.5s")
	w := Writer(text.With("job_id", "7", "attempt", 2))
	w.Write([]byte("2026-12-02T21:31:32.138Z clink: warning: kafka source 'i': cannot reach brokers b for 5.9s\npartial"))
	w.Write([]byte(" line\n"))
	lines := strings.Split(strings.TrimSpace(tb.String()), "\n")
	want := []string{
		" coordinator: job_id=7 checkpoint 3 complete (2 parts, 10ms)",
		" coordinator: warning: the Coordinator at x has not answered for 1.5s",
		" coordinator: job_id=7 warning: kafka source 'i': cannot reach brokers b for 5.9s",
		" coordinator: job_id=7 partial line",
	}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", tb.String())
	}
	for i, l := range lines {
		if !strings.HasSuffix(l, want[i]) || len(l) != len("2026-12-02T21:31:32.138Z")+len(want[i]) {
			t.Errorf("line %d: %q, want TIME%q", i, l, want[i])
		}
	}
	Line(js.With("attempt", 2, "epoch", 3), "job_id=7 warning: checkpoint 3 failed")
	var rec map[string]any
	if err := json.Unmarshal(jb.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, jb.String())
	}
	if rec["level"] != "WARN" || rec["msg"] != "checkpoint 3 failed" || rec["job_id"] != "7" || rec["attempt"] != 2.0 || rec["epoch"] != 3.0 || rec["role"] != "coordinator" {
		t.Fatalf("json record: %v", rec)
	}
	if _, err := NewLogger(&tb, "xml", "c"); err == nil {
		t.Fatal("xml accepted")
	}
}
