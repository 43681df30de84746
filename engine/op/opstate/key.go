package opstate

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RenderKeys renders row k of the key columns as the readable key of the
// state format: a JSON array of the values in GROUP BY order (strings
// quoted, numbers shortest round-trip, TIMESTAMP(3) as "YYYY-MM-DD
// HH:MM:SS.mmm", NULL as null; NaN and ±Infinity as strings).
func RenderKeys(cols []arrow.Array, n int) []string {
	out := make([]string, n)
	buf := make([]byte, 0, 64)
	for k := range out {
		buf = appendKey(buf[:0], cols, k)
		out[k] = string(buf)
	}
	return out
}

// appendKey appends the readable key of row k.
func appendKey(b []byte, cols []arrow.Array, k int) []byte {
	b = append(b, '[')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKeyValue(b, c, k)
	}
	return append(b, ']')
}

// RenderKeyArray is RenderKeys as a string array, built without a Go
// string per row.
func RenderKeyArray(mem memory.Allocator, cols []arrow.Array, n int) *array.String {
	if len(cols) == 1 {
		if a, ok := cols[0].(*array.String); ok && a.Len() >= n && a.NullN() == 0 {
			if r := renderPlainStrings(mem, a, n); r != nil {
				return r
			}
		}
	}
	offs := make([]int32, n+1)
	buf := make([]byte, 0, n*(2+8*len(cols)))
	for k := range n {
		buf = appendKey(buf, cols, k)
		offs[k+1] = int32(len(buf))
	}
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	copy(arrow.Int32Traits.CastFromBytes(ob.Bytes()), offs)
	db := memory.NewResizableBuffer(mem)
	db.Resize(len(buf))
	copy(db.Bytes(), buf)
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, ob, db}, nil, 0, 0)
	a := array.NewStringData(d)
	d.Release()
	ob.Release()
	db.Release()
	return a
}

// renderPlainStrings is RenderKeyArray of one string column without NULLs
// whose values need no escaping (nil otherwise), written straight into the
// array's buffers: ["value"] per row.
func renderPlainStrings(mem memory.Allocator, a *array.String, n int) *array.String {
	if n == 0 {
		return nil
	}
	vo := a.ValueOffsets()
	var vd []byte // offsets index the whole buffer
	if b := a.Data().Buffers()[2]; b != nil {
		vd = b.Bytes()
	}
	if !plainJSON(vd[vo[0]:vo[n]]) {
		return nil
	}
	ob := memory.NewResizableBuffer(mem)
	ob.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	offs := arrow.Int32Traits.CastFromBytes(ob.Bytes())
	db := memory.NewResizableBuffer(mem)
	db.Resize(int(vo[n]-vo[0]) + 4*n)
	data := db.Bytes()
	at := 0
	offs[0] = 0
	for k := range n {
		data[at], data[at+1] = '[', '"'
		at += 2
		at += copy(data[at:], vd[vo[k]:vo[k+1]])
		data[at], data[at+1] = '"', ']'
		at += 2
		offs[k+1] = int32(at)
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, ob, db}, nil, 0, 0)
	r := array.NewStringData(d)
	d.Release()
	ob.Release()
	db.Release()
	return r
}

// plainJSON reports whether b needs no escaping in a JSON string: no
// control character, no '"' or '\\', ASCII only. Eight bytes at a time:
// each test sets a byte's high bit where it holds (exactly, for bytes
// below 0x80).
func plainJSON(b []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	for ; len(b) >= 8; b = b[8:] {
		x := binary.LittleEndian.Uint64(b)
		q, s := x^(lo*'"'), x^(lo*'\\')
		if (x|(x-lo*0x20)&^x|(q-lo)&^q|(s-lo)&^s)&hi != 0 {
			return false
		}
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func appendKeyValue(b []byte, c arrow.Array, k int) []byte {
	if c.IsNull(k) {
		return append(b, "null"...)
	}
	switch a := c.(type) {
	case *array.String:
		return appendJSONString(b, a.Value(k))
	case *array.Int8:
		return strconv.AppendInt(b, int64(a.Value(k)), 10)
	case *array.Int16:
		return strconv.AppendInt(b, int64(a.Value(k)), 10)
	case *array.Int32:
		return strconv.AppendInt(b, int64(a.Value(k)), 10)
	case *array.Int64:
		return strconv.AppendInt(b, a.Value(k), 10)
	case *array.Float32:
		return appendKeyFloat(b, float64(a.Value(k)), 32)
	case *array.Float64:
		return appendKeyFloat(b, a.Value(k), 64)
	case *array.Boolean:
		return strconv.AppendBool(b, a.Value(k))
	case *array.Date32:
		t := time.Unix(int64(a.Value(k))*86400, 0).UTC()
		return append(append(append(b, '"'), t.Format("2006-01-02")...), '"')
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		t := a.Value(k).ToTime(unit).UTC()
		return append(append(append(b, '"'), t.Format("2006-01-02 15:04:05.000")...), '"')
	}
	return appendJSONString(b, fmt.Sprint(c.GetOneForMarshal(k)))
}

func appendKeyFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, bits)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&15])
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}
