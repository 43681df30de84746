package json

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestParseEight(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	for range 100000 {
		v := r.Uint64N(100000000)
		s := []byte(strconv.FormatUint(v+100000000, 10)[1:]) // eight digits, leading zeros kept
		x := binary.LittleEndian.Uint64(s)
		if !eightDigits(x) || parseEight(x) != v {
			t.Fatalf("%s: eightDigits %v, parseEight %d", s, eightDigits(x), parseEight(x))
		}
		s[r.IntN(8)] = byte(r.IntN(256))
		allDigits := true
		for _, c := range s {
			allDigits = allDigits && '0' <= c && c <= '9'
		}
		if eightDigits(binary.LittleEndian.Uint64(s)) != allDigits {
			t.Fatalf("%q: eightDigits says %v", s, !allDigits)
		}
	}
}

// TestFastPaths checks fastInt and fastFloat against strconv on the
// inputs they accept, and that whatever they decline scanNumber handles.
func TestFastPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	for range 200000 {
		var s string
		switch r.IntN(4) {
		case 0:
			s = strconv.FormatInt(r.Int64()>>r.IntN(64), 10)
		case 1:
			s = strconv.FormatFloat(r.NormFloat64()*float64(r.IntN(1e6)), 'f', r.IntN(8), 64)
		case 2:
			s = strconv.FormatFloat(r.ExpFloat64(), 'g', -1, 64)
		default:
			s = strconv.Itoa(r.IntN(100)) + "." + strconv.Itoa(r.IntN(1000)) + string("0123456789e}, ]"[r.IntN(15)])
		}
		line := []byte(s + "}")
		if v, end, ok := fastInt(line, 0); ok {
			want, err := strconv.ParseInt(string(line[:end]), 10, 64)
			if err != nil || v != want || line[end] != '}' {
				t.Fatalf("fastInt(%s) = %d, %d; want %d (%v)", line, v, end, want, err)
			}
		}
		if f, end, ok := fastFloat(line, 0); ok {
			want, err := strconv.ParseFloat(string(line[:end]), 64)
			if err != nil || f != want {
				t.Fatalf("fastFloat(%s) = %v; want %v (%v)", line, f, want, err)
			}
			if n, nend, err := scanNumber(line, 0); err != nil || nend != end {
				t.Fatalf("fastFloat(%s) ends at %d, scanNumber at %d (%v, %v)", line, end, nend, n, err)
			}
		}
	}
}

func TestNumberParsingAllocs(t *testing.T) {
	line := []byte(`1.2345678901234567890123456789012345678901234567890e-5}`)
	allocs := testing.AllocsPerRun(100, func() {
		n, end, err := scanNumber(line, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := n.toFloat64(line[:end]); !ok {
			t.Fatal("not converted")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
