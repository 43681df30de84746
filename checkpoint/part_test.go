package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// rawIPC writes recs as an Arrow IPC file with schema sc, bypassing
// PartWriter's checks.
func rawIPC(t testing.TB, sc *arrow.Schema, recs ...arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(sc))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// validPart returns the bytes of a well-formed part file.
func validPart(t testing.TB, comp Compression, rows int) []byte {
	t.Helper()
	s, err := NewStore(t.TempDir(), Options{Compression: comp})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := s.Begin(1)
	p, err := w.Part("agg", 2, aggSlots)
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2 && rows > 0; b++ {
		rec := aggRecord(t, p.Schema(), b, rows)
		if err := p.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Path(1), "agg-2.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func withMeta(sc *arrow.Schema, key, value string) *arrow.Schema {
	md := sc.Metadata()
	keys, vals := append([]string(nil), md.Keys()...), append([]string(nil), md.Values()...)
	found := false
	for i, k := range keys {
		if k == key {
			vals[i], found = value, true
		}
	}
	if !found {
		keys, vals = append(keys, key), append(vals, value)
	}
	if value == "" { // drop the key
		for i, k := range keys {
			if k == key {
				keys = append(keys[:i], keys[i+1:]...)
				vals = append(vals[:i], vals[i+1:]...)
				break
			}
		}
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(sc.Fields(), &m)
}

func TestDecodePartErrors(t *testing.T) {
	good := validPart(t, CompressNone, 20)
	part, err := DecodePart("x.arrow", good)
	if err != nil {
		t.Fatal(err)
	}
	if part.Operator != "agg" || part.Subtask != 2 || part.CheckpointID != 1 || part.MaxParallelism != 128 || part.NumRows() != 40 || len(part.Slots) != 4 {
		t.Fatalf("part %+v", part)
	}
	sc := part.Schema
	rec := part.Records[0]
	defer part.Release()

	l, _ := newLayout(aggSlots)
	metaSc := l.fileSchema(partMeta{operator: "agg", subtask: 0, checkpointID: 1, maxParallelism: 128})
	for _, c := range []struct {
		name string
		data []byte
		kind error
		want string
	}{
		{"empty", nil, ErrCorrupt, "not an Arrow IPC file (bad magic; 0 bytes)"},
		{"truncated", good[:len(good)-7], ErrCorrupt, "not a valid Arrow IPC file: no Arrow IPC file trailer (truncated?)"},
		{"version 2", rawIPC(t, withMeta(sc, MetaFormatVersion, "2"), rec), ErrVersion,
			`unsupported format version "2" (this build reads version 1)`},
		{"no version", rawIPC(t, withMeta(sc, MetaFormatVersion, "")), ErrCorrupt,
			"schema metadata lacks clink.format_version"},
		{"bad operator", rawIPC(t, withMeta(sc, MetaOperator, "../etc")), ErrCorrupt,
			`clink.operator: operator name "../etc": only letters, digits, '_', '-' and (not first) '.' are allowed`},
		{"bad slots", rawIPC(t, withMeta(sc, MetaSlots, "[{")), ErrCorrupt,
			"clink.slots is not valid JSON: unexpected end of JSON input"},
		{"slot names missing column", rawIPC(t, withMeta(sc, MetaSlots, `[{"name":"a","values":["zz"]}]`)), ErrCorrupt,
			`slot "a" names value column "zz", which the schema lacks`},
		{"undeclared column", rawIPC(t, withMeta(sc, MetaSlots, `[{"name":"a","values":["cnt"]}]`)), ErrCorrupt,
			`schema has 6 value columns, clink.slots declares 1`},
		{"fixed columns", rawIPC(t, arrow.NewSchema(metaSc.Fields()[1:], func() *arrow.Metadata { m := metaSc.Metadata(); return &m }())), ErrCorrupt,
			`column 0 is "key_group" int32 not null, want "slot" utf8 not null`},
		{"bad rows", rawIPC(t, withMeta(sc, MetaMaxParallelism, "4"), rec), ErrCorrupt,
			`record batch 0: row 4 (slot "window_agg"): key_group 4 out of [0, 4)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			part, err := DecodePart("/d/chk-1/agg-0.arrow", c.data)
			if err == nil {
				part.Release()
				t.Fatal("no error")
			}
			if want := "checkpoint: /d/chk-1/agg-0.arrow: " + c.want; err.Error() != want {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("kind: %v", err)
			}
		})
	}
	_, err = ReadPartFile(filepath.Join(t.TempDir(), "nope.arrow"))
	if !errors.Is(err, ErrMissing) || !strings.HasSuffix(err.Error(), "nope.arrow: no such file") {
		t.Fatalf("ReadPartFile: %v", err)
	}
}

// TestDecodeEmptyPart: a part with no rows keeps its schema.
func TestDecodeEmptyPart(t *testing.T) {
	part, err := DecodePart("e.arrow", validPart(t, CompressZstd, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(part.Records) != 0 || part.Schema.NumFields() != numFixed+6 {
		t.Fatalf("empty part: %d records, %d fields", len(part.Records), part.Schema.NumFields())
	}
}

func TestLimitAllocator(t *testing.T) {
	a := &limitAllocator{limit: 100}
	b := a.Allocate(60)
	b = a.Reallocate(90, b)
	a.Free(b)
	defer func() {
		if recover() == nil {
			t.Fatal("over budget did not panic")
		}
	}()
	a.Allocate(11)
}

// FuzzOpenPart feeds the part decoder arbitrary bytes: it must return a
// part or an error, never panic, hang or allocate without bound.
func FuzzOpenPart(f *testing.F) {
	f.Add(validPart(f, CompressNone, 6))
	f.Add(validPart(f, CompressZstd, 6))
	f.Add(validPart(f, CompressZstd, 0))
	f.Add(validPart(f, CompressLZ4, 6))
	big := validPart(f, CompressZstd, 40)
	f.Add(big[:len(big)/2])
	f.Add([]byte("ARROW1\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		part, err := DecodePart("fuzz.arrow", data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != "fuzz.arrow" {
				t.Fatalf("error not naming the file: %v", err)
			}
			return
		}
		// What decodes is readable (the first rows: a few bytes of zstd
		// can legitimately decode to millions of rows).
		for _, r := range part.Records {
			for i := 0; i < int(r.NumCols()); i++ {
				col := r.Column(i)
				for j := 0; j < min(col.Len(), 100); j++ {
					_ = col.ValueStr(j)
				}
			}
		}
		part.Release()
	})
}

// FuzzManifest feeds the manifest decoder arbitrary bytes.
func FuzzManifest(f *testing.F) {
	s, err := NewStore(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	writeParts(f, s, 1, 2, 1, 3)
	good, _ := os.ReadFile(filepath.Join(s.Path(1), ManifestName))
	f.Add(good)
	f.Add([]byte(`{"format_version":1}`))
	f.Add([]byte(`{"format_version":"1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := decodeManifest("m.json", 1, data); err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != "m.json" {
				t.Fatalf("error not naming the file: %v", err)
			}
		}
	})
}

// TestHugeVectorLength: a footer whose schema claims 2^31-1 fields is
// rejected before arrow-go would allocate them (a fatal out-of-memory).
func TestHugeVectorLength(t *testing.T) {
	data := validPart(t, CompressNone, 4)
	n := len(data)
	flen := int(binary.LittleEndian.Uint32(data[n-10:]))
	footerAt := n - 10 - flen
	budget := int64(1 << 30)
	v := &fbVerifier{buf: data[footerAt : n-10], budget: &budget}
	root, err := v.u32(0)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := v.fieldOffset(root, 1) // Footer.schema
	schema, _ := v.indirect(root + o)
	o, _ = v.fieldOffset(schema, 1) // Schema.fields
	vec, _ := v.indirect(schema + o)
	binary.LittleEndian.PutUint32(data[footerAt+int(vec):], 0x7FFFFFFF)
	_, err = DecodePart("p.arrow", data)
	if want := "checkpoint: p.arrow: not a valid Arrow IPC file: footer: Schema: flatbuffer vector of 2147483647 elements overruns the buffer"; err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}
