package stateio

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clink-dev/clink/checkpoint"
	"github.com/clink-dev/clink/checkpoint/stateio/parquet"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	writeCheckpoint(t, dir, 1, baseState())
	writeCheckpoint(t, dir, 2, baseState())
	os.Mkdir(filepath.Join(dir, "chk-3"), 0o755) // incomplete
	for _, tc := range []struct {
		path string
		id   uint64
		want uint64
	}{
		{dir, 0, 2},
		{dir, 1, 1},
		{filepath.Join(dir, "chk-1"), 0, 1},
		{filepath.Join(dir, "chk-1") + "/", 1, 1},
	} {
		c, err := Open(tc.path, tc.id)
		if err != nil {
			t.Fatalf("Open(%s, %d): %v", tc.path, tc.id, err)
		}
		if c.ID != tc.want {
			t.Errorf("Open(%s, %d) = checkpoint %d, want %d", tc.path, tc.id, c.ID, tc.want)
		}
	}
	for _, tc := range []struct {
		path string
		id   uint64
		kind error
		msg  string
	}{
		{filepath.Join(dir, "nope"), 0, checkpoint.ErrMissing, "nope: no such checkpoint"},
		{filepath.Join(dir, "chk-3"), 0, checkpoint.ErrIncomplete, "chk-3: checkpoint 3 is incomplete"},
		{dir, 3, checkpoint.ErrIncomplete, "checkpoint 3 is incomplete"},
		{dir, 9, checkpoint.ErrMissing, "checkpoint 9 does not exist"},
		{t.TempDir(), 0, checkpoint.ErrMissing, "no checkpoint"},
		{filepath.Join(dir, "chk-1", checkpoint.ManifestName), 0, checkpoint.ErrMissing, "not a directory"},
	} {
		_, err := Open(tc.path, tc.id)
		var fe *checkpoint.FileError
		if !errors.As(err, &fe) || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Open(%s, %d) = %v, want a %v FileError with %q", tc.path, tc.id, err, tc.kind, tc.msg)
		}
	}
	if _, err := Open(filepath.Join(dir, "chk-1"), 2); err == nil || !strings.Contains(err.Error(), "is checkpoint 1, not 2") {
		t.Errorf("chk-1 with id 2: %v", err)
	}
}

func TestCatTable(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	var out bytes.Buffer
	if err := Cat(&out, c, CatOptions{}); err != nil {
		t.Fatal(err)
	}
	got := squeeze(out.String())
	for _, want := range []string{
		"checkpoint 7  " + c.Path,
		`job "sensors"  created `,
		"max_parallelism 128",
		"property k = v",
		"source-0.arrow",
		"3 parts",
		`source      0        source_offsets  -1         <raw>  -       partition=0 offset=1284`,
		`source      0        watermark       -1         <raw>  -       watermark=1772352057000`,
		`window_agg  0        window_agg  3          ["sensor-01"]  [0,60000)       sum_amount=215.40 cnt=10 last_seen="2026-03-01 08:00:00.123"`,
		`window_agg  0        tags        5          ["eu",3]       -               tags=["a<b"]`,
		`window_agg  1        window_agg  100        ["sensor-02"]  [0,60000)  sum_amount=-7.05 cnt=3`,
		"(7 rows)",
	} {
		if !strings.Contains(got, squeeze(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Deterministic order: operator, subtask, file order.
	if i, j := strings.Index(got, "source_offsets"), strings.Index(got, `["sensor-02"]`); i < 0 || j < 0 || i > j {
		t.Errorf("source rows should come before window_agg subtask 1:\n%s", got)
	}
}

func TestCatJSON(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	var out bytes.Buffer
	if err := Cat(&out, c, CatOptions{JSON: true, Selection: Selection{Operator: "window_agg", Slot: "window_agg"}, Limit: 2}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{
		`{"slot":"window_agg","key_group":3,"key":"[\"sensor-01\"]","window_start":0,"window_end":60000,"operator":"window_agg","subtask":0,"sum_amount":215.40,"cnt":10,"last_seen":"2026-03-01 08:00:00.123"}`,
		`{"slot":"window_agg","key_group":3,"key":"[\"sensor-01\"]","window_start":60000,"window_end":120000,"operator":"window_agg","subtask":0,"sum_amount":1.00,"cnt":1,"last_seen":"2026-03-01 08:01:00.000"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not JSON: %s: %v", l, err)
		}
	}
	out.Reset()
	if err := Cat(&out, c, CatOptions{JSON: true, Selection: Selection{Slot: "source_offsets"}}); err != nil {
		t.Fatal(err)
	}
	if want := `{"slot":"source_offsets","key_group":-1,"key":null,"window_start":null,"window_end":null,"operator":"source","subtask":0,"partition":1,"offset":977}`; !strings.Contains(out.String(), want) {
		t.Errorf("got\n%s\nwant a line\n%s", out.String(), want)
	}
}

func TestSelectionErrors(t *testing.T) {
	c := writeCheckpoint(t, t.TempDir(), 7, baseState())
	err := Cat(&bytes.Buffer{}, c, CatOptions{Selection: Selection{Operator: "nope"}})
	if err == nil || !strings.Contains(err.Error(), `no operator "nope" (operators: source, window_agg)`) {
		t.Errorf("unknown operator: %v", err)
	}
	err = Cat(&bytes.Buffer{}, c, CatOptions{Selection: Selection{Operator: "source", Slot: "window_agg"}})
	if err == nil || !strings.Contains(err.Error(), `no slot "window_agg" in the parts read (slots: source_offsets, watermark)`) {
		t.Errorf("unknown slot: %v", err)
	}
}

// A part damaged after the checkpoint was written is an error naming the
// file, from every tool.
func TestCorruptPart(t *testing.T) {
	dir := t.TempDir()
	c := writeCheckpoint(t, dir, 7, baseState())
	part := filepath.Join(c.Path, "window_agg-1.arrow")
	data, _ := os.ReadFile(part)
	os.WriteFile(part, data[:len(data)/2], 0o644)
	if _, err := Open(dir, 0); err == nil || !strings.Contains(err.Error(), part+": truncated") {
		t.Fatalf("Open: %v", err)
	}
	// Same size, other bytes: found when the part is read.
	data[len(data)/2] ^= 0xff
	os.WriteFile(part, data, 0o644)
	c, err := Open(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		var fe *checkpoint.FileError
		if !errors.As(err, &fe) || fe.Path != part || !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Errorf("%s: %v, want a corrupt-file error naming %s", what, err, part)
		}
	}
	check("cat", Cat(&bytes.Buffer{}, c, CatOptions{}))
	_, err = Export(t.Context(), c, ExportOptions{Format: Parquet, Dir: t.TempDir(), WriteParquet: parquet.Write})
	check("export", err)
	_, err = Diff(c, c, Selection{})
	check("diff", err)
}

// squeeze collapses runs of spaces, so that tests do not depend on column
// widths.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
