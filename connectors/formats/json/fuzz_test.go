package json

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzDecode checks that no input panics, that a rejected line leaves the
// decoder as it was, that every accepted row yields valid Arrow arrays, and
// that decoder and reference agree on every line.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"sensor_id":"sensor-03","ts":1772352000000,"temp_c":21.7}`,
		`{"ts":"2026-03-01T08:00:00.123+01:00","i8":-128,"i16":3.0e2,"ok":true,"f32":1e-3}`,
		`{"Name":"a\u00e9\ud83d\ude00\n","name":null,"x":[{"y":[1,2,{}]},"z"]}`,
		`{"temp_c":"abc"}`,
		` { "SENSOR_ID" : "x" , "sensor_id" : "y" } `,
		"{\"i32\":2147483648,\"bad\":\"\xff\"}",
		`{"ts":"2024-02-29 23:59:59.999999999"}`,
		`{"amt":12.345,"AMT":"-0.0005","amt":1e2}`,
		`{"amt":"9999999.9995"}`,
		`{"amt":1234567.12345678901234567890123e-0}`,
		``,
	} {
		f.Add([]byte(s))
	}
	g := lineGen{rand.New(rand.NewPCG(1, 1))}
	for range 50 {
		f.Add([]byte(g.line()))
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	d := NewDecoder(refSchema, mem, Options{})
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgainstReference(t, d, line)
	})
}
