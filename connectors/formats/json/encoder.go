package json

import (
	stdjson "encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/clink-dev/clink/connectors/formats/internal/arrowcol"
	"github.com/clink-dev/clink/vector"
)

// ekind is a column's type as the encoder writes it.
type ekind uint8

const (
	eOther ekind = iota // anything else: encoding/json on GetOneForMarshal
	eInt8
	eInt16
	eInt32
	eInt64
	eUint8
	eUint16
	eUint32
	eUint64
	eFloat32
	eFloat64
	eString
	eLargeString
	eBool
	eTimestamp
	eDate32
	eDecimal
)

// encColumn is one column's writer, set up once per batch so that the row
// loop only switches on a small integer.
type encColumn struct {
	key   []byte // `{"name":` for the first column, `,"name":` after
	kind  ekind
	nulls []byte // validity bitmap; nil when the column has no nulls
	off   int    // the array's offset into nulls

	i8   []int8
	i16  []int16
	i32  []int32
	i64  []int64
	u8   []uint8
	u16  []uint16
	u32  []uint32
	u64  []uint64
	f32  []float32
	f64  []float64
	ts   []arrow.Timestamp
	d32  []arrow.Date32
	str  *array.String
	lstr *array.LargeString
	bl   *array.Boolean
	dec  []decimal128.Num
	arr  arrow.Array

	scale int32 // of a decimal

	tsMul, tsDiv int64 // timestamp unit to milliseconds
}

// encoder holds the column writers for one batch.
type encoder struct {
	cols []encColumn
	keys []byte
}

// AppendBatch appends the live rows of b to dst as JSON objects, one per
// line ('\n'-terminated), keys being the column names in schema order.
//
// Values are written as DESIGN §3 prescribes for output rows: integers as
// integers; floats as the shortest decimal that round-trips, formatted
// exactly as encoding/json formats float64 (float32 at 32 bits); NaN and
// ±Inf as null; strings escaped as encoding/json does but with <, > and &
// kept literal; bool as true/false; timestamps as "YYYY-MM-DD HH:MM:SS.fff"
// in UTC (Flink's format; other units are truncated to ms); date32 as
// "YYYY-MM-DD". Types beyond these fall back to encoding/json, which
// allocates.
func AppendBatch(dst []byte, b *vector.Batch) []byte {
	var e encoder
	e.init(b.Rec)
	if b.Sel != nil {
		for _, i := range b.Sel {
			dst = e.row(dst, int(i))
		}
		return dst
	}
	for i, n := 0, b.NumRows(); i < n; i++ {
		dst = e.row(dst, i)
	}
	return dst
}

// AppendRow appends physical row i of b as one JSON line, as AppendBatch
// does. Each call sets the column writers up again: write whole batches
// with AppendBatch.
func AppendRow(dst []byte, b *vector.Batch, i int) []byte {
	var e encoder
	e.init(b.Rec)
	return e.row(dst, i)
}

// init sets up the writers: two allocations per batch.
func (e *encoder) init(rec arrow.RecordBatch) {
	schema := rec.Schema()
	n := int(rec.NumCols())
	size := 0
	for c := 0; c < n; c++ {
		size += len(schema.Field(c).Name) + 4
	}
	e.keys = make([]byte, 0, 2*size) // escapes may lengthen names
	e.cols = make([]encColumn, n)
	for c := 0; c < n; c++ {
		start := len(e.keys)
		if c == 0 {
			e.keys = append(e.keys, '{')
		} else {
			e.keys = append(e.keys, ',')
		}
		e.keys = appendString(e.keys, schema.Field(c).Name)
		e.keys = append(e.keys, ':')
		e.cols[c] = newEncColumn(rec.Column(c))
		e.cols[c].key = e.keys[start:len(e.keys):len(e.keys)]
	}
}

func newEncColumn(arr arrow.Array) encColumn {
	col := encColumn{arr: arr}
	if arr.NullN() > 0 {
		col.nulls = arr.NullBitmapBytes()
		col.off = arr.Data().Offset()
	}
	switch a := arr.(type) {
	case *array.Int8:
		col.kind, col.i8 = eInt8, a.Values()
	case *array.Int16:
		col.kind, col.i16 = eInt16, a.Values()
	case *array.Int32:
		col.kind, col.i32 = eInt32, a.Values()
	case *array.Int64:
		col.kind, col.i64 = eInt64, a.Values()
	case *array.Uint8:
		col.kind, col.u8 = eUint8, a.Values()
	case *array.Uint16:
		col.kind, col.u16 = eUint16, a.Values()
	case *array.Uint32:
		col.kind, col.u32 = eUint32, a.Values()
	case *array.Uint64:
		col.kind, col.u64 = eUint64, a.Values()
	case *array.Float32:
		col.kind, col.f32 = eFloat32, a.Values()
	case *array.Float64:
		col.kind, col.f64 = eFloat64, a.Values()
	case *array.String:
		col.kind, col.str = eString, a
	case *array.LargeString:
		col.kind, col.lstr = eLargeString, a
	case *array.Boolean:
		col.kind, col.bl = eBool, a
	case *array.Date32:
		col.kind, col.d32 = eDate32, a.Date32Values()
	case *array.Decimal128:
		col.kind, col.dec = eDecimal, a.Values()
		col.scale = a.DataType().(*arrow.Decimal128Type).Scale
	case *array.Timestamp:
		col.kind, col.ts = eTimestamp, a.TimestampValues()
		col.tsMul, col.tsDiv = 1, 1
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			col.tsMul = 1000
		case arrow.Microsecond:
			col.tsDiv = 1000
		case arrow.Nanosecond:
			col.tsDiv = 1000000
		}
	}
	return col
}

// row appends physical row i.
func (e *encoder) row(dst []byte, i int) []byte {
	if len(e.cols) == 0 {
		return append(dst, '{', '}', '\n')
	}
	for c := range e.cols {
		col := &e.cols[c]
		dst = append(dst, col.key...)
		if col.nulls != nil {
			if j := col.off + i; col.nulls[j>>3]&(1<<(j&7)) == 0 {
				dst = append(dst, "null"...)
				continue
			}
		}
		switch col.kind {
		case eInt64:
			dst = strconv.AppendInt(dst, col.i64[i], 10)
		case eFloat64:
			dst = appendFloat(dst, col.f64[i], 64)
		case eString:
			dst = appendString(dst, col.str.Value(i))
		case eTimestamp:
			v := int64(col.ts[i])
			if col.tsDiv != 1 {
				v = floorDiv(v, col.tsDiv)
			} else {
				v *= col.tsMul
			}
			dst = append(dst, '"')
			dst = appendTimestamp(dst, v)
			dst = append(dst, '"')
		case eInt32:
			dst = strconv.AppendInt(dst, int64(col.i32[i]), 10)
		case eInt16:
			dst = strconv.AppendInt(dst, int64(col.i16[i]), 10)
		case eInt8:
			dst = strconv.AppendInt(dst, int64(col.i8[i]), 10)
		case eUint64:
			dst = strconv.AppendUint(dst, col.u64[i], 10)
		case eUint32:
			dst = strconv.AppendUint(dst, uint64(col.u32[i]), 10)
		case eUint16:
			dst = strconv.AppendUint(dst, uint64(col.u16[i]), 10)
		case eUint8:
			dst = strconv.AppendUint(dst, uint64(col.u8[i]), 10)
		case eFloat32:
			dst = appendFloat(dst, float64(col.f32[i]), 32)
		case eLargeString:
			dst = appendString(dst, col.lstr.Value(i))
		case eBool:
			if col.bl.Value(i) {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case eDate32:
			dst = append(dst, '"')
			dst = appendDate(dst, int64(col.d32[i]))
			dst = append(dst, '"')
		case eDecimal:
			// An exact number with all its scale digits (-7.00), as
			// Flink's JSON format writes it.
			dst = arrowcol.AppendDecimal(dst, col.dec[i], col.scale)
		default:
			dst = appendOther(dst, col.arr, i)
		}
	}
	return append(dst, '}', '\n')
}

// appendOther writes a value of a type the encoder has no writer for.
func appendOther(dst []byte, arr arrow.Array, i int) []byte {
	b, err := stdjson.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

// appendFloat formats f as encoding/json formats a float of that many bits,
// writing null for NaN and ±Inf, which JSON cannot hold.
func appendFloat(dst []byte, f float64, bits int) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	fmt := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			fmt = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, fmt, -1, bits)
	if fmt == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, escaping as encoding/json does
// except that <, > and & stay literal.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if strSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but not valid JavaScript;
		// encoding/json escapes them, and so do we.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
