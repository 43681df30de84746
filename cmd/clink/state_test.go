package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/clink-dev/clink/checkpoint"
)

// writeState writes checkpoint id into dir: a window aggregate (count and
// DECIMAL sum per key and window) and a source's raw offsets.
func writeState(t *testing.T, dir string, id uint64, counts map[string]int64, offset int64) {
	t.Helper()
	store, err := checkpoint.NewStore(dir, checkpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := store.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	write := func(op string, slots []checkpoint.Slot, fill func(*checkpoint.RowBuilder)) {
		p, err := w.Part(op, 0, slots)
		if err != nil {
			t.Fatal(err)
		}
		b := checkpoint.NewRowBuilder(memory.DefaultAllocator, p.Schema())
		defer b.Release()
		fill(b)
		rec, err := b.NewRecord()
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		if err := p.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("window_agg", []checkpoint.Slot{{Name: "window_agg", Values: []arrow.Field{
		{Name: "cnt", Type: arrow.PrimitiveTypes.Int64},
		{Name: "total", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
	}}}, func(b *checkpoint.RowBuilder) {
		for _, k := range []string{"a", "b", "c"} {
			n, ok := counts[k]
			if !ok {
				continue
			}
			b.Windowed("window_agg", int32(k[0])%128, `["`+k+`"]`, 0, 10000)
			b.Value("cnt").(*array.Int64Builder).Append(n)
			b.Value("total").(*array.Decimal128Builder).Append(decimal128.FromI64(n * 150))
		}
	})
	write("source", []checkpoint.Slot{{Name: "source_offsets", Raw: true, Values: []arrow.Field{
		{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
		{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	}}}, func(b *checkpoint.RowBuilder) {
		b.Raw("source_offsets")
		b.Value("partition").(*array.Int32Builder).Append(0)
		b.Value("offset").(*array.Int64Builder).Append(offset)
	})
	if err := w.Commit(checkpoint.Meta{Job: "counts"}); err != nil {
		t.Fatal(err)
	}
}

// runCLI runs the binary and returns stdout, stderr and the exit code.
func runCLI(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return o.String(), e.String(), 0
	case errors.As(err, &ee):
		return o.String(), e.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", "", 0
}

func TestStateTools(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	writeState(t, dir, 1, map[string]int64{"a": 2, "b": 1}, 10)
	writeState(t, dir, 2, map[string]int64{"a": 3, "c": 1}, 14)
	chk2 := filepath.Join(dir, "chk-2")

	ok := func(args ...string) string {
		t.Helper()
		out, stderr, code := runCLI(t, bin, args...)
		if code != 0 {
			t.Fatalf("clink %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
		}
		return out
	}

	t.Run("cat", func(t *testing.T) {
		out := ok("state-cat", "--checkpoint-dir", dir)
		for _, want := range []string{"checkpoint 2  " + chk2, `job "counts"`, "window_agg-0.arrow", `["a"]`, "[0,10000)", "cnt=3 total=4.50", "<raw>", "partition=0 offset=14", "(3 rows)"} {
			if !strings.Contains(out, want) {
				t.Errorf("state-cat lacks %q:\n%s", want, out)
			}
		}
		// A path, flags after it, JSON.
		out = ok("state-cat", filepath.Join(dir, "chk-1"), "--operator", "window_agg", "--format=json", "--limit", "1")
		if want := `{"slot":"window_agg","key_group":97,"key":"[\"a\"]","window_start":0,"window_end":10000,"operator":"window_agg","subtask":0,"cnt":2,"total":3.00}` + "\n"; out != want {
			t.Errorf("got %q, want %q", out, want)
		}
	})

	t.Run("diff", func(t *testing.T) {
		want := "checkpoint 1 -> 2\nsource/source_offsets: +0 -0 ~1\nwindow_agg/window_agg: +1 -1 ~1\n"
		if out := ok("state-diff", filepath.Join(dir, "chk-1"), chk2); out != want {
			t.Errorf("got\n%s\nwant\n%s", out, want)
		}
		out := ok("state-diff", "--checkpoint-dir", dir, "--from", "1", "--verbose")
		for _, want := range []string{
			`  + ["c"] [0,10000)  cnt=1 total=1.50`,
			`  - ["b"] [0,10000)  cnt=1 total=1.50`,
			`  ~ ["a"] [0,10000)  cnt=2 total=3.00 -> cnt=3 total=4.50`,
			`  ~ <raw> subtask=0  partition=0 offset=10 -> partition=0 offset=14`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("state-diff --verbose lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("export", func(t *testing.T) {
		out := t.TempDir()
		got := ok("state-export", "--format=parquet", "--out", out, chk2)
		if !strings.Contains(got, filepath.Join(out, "window_agg-0.parquet")+"\t2 rows") {
			t.Errorf("state-export parquet: %q", got)
		}
		got = ok("state-export", "--format=arrow", "--out", out, "--slot", "source_offsets", chk2)
		if got != filepath.Join(out, "source-0.arrow")+"\t1 rows\n" {
			t.Errorf("state-export arrow: %q", got)
		}
		ice := filepath.Join(t.TempDir(), "ice")
		ok("state-export", "--format=iceberg", "--out", ice, "--checkpoint-dir", dir, "--id", "1")
		got = ok("state-export", "--format=iceberg", "--out", ice, "--checkpoint-dir", dir)
		if got != "clink.source\t1 rows\nclink.window_agg\t2 rows\n" {
			t.Errorf("state-export iceberg: %q", got)
		}
		if _, err := os.Stat(filepath.Join(ice, "catalog.db")); err != nil {
			t.Error(err)
		}
	})

	t.Run("export one file", func(t *testing.T) {
		// The tutorial's spelling: --dir, --id, --out FILE.parquet.
		path := filepath.Join(t.TempDir(), "state.parquet")
		out, stderr, code := runCLI(t, bin, "state-export", "--dir", dir, "--id", "1", "--out", path)
		if code != 0 || out != path+"\t3 rows\n" || !strings.Contains(stderr, "checkpoint 1 (") || !strings.Contains(stderr, "1 file written") {
			t.Fatalf("state-export --out FILE.parquet: exit %d %q %q", code, out, stderr)
		}
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tbl.Release()
		var names []string
		for _, f := range tbl.Schema().Fields() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, ","); tbl.NumRows() != 3 || got != "slot,key_group,key,window_start,window_end,partition,offset,cnt,total,tags,operator,subtask" {
			t.Errorf("%d rows, columns %s", tbl.NumRows(), got)
		}
		if _, stderr, code := runCLI(t, bin, "state-export", "--format=arrow", "--dir", dir, "--out", path); code != 2 || !strings.Contains(stderr, "is for --format parquet") {
			t.Errorf("--format arrow --out FILE.parquet: exit %d %s", code, stderr)
		}
	})

	t.Run("query", func(t *testing.T) {
		got := ok("state-query", "--checkpoint-dir", dir, "--operator", "window_agg",
			"--sql", "SELECT key, cnt, total * 2 AS twice FROM state WHERE slot = 'window_agg' AND cnt > 1")
		if want := `{"key":"[\"a\"]","cnt":3,"twice":9.00}` + "\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		got = ok("state-query", chk2, "--sql", "SELECT operator, `offset` FROM state WHERE key_group = -1")
		if want := `{"operator":"source","offset":14}` + "\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
		_, stderr, code := runCLI(t, bin, "state-query", chk2, "--sql", "SELECT nope FROM state")
		if code != 1 || !strings.Contains(stderr, "line 1:8: column nope does not exist\nSELECT nope FROM state\n       ^") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		_, stderr, _ = runCLI(t, bin, "state-query", chk2, "--sql", "SELECT tags FROM state")
		if !strings.Contains(stderr, "note: column tags (list<item: utf8, nullable>) of window_agg is left out") {
			t.Errorf("stderr %q", stderr)
		}
	})
}

// Bad checkpoints are errors naming the file, exit 1, never a panic.
func TestStateToolsErrors(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	writeState(t, dir, 1, map[string]int64{"a": 2}, 10)
	os.Mkdir(filepath.Join(dir, "chk-2"), 0o755) // incomplete
	part := filepath.Join(dir, "chk-1", "window_agg-0.arrow")
	data, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(part, data[:len(data)-100], 0o644)
	out := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"state-cat", "--checkpoint-dir", dir}, "checkpoint: " + part + ": truncated"},
		{[]string{"state-cat", filepath.Join(dir, "chk-2")}, "checkpoint: " + filepath.Join(dir, "chk-2") + ": checkpoint 2 is incomplete"},
		{[]string{"state-cat", filepath.Join(dir, "chk-9")}, "checkpoint: " + filepath.Join(dir, "chk-9") + ": no such checkpoint"},
		{[]string{"state-export", "--out", out, "--checkpoint-dir", dir, "--id", "1"}, "checkpoint: " + part + ": truncated"},
		{[]string{"state-diff", filepath.Join(dir, "chk-1"), filepath.Join(dir, "chk-1")}, "checkpoint: " + part + ": truncated"},
		{[]string{"state-query", "--checkpoint-dir", dir, "--sql", "SELECT 1 FROM state"}, "checkpoint: " + part + ": truncated"},
	} {
		_, stderr, code := runCLI(t, bin, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "panic") {
			t.Errorf("clink %s: exit %d, stderr %q; want exit 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	// Same size, flipped bytes: found by the checksum when the part is read.
	data[len(data)/2] ^= 0xff
	os.WriteFile(part, data, 0o644)
	_, stderr, code := runCLI(t, bin, "state-cat", filepath.Join(dir, "chk-1"))
	if code != 1 || !strings.Contains(stderr, "checkpoint: "+part+": SHA-256 mismatch") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCLI(t, bin, "state-cat")
	if code != 2 || !strings.Contains(stderr, "give a checkpoint") {
		t.Errorf("no checkpoint: exit %d, stderr %q", code, stderr)
	}
}
