package stateio

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/checkpoint"
)

// row is one state row of a record, read through its fixed columns.
type row struct {
	rec arrow.RecordBatch
	i   int
}

func (r row) slot() string { return r.rec.Column(0).(*array.String).Value(r.i) }

func (r row) keyGroup() int32 { return r.rec.Column(1).(*array.Int32).Value(r.i) }

// key is the row's key, "" and false for a <raw> row.
func (r row) key() (string, bool) {
	k := r.rec.Column(2).(*array.String)
	if k.IsNull(r.i) {
		return "", false
	}
	return k.Value(r.i), true
}

// window is the row's [start, end), ok false without a window.
func (r row) window() (start, end int64, ok bool) {
	s, e := r.rec.Column(3).(*array.Int64), r.rec.Column(4).(*array.Int64)
	if s.IsNull(r.i) {
		return 0, 0, false
	}
	return s.Value(r.i), e.Value(r.i), true
}

// eachRow calls fn for the rows of rec, those of slot only if slot is set.
func eachRow(rec arrow.RecordBatch, slot string, fn func(row) error) error {
	slots := rec.Column(0).(*array.String)
	for i := 0; i < int(rec.NumRows()); i++ {
		if slot != "" && slots.Value(i) != slot {
			continue
		}
		if err := fn(row{rec, i}); err != nil {
			return err
		}
	}
	return nil
}

// valueCols are the schema indices of a part's value columns.
func valueCols(p *checkpoint.Part) []int {
	n := p.Schema.NumFields()
	out := make([]int, 0, n-numFixed)
	for c := numFixed; c < n; c++ {
		out = append(out, c)
	}
	return out
}

// numFixed is the number of fixed leading columns of a part.
const numFixed = 5

// appendValue writes value i of arr as JSON, the way output rows and keys
// render values (docs/semantics.md#output): integers as integers, DOUBLE
// as the shortest decimal that round-trips, DECIMAL exactly, TIMESTAMP as
// "2026-03-01 08:00:00.000" in UTC (with as many fraction digits as its
// unit has), DATE as "2026-03-01". Like keys, and unlike output rows, NaN
// and ±Infinity are the strings "NaN", "Infinity" and "-Infinity", so that
// a tool shows them. Binary values are base64 strings, lists arrays,
// structs objects, maps objects when their keys are strings and arrays of
// {"key", "value"} objects otherwise.
func appendValue(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64)
	case *array.String:
		return appendString(dst, a.Value(i))
	case *array.LargeString:
		return appendString(dst, a.Value(i))
	case *array.Binary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i)))
	case *array.LargeBinary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i)))
	case *array.FixedSizeBinary:
		return appendString(dst, base64.StdEncoding.EncodeToString(a.Value(i)))
	case *array.Decimal128:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)...)
	case *array.Date32:
		return appendString(dst, a.Value(i).ToTime().Format("2006-01-02"))
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return appendString(dst, a.Value(i).ToTime(unit).UTC().Format(timestampLayout[unit]))
	case *array.Map: // before List: a Map is a List
		return appendMap(dst, a, i)
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		elems := a.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, elems, int(j))
		}
		return append(dst, ']')
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		dst = append(dst, '{')
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, st.Field(f).Name)
			dst = append(dst, ':')
			dst = appendValue(dst, a.Field(f), i)
		}
		return append(dst, '}')
	}
	b, err := json.Marshal(arr.GetOneForMarshal(i))
	if err != nil {
		return append(dst, "null"...)
	}
	return append(dst, b...)
}

var timestampLayout = map[arrow.TimeUnit]string{
	arrow.Second:      "2006-01-02 15:04:05",
	arrow.Millisecond: "2006-01-02 15:04:05.000",
	arrow.Microsecond: "2006-01-02 15:04:05.000000",
	arrow.Nanosecond:  "2006-01-02 15:04:05.000000000",
}

func appendMap(dst []byte, m *array.Map, i int) []byte {
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	_, strKeys := keys.(*array.String)
	if strKeys {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		if strKeys {
			dst = appendValue(dst, keys, int(j))
			dst = append(dst, ':')
			dst = appendValue(dst, items, int(j))
			continue
		}
		dst = append(dst, `{"key":`...)
		dst = appendValue(dst, keys, int(j))
		dst = append(dst, `,"value":`...)
		dst = appendValue(dst, items, int(j))
		dst = append(dst, '}')
	}
	if strKeys {
		return append(dst, '}')
	}
	return append(dst, ']')
}

// appendFloat writes f as the shortest decimal that round-trips (the
// format of encoding/json), NaN and ±Infinity as strings.
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	b, _ := json.Marshal(f)
	if bits == 32 {
		b, _ = json.Marshal(float32(f))
	}
	return append(dst, b...)
}

// appendString writes s as a JSON string; unlike json.Marshal it leaves
// <, > and & alone, as output rows do.
func appendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
