package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

func TestHeaderRoundTrip(t *testing.T) {
	for _, id := range []int{0, 1, 255, 256, 1 << 24, 1<<31 - 1} {
		b := AppendHeader([]byte("x"), id)
		b = append(b, "payload"...)
		got, payload, err := ParseHeader(b[1:])
		if err != nil || got != id || string(payload) != "payload" {
			t.Fatalf("id %d: got %d %q %v", id, got, payload, err)
		}
		// franz-go's decoder agrees.
		var h sr.ConfluentHeader
		fid, _, err := h.DecodeID(b[1:])
		if err != nil || fid != id {
			t.Fatalf("franz-go decodes %d, %v", fid, err)
		}
	}
}

func TestParseHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		is   error
		want string
	}{
		{nil, ErrEmptyRecord, "empty record"},
		{[]byte{}, ErrEmptyRecord, "empty record"},
		{[]byte{0x7b, 0, 0, 0, 1}, ErrBadMagic, "magic byte 0x7b"},
		{[]byte{0, 0, 1}, ErrShortRecord, "3 bytes"},
	} {
		_, _, err := ParseHeader(c.in)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseHeader(%x) = %v, want %v containing %q", c.in, err, c.is, c.want)
		}
	}
}

func TestIndexesRoundTrip(t *testing.T) {
	var h sr.ConfluentHeader
	for _, idx := range [][]int{{0}, {1}, {0, 2}, {3, 0, 1}, {200, 70000}} {
		b := AppendIndexes(nil, idx)
		// Same bytes as franz-go's Serde writes after its header.
		fb, _ := h.AppendEncode(nil, 7, idx)
		if !slices.Equal(b, fb[HeaderLen:]) {
			t.Fatalf("%v: ours %x, franz-go %x", idx, b, fb[HeaderLen:])
		}
		got, rest, err := ParseIndexes(append(b, 0xAA))
		if err != nil || !slices.Equal(got, idx) || len(rest) != 1 || rest[0] != 0xAA {
			t.Fatalf("%v: got %v rest %x err %v", idx, got, rest, err)
		}
	}
	if b := AppendIndexes(nil, nil); len(b) != 1 || b[0] != 0 {
		t.Fatalf("nil indexes: %x", b)
	}
}

func TestParseIndexesErrors(t *testing.T) {
	for _, in := range [][]byte{
		nil,          // nothing
		{0x03},       // count -2
		{0x04, 0x02}, // count 2, one index
		{0x02, 0x01}, // index -1
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // overflow
		{0xfe, 0x04}, // count 255 > max
	} {
		if _, _, err := ParseIndexes(in); !errors.Is(err, ErrBadIndexes) {
			t.Errorf("ParseIndexes(%x) = %v, want ErrBadIndexes", in, err)
		}
	}
}

func TestParseAllocationFree(t *testing.T) {
	rec := AppendIndexes(AppendHeader(nil, 42), []int{0})
	rec = append(rec, "body"...)
	nested := AppendIndexes(AppendHeader(nil, 42), []int{1, 2})
	buf := make([]int, 0, 8)
	n := testing.AllocsPerRun(100, func() {
		id, p, err := ParseHeader(rec)
		if err != nil || id != 42 {
			t.Fatal(err)
		}
		if _, _, err := ParseIndexes(p); err != nil {
			t.Fatal(err)
		}
		_, p, _ = ParseHeader(nested)
		if _, _, err := AppendParseIndexes(buf[:0], p); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per parse", n)
	}
}

func BenchmarkParseHeader(b *testing.B) {
	rec := AppendIndexes(AppendHeader(nil, 42), []int{0})
	rec = append(rec, make([]byte, 100)...)
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		_, p, _ := ParseHeader(rec)
		_, _, _ = ParseIndexes(p)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 0, 'x'})
	f.Add([]byte{0, 0, 0, 0, 1, 4, 2, 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, p, err := ParseHeader(b)
		if err != nil {
			return
		}
		if !slices.Equal(AppendHeader(nil, id), b[:HeaderLen]) {
			t.Fatalf("header %x does not round-trip", b[:HeaderLen])
		}
		idx, rest, err := ParseIndexes(p)
		if err != nil {
			return
		}
		again, rest2, err := ParseIndexes(append(AppendIndexes(nil, idx), rest...))
		if err != nil || !slices.Equal(again, idx) || !slices.Equal(rest, rest2) {
			t.Fatalf("indexes %v do not round-trip: %v %v", idx, again, err)
		}
	})
}
