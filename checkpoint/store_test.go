package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := NewStore(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// writeParts writes checkpoint id with one part per subtask of "agg", each
// holding batches records of rows rows, and commits it. It returns the
// records written per subtask.
func writeParts(t testing.TB, s *Store, id uint64, subtasks, batches, rows int) map[int][]arrow.RecordBatch {
	t.Helper()
	w, err := s.Begin(id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]arrow.RecordBatch{}
	for st := 0; st < subtasks; st++ {
		p, err := w.Part("agg", st, aggSlots)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < batches; b++ {
			rec := aggRecord(t, p.Schema(), st*100+b, rows)
			if err := p.Write(rec); err != nil {
				t.Fatal(err)
			}
			out[st] = append(out[st], rec)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(Meta{Job: "test", Fingerprint: "fp-1"}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		name string
		comp Compression
	}{{"lz4", CompressLZ4}, {"zstd", CompressZstd}, {"none", CompressNone}} {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			s := newStore(t, Options{Compression: c.comp, Allocator: mem})
			w, err := s.Begin(7)
			if err != nil {
				t.Fatal(err)
			}
			written := map[string][]arrow.RecordBatch{}
			// Two subtasks of an aggregate, one of a source with only raw
			// state, and one empty part.
			for _, pt := range []struct {
				op      string
				subtask int
				slots   []Slot
				batches int
			}{
				{"agg", 0, aggSlots, 3},
				{"agg", 1, aggSlots, 1},
				{"kafka-source", 0, aggSlots[2:], 2},
				{"sink.files", 0, aggSlots[3:], 0},
			} {
				p, err := w.Part(pt.op, pt.subtask, pt.slots)
				if err != nil {
					t.Fatal(err)
				}
				for b := 0; b < pt.batches; b++ {
					var rec arrow.RecordBatch
					if pt.op == "kafka-source" {
						rb := NewRowBuilder(mem, p.Schema())
						for i := 0; i < 5; i++ {
							rb.Raw("source_offsets")
							rb.Value("partition").(*array.Int32Builder).Append(int32(i))
							if i != 3 {
								rb.Value("offset").(*array.Int64Builder).Append(int64(100*b + i))
							}
						}
						rb.Raw("watermark")
						rb.Value("watermark").(*array.Int64Builder).Append(-5)
						rec, err = rb.NewRecord()
						rb.Release()
						if err != nil {
							t.Fatal(err)
						}
					} else {
						rec = aggRecord(t, p.Schema(), pt.subtask*10+b, 50)
					}
					if err := p.Write(rec); err != nil {
						t.Fatal(err)
					}
					written[partFileName(pt.op, pt.subtask)] = append(written[partFileName(pt.op, pt.subtask)], rec)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Commit(Meta{Job: "sensors", Fingerprint: "plan-abc", Properties: map[string]string{"k": "v"}}); err != nil {
				t.Fatal(err)
			}

			id, ok, err := s.Latest()
			if err != nil || !ok || id != 7 {
				t.Fatalf("Latest = %d, %v, %v; want 7", id, ok, err)
			}
			cp, err := s.Open(7)
			if err != nil {
				t.Fatal(err)
			}
			m := cp.Manifest
			if m.FormatVersion != 1 || m.CheckpointID != 7 || m.Job != "sensors" || m.Fingerprint != "plan-abc" ||
				m.MaxParallelism != 128 || m.Properties["k"] != "v" || m.Created.IsZero() {
				t.Fatalf("manifest %+v", m)
			}
			var names []string
			for _, p := range cp.Parts() {
				names = append(names, p.File)
				data, err := os.ReadFile(filepath.Join(cp.Path, p.File))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				if int64(len(data)) != p.Bytes || hex.EncodeToString(sum[:]) != p.SHA256 {
					t.Errorf("%s: manifest says %d bytes %s", p.File, p.Bytes, p.SHA256)
				}
			}
			if got := strings.Join(names, " "); got != "agg-0.arrow agg-1.arrow kafka-source-0.arrow sink.files-0.arrow" {
				t.Fatalf("parts %s", got)
			}
			if err := cp.Verify(); err != nil {
				t.Fatal(err)
			}
			for _, info := range cp.Parts() {
				part, err := cp.ReadPart(info.Operator, info.Subtask)
				if err != nil {
					t.Fatal(err)
				}
				want := written[info.File]
				if len(part.Records) != len(want) || part.NumRows() != info.Rows {
					t.Fatalf("%s: %d records %d rows, want %d records %d rows", info.File, len(part.Records), part.NumRows(), len(want), info.Rows)
				}
				for i := range want {
					sameRows(t, part.Records[i], want[i])
				}
				md := part.Schema.Metadata()
				for k, v := range map[string]string{
					MetaFormatVersion: "1", MetaOperator: info.Operator, MetaSubtask: fmt.Sprint(info.Subtask),
					MetaCheckpointID: "7", MetaMaxParallelism: "128",
				} {
					if got, _ := md.GetValue(k); got != v {
						t.Errorf("%s: metadata %s = %q, want %q", info.File, k, got, v)
					}
				}
				part.Release()
			}
			for _, recs := range written {
				for _, r := range recs {
					r.Release()
				}
			}
		})
	}
}

func TestSchemaLayout(t *testing.T) {
	sc, err := Schema(aggSlots)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range sc.Fields() {
		got = append(got, fieldString(f))
	}
	want := []string{
		`"slot" utf8 not null`, `"key_group" int32 not null`, `"key" utf8 nullable`,
		`"window_start" int64 nullable`, `"window_end" int64 nullable`,
		`"sum_v" float64 nullable`, `"cnt" int64 nullable`, `"tags" list<item: utf8, nullable> nullable`,
		`"partition" int32 nullable`, `"offset" int64 nullable`, `"watermark" int64 nullable`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("schema\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := newStore(t, Options{})
	w, _ := s.Begin(1)
	p, err := w.Part("agg", 0, aggSlots)
	if err != nil {
		t.Fatal(err)
	}
	slots, _ := p.Schema().Metadata().GetValue(MetaSlots)
	if wantSlots := `[{"name":"window_agg","values":["sum_v","cnt"]},{"name":"distinct_keys","values":["cnt","tags"]},{"name":"source_offsets","raw":true,"values":["partition","offset"]},{"name":"watermark","raw":true,"values":["watermark"]}]`; slots != wantSlots {
		t.Fatalf("clink.slots = %s", slots)
	}
	// A record built against Schema (no metadata) is accepted.
	rec := aggRecord(t, sc, 1, 8)
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		t.Fatal(err)
	}
	p.Close()
	w.Abort()
}

func TestBadSlots(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	for _, c := range []struct {
		slots []Slot
		want  string
	}{
		{nil, "no slots declared"},
		{[]Slot{{Name: ""}}, "slot name is empty"},
		{[]Slot{{Name: "<raw>"}}, `slot name "<raw>": names starting with '<' are reserved`},
		{[]Slot{{Name: "a"}, {Name: "a"}}, `slot "a" declared twice`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "Key", Type: i64}}}}, `slot "a": value column "Key" clashes with column "key" (names are compared case-insensitively)`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "x", Type: i64}, {Name: "X", Type: i64}}}}, `slot "a": value column "X" clashes with column "x" (names are compared case-insensitively)`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "x", Type: i64}}}, {Name: "b", Values: []arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}}}, `slot "b": value column "x" is int32, another slot declares it int64`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "u", Type: arrow.DenseUnionOf(nil, nil)}}}}, `slot "a": value column "u": type dense_union<> is not allowed in state files`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "d", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}}}}}, `slot "a": value column "d": type dictionary<values=utf8, indices=int32, ordered=false> is not allowed in state files`},
		{[]Slot{{Name: "a", Values: []arrow.Field{{Name: "s", Type: arrow.StructOf()}}}}, `slot "a": value column "s": struct with no fields`},
	} {
		_, err := Schema(c.slots)
		if err == nil || err.Error() != c.want {
			t.Errorf("Schema(%v): %v, want %s", c.slots, err, c.want)
		}
	}
}

func TestWriteRejectsBadRows(t *testing.T) {
	sc, _ := Schema(aggSlots)
	for _, c := range []struct {
		name  string
		build func(b *RowBuilder)
		want  string
	}{
		{"raw with key group", func(b *RowBuilder) { b.Keyed("watermark", 3, `[1]`) },
			`row 0: <raw> slot "watermark" needs key_group -1, a null key and no window (got key_group 3)`},
		{"key group range", func(b *RowBuilder) { b.Keyed("window_agg", 128, `[1]`) },
			`row 0 (slot "window_agg"): key_group 128 out of [0, 128)`},
		{"keyed raw group", func(b *RowBuilder) { b.Raw("window_agg") },
			`row 0 (slot "window_agg"): key_group -1 out of [0, 128)`},
		{"undeclared", func(b *RowBuilder) { b.Raw("nope") },
			`row 0: slot "nope" is not declared in clink.slots`},
		{"empty window", func(b *RowBuilder) { b.Windowed("window_agg", 1, `[1]`, 10, 10) },
			`row 0 (slot "window_agg"): window [10, 10) is empty`},
		{"foreign column", func(b *RowBuilder) {
			b.Keyed("window_agg", 1, `[1]`)
			b.Raw("watermark")
			b.Value("offset").(*array.Int64Builder).Append(1)
		}, `row 1 (slot "watermark"): column "offset" belongs to other slots and must be null`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, Options{})
			w, _ := s.Begin(1)
			p, err := w.Part("agg", 0, aggSlots)
			if err != nil {
				t.Fatal(err)
			}
			b := NewRowBuilder(memory.DefaultAllocator, sc)
			c.build(b)
			rec, err := b.NewRecord()
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			want := "checkpoint: " + filepath.Join(s.Path(1), "agg-0.arrow") + ": " + c.want
			if err := p.Write(rec); err == nil || err.Error() != want {
				t.Fatalf("Write: %v\nwant %s", err, want)
			}
			if err := p.Close(); err == nil || err.Error() != want {
				t.Fatalf("Close: %v", err)
			}
			if err := w.Commit(Meta{}); err == nil || !strings.Contains(err.Error(), "part failed: "+want) {
				t.Fatalf("Commit: %v", err)
			}
			if _, ok, _ := s.Latest(); ok {
				t.Fatal("a failed checkpoint is complete")
			}
		})
	}
}

func TestRowBuilderTwoValues(t *testing.T) {
	sc, _ := Schema(aggSlots)
	b := NewRowBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Raw("watermark")
	b.Value("watermark").(*array.Int64Builder).Append(1)
	b.Value("watermark").(*array.Int64Builder).Append(2)
	if _, err := b.NewRecord(); err == nil || err.Error() != `checkpoint: value column "watermark" has 2 values for 1 rows` {
		t.Fatalf("NewRecord: %v", err)
	}
	// The builder is usable again.
	b.Raw("watermark")
	rec, err := b.NewRecord()
	if err != nil || rec.NumRows() != 1 {
		t.Fatalf("after reset: %v", err)
	}
	rec.Release()
}

// TestCrash: a Writer abandoned before Commit (the process died) leaves an
// incomplete directory that Latest ignores, Open refuses, and Retain of the
// next process removes; Retain of the writing process leaves it alone.
func TestCrash(t *testing.T) {
	s := newStore(t, Options{})
	writeParts(t, s, 1, 2, 1, 10)
	w, err := s.Begin(2)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.Part("agg", 0, aggSlots)
	rec := aggRecord(t, p.Schema(), 1, 10)
	defer rec.Release()
	if err := p.Write(rec); err != nil {
		t.Fatal(err)
	}
	p.Close()
	// A crash during the manifest write leaves only its temp file.
	if err := os.WriteFile(filepath.Join(s.Path(2), "."+ManifestName+".tmp-1234"), []byte(`{"format_ver`), 0o644); err != nil {
		t.Fatal(err)
	}

	if id, ok, _ := s.Latest(); !ok || id != 1 {
		t.Fatalf("Latest = %d %v, want 1", id, ok)
	}
	if err := s.Retain(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(2)); err != nil {
		t.Fatalf("Retain removed the checkpoint being written: %v", err)
	}

	// The process dies; the next one opens the same directory.
	s2, err := NewStore(s.Dir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	list, _ := s2.List()
	if fmt.Sprint(list) != fmt.Sprintf("[{1 true %s} {2 false %s}]", s.Path(1), s.Path(2)) {
		t.Fatalf("List = %v", list)
	}
	if id, ok, _ := s2.Latest(); !ok || id != 1 {
		t.Fatalf("Latest = %d %v, want 1", id, ok)
	}
	_, err = s2.Open(2)
	if want := "checkpoint: " + s.Path(2) + ": checkpoint 2 is incomplete (no _metadata.json)"; err == nil || err.Error() != want || !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Open(2): %v", err)
	}
	if n, _ := s2.NextID(); n != 3 {
		t.Fatalf("NextID = %d", n)
	}
	if err := s2.Retain(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(2)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("incomplete checkpoint not removed: %v", err)
	}
	if _, err := s2.Open(1); err != nil {
		t.Fatal(err)
	}
	// The dead Writer's id can be begun again.
	writeParts(t, s2, 2, 1, 1, 5)
	if id, _, _ := s2.Latest(); id != 2 {
		t.Fatalf("Latest = %d", id)
	}
}

func TestRetain(t *testing.T) {
	s := newStore(t, Options{})
	for id := uint64(1); id <= 5; id++ {
		writeParts(t, s, id, 1, 1, 4)
	}
	if err := os.Mkdir(filepath.Join(s.Dir(), "chk-03"), 0o755); err != nil { // not ours: left alone
		t.Fatal(err)
	}
	w, _ := s.Begin(6) // in progress: kept
	if err := s.Retain(2); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List()
	var ids []string
	for _, c := range list {
		ids = append(ids, fmt.Sprintf("%d:%v", c.ID, c.Complete))
	}
	if got := strings.Join(ids, " "); got != "4:true 5:true 6:false" {
		t.Fatalf("after Retain(2): %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "chk-03")); err != nil {
		t.Fatal(err)
	}
	if err := s.Retain(0); err == nil {
		t.Fatal("Retain(0) accepted")
	}
	if err := w.Commit(Meta{}); err != nil { // an empty checkpoint is fine
		t.Fatal(err)
	}
	if err := w.Abort(); err == nil {
		t.Fatal("Abort after Commit accepted")
	}
	if _, err := s.Begin(6); err == nil || err.Error() != "checkpoint 6: already exists (complete) in "+s.Path(6) {
		t.Fatalf("Begin(6) again: %v", err)
	}
	if id, _, _ := s.Latest(); id != 6 {
		t.Fatalf("Latest = %d", id)
	}
}

func TestWriterMisuse(t *testing.T) {
	s := newStore(t, Options{})
	w, _ := s.Begin(1)
	if _, err := s.Begin(1); err == nil || err.Error() != "checkpoint 1: already being written" {
		t.Fatalf("Begin twice: %v", err)
	}
	if _, err := s.Begin(0); err == nil {
		t.Fatal("Begin(0) accepted")
	}
	p, _ := w.Part("agg", 0, aggSlots)
	if _, err := w.Part("agg", 0, aggSlots); err == nil || err.Error() != "checkpoint 1: part agg-0.arrow created twice" {
		t.Fatalf("Part twice: %v", err)
	}
	for _, op := range []string{"", "../x", "a/b", ".hidden", "a b"} {
		if _, err := w.Part(op, 0, aggSlots); err == nil {
			t.Errorf("operator %q accepted", op)
		}
	}
	if err := w.Commit(Meta{}); err == nil || err.Error() != "checkpoint 1: 1 part(s) not closed" {
		t.Fatalf("Commit with open part: %v", err)
	}
	p.Close()
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.Path(1)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Abort left the directory")
	}
}

// corrupt writes checkpoint 1 (two parts) and applies f to its directory.
func corrupt(t *testing.T, f func(dir string)) (*Store, error) {
	t.Helper()
	s := newStore(t, Options{})
	recs := writeParts(t, s, 1, 2, 2, 20)
	for _, rs := range recs {
		for _, r := range rs {
			r.Release()
		}
	}
	f(s.Path(1))
	cp, err := s.Open(1)
	if err != nil {
		return s, err
	}
	return s, cp.Verify()
}

func editManifest(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	data, _ = json.Marshal(m)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCorruption(t *testing.T) {
	part := func(dir string) string { return filepath.Join(dir, "agg-1.arrow") }
	manifest := func(dir string) string { return filepath.Join(dir, ManifestName) }
	size := func(path string) int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	sum := func(path string) string {
		data, _ := os.ReadFile(path)
		s := sha256.Sum256(data)
		return hex.EncodeToString(s[:])
	}
	for _, c := range []struct {
		name string
		kind error
		edit func(dir string) (file, want string)
	}{
		{"part truncated", ErrCorrupt, func(dir string) (string, string) {
			n := size(part(dir))
			os.Truncate(part(dir), n-10)
			return part(dir), fmt.Sprintf("truncated: %d bytes, _metadata.json says %d", n-10, n)
		}},
		{"part extended", ErrCorrupt, func(dir string) (string, string) {
			n := size(part(dir))
			f, _ := os.OpenFile(part(dir), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("xx"))
			f.Close()
			return part(dir), fmt.Sprintf("longer than written: %d bytes, _metadata.json says %d", n+2, n)
		}},
		{"part bit flip", ErrCorrupt, func(dir string) (string, string) {
			want := sum(part(dir))
			data, _ := os.ReadFile(part(dir))
			data[len(data)/2] ^= 0x40
			os.WriteFile(part(dir), data, 0o644)
			return part(dir), fmt.Sprintf("SHA-256 mismatch: file has %s, _metadata.json says %s", sum(part(dir)), want)
		}},
		{"part missing", ErrMissing, func(dir string) (string, string) {
			os.Remove(part(dir))
			return part(dir), "part listed in _metadata.json does not exist"
		}},
		{"part not arrow, manifest agrees", ErrCorrupt, func(dir string) (string, string) {
			os.WriteFile(part(dir), []byte("hello, not arrow"), 0o644)
			editManifest(t, dir, func(m map[string]any) {
				p := m["parts"].([]any)[1].(map[string]any)
				p["bytes"] = 16
				p["sha256"] = sum(part(dir))
			})
			return part(dir), "not an Arrow IPC file (bad magic; 16 bytes)"
		}},
		{"part of another subtask", ErrCorrupt, func(dir string) (string, string) {
			data, _ := os.ReadFile(filepath.Join(dir, "agg-0.arrow"))
			os.WriteFile(part(dir), data, 0o644)
			editManifest(t, dir, func(m map[string]any) {
				p := m["parts"].([]any)[1].(map[string]any)
				p["bytes"] = len(data)
				p["sha256"] = sum(part(dir))
			})
			return part(dir), "file is agg subtask 0, _metadata.json says agg subtask 1"
		}},
		{"manifest truncated", ErrCorrupt, func(dir string) (string, string) {
			n := size(manifest(dir))
			os.Truncate(manifest(dir), n/2)
			return manifest(dir), fmt.Sprintf("invalid JSON (%d bytes; truncated?): unexpected end of JSON input", n/2)
		}},
		{"manifest garbage", ErrCorrupt, func(dir string) (string, string) {
			os.WriteFile(manifest(dir), []byte("\x00\x01"), 0o644)
			return manifest(dir), "invalid JSON (2 bytes; truncated?): invalid character '\\x00' looking for beginning of value"
		}},
		{"manifest unknown version", ErrVersion, func(dir string) (string, string) {
			editManifest(t, dir, func(m map[string]any) { m["format_version"] = 3 })
			return manifest(dir), "unsupported format version 3 (this build reads versions 1 and 2)"
		}},
		{"manifest of another checkpoint", ErrCorrupt, func(dir string) (string, string) {
			editManifest(t, dir, func(m map[string]any) { m["checkpoint_id"] = 9 })
			return manifest(dir), "checkpoint_id 9, but the directory is for checkpoint 1"
		}},
		{"manifest path escape", ErrCorrupt, func(dir string) (string, string) {
			editManifest(t, dir, func(m map[string]any) { m["parts"].([]any)[0].(map[string]any)["file"] = "../../etc/passwd" })
			return manifest(dir), `parts[0]: file "../../etc/passwd", want "agg-0.arrow"`
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var file, want string
			_, err := corrupt(t, func(dir string) { file, want = c.edit(dir) })
			want = "checkpoint: " + file + ": " + want
			if err == nil || err.Error() != want {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("errors.Is(%v) false", c.kind)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != file {
				t.Fatalf("not a *FileError for %s", file)
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	s := newStore(t, Options{})
	_, err := s.Open(4)
	if want := "checkpoint: " + s.Path(4) + ": checkpoint 4 does not exist"; err == nil || err.Error() != want || !errors.Is(err, ErrMissing) {
		t.Fatalf("Open(4): %v", err)
	}
	if _, ok, err := s.Latest(); ok || err != nil {
		t.Fatalf("Latest on empty store: %v %v", ok, err)
	}
	writeParts(t, s, 1, 1, 1, 3)
	cp, _ := s.Open(1)
	_, err = cp.ReadPart("agg", 5)
	if want := "checkpoint: " + filepath.Join(s.Path(1), "agg-5.arrow") + ": checkpoint 1 has no part for agg subtask 5"; err == nil || err.Error() != want {
		t.Fatalf("ReadPart: %v", err)
	}
}

// TestConcurrentParts writes the parts of one checkpoint from several
// goroutines (run with -race).
func TestConcurrentParts(t *testing.T) {
	s := newStore(t, Options{})
	w, err := s.Begin(3)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for st := 0; st < n; st++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := "agg"
			if st%2 == 1 {
				op = "join"
			}
			p, err := w.Part(op, st, aggSlots)
			if err != nil {
				errs[st] = err
				return
			}
			for b := 0; b < 5; b++ {
				rec := aggRecord(t, p.Schema(), st*10+b, 200)
				err := p.Write(rec)
				rec.Release()
				if err != nil {
					errs[st] = err
					return
				}
			}
			errs[st] = p.Close()
		}()
	}
	// Retain and List concurrently with the writes must not touch chk-3.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			if err := s.Retain(1); err != nil {
				t.Error(err)
			}
			s.List()
		}
	}()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(Meta{}); err != nil {
		t.Fatal(err)
	}
	cp, err := s.Open(3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Parts()) != n || len(cp.PartsOf("join")) != n/2 {
		t.Fatalf("parts %v", cp.Parts())
	}
	for _, p := range cp.Parts() {
		if p.Rows != 1000 {
			t.Errorf("%s: %d rows", p.File, p.Rows)
		}
	}
	if err := cp.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestKeyGroupRange(t *testing.T) {
	for _, m := range []int{1, 7, 128, 32768} {
		for _, p := range []int{1, 2, 3, 5, 7, 128} {
			if p > m {
				continue
			}
			next := int32(0)
			for st := 0; st < p; st++ {
				first, last := KeyGroupRange(m, p, st)
				if first != next || last < first {
					t.Fatalf("m=%d p=%d subtask %d: [%d, %d], want to start at %d", m, p, st, first, last, next)
				}
				for _, kg := range []int32{first, last} {
					if o := KeyGroupOwner(m, p, kg); o != st {
						t.Fatalf("m=%d p=%d: owner of %d = %d, want %d", m, p, kg, o, st)
					}
				}
				next = last + 1
			}
			if next != int32(m) {
				t.Fatalf("m=%d p=%d: ranges end at %d", m, p, next)
			}
		}
	}
	if KeyGroupOf(1<<63+5, 128) != 5 {
		t.Fatal("KeyGroupOf")
	}
}

// TestJoin: parts written by another process (a Worker) through Join are
// listed in the manifest the beginning process (the Coordinator) commits.
func TestJoin(t *testing.T) {
	dir := t.TempDir()
	coord, err := NewStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := NewStore(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Join(7); err == nil {
		t.Fatal("Join of a checkpoint nobody began succeeded")
	}
	w, err := coord.Begin(7)
	if err != nil {
		t.Fatal(err)
	}
	j, err := worker.Join(7)
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []int{1, 0} {
		pw, err := j.Part("agg", sub, aggSlots)
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := j.Parts()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Subtask != 0 {
		t.Fatalf("parts %+v", parts)
	}
	if err := j.Commit(Meta{}); err == nil {
		t.Fatal("a joined writer committed")
	}
	if err := w.Commit(Meta{Job: "j", Parts: parts}); err != nil {
		t.Fatal(err)
	}
	cp, err := coord.Open(7)
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Verify(); err != nil {
		t.Fatal(err)
	}
	if len(cp.PartsOf("agg")) != 2 {
		t.Fatalf("manifest parts %+v", cp.Parts())
	}
}
