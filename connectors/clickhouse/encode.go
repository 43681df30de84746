package clickhouse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// source is a Clink column's value family.
type source uint8

const (
	sInt source = iota
	sUint
	sFloat
	sString
	sBool
	sTimestamp // epoch milliseconds after unit conversion
	sDecimal
	sDate // days since the epoch
)

// target is a ClickHouse column type's family, wrappers (Nullable,
// LowCardinality) removed.
type target uint8

const (
	tNumber target = iota // Int*, UInt*, Float*, Decimal*
	tString               // String, FixedString, Enum*, UUID, IPv4/6
	tDateTime
	tDateTime64
	tDate
	tBool
	tOther // Array, Tuple, ...: the value's natural JSON form
)

// form is how one column's values are written; chosen once per column.
type form uint8

const (
	fNumber     form = iota // integer, float (NaN/±Inf as "nan"/"inf"/"-inf"), decimal digits
	fQuoted                 // the number's text as a JSON string
	fString                 // a JSON string
	fBool01                 // 1 / 0
	fBoolText               // "true" / "false"
	fBoolJSON               // true / false
	fEpochSec               // epoch ms (or days) as epoch seconds: DateTime
	fEpochSecMs             // "seconds.mmm": DateTime64
	fDate                   // "YYYY-MM-DD" (UTC): Date
	fTimeText               // "YYYY-MM-DD hh:mm:ss.mmm" (UTC): strings
)

// DateTime is an unsigned 32-bit count of seconds; ClickHouse 18.16 reads
// Date text up to 2105-12-31 (a later day becomes 0000-00-00). Values
// outside are refused rather than wrapped silently.
const (
	maxDateTime = math.MaxUint32
	maxDate     = 49672 // 2105-12-31
)

// encColumn writes one column.
type encColumn struct {
	name string // the Clink column, for errors
	key  []byte // `{"ch_name":` for the first column, `,"ch_name":` after
	src  source
	form form

	arr          arrow.Array
	tsMul, tsDiv int64 // timestamp unit to milliseconds
	scale        int32 // decimal scale
}

// encoder turns batches into JSONEachRow lines.
type encoder struct {
	cols []encColumn
}

// mapColumns maps each field of schema to the ClickHouse column of its
// name (exactly, then case-insensitively). It refuses a column the table
// lacks, a MATERIALIZED or ALIAS target, and two fields on one column.
func mapColumns(schema *arrow.Schema, cfg *config, chCols []column) ([]*column, error) {
	mapped := make([]*column, schema.NumFields())
	used := map[string]string{}
	for i, f := range schema.Fields() {
		ch := lookupColumn(chCols, f.Name)
		if ch == nil {
			names := make([]string, len(chCols))
			for k, c := range chCols {
				names[k] = c.name
			}
			return nil, fmt.Errorf("column %s is not a column of ClickHouse table %s (it has %s)", f.Name, cfg, strings.Join(names, ", "))
		}
		if ch.kind == "MATERIALIZED" || ch.kind == "ALIAS" {
			return nil, fmt.Errorf("column %s: ClickHouse column %s of %s is %s and cannot be inserted", f.Name, ch.name, cfg, ch.kind)
		}
		if prev, dup := used[ch.name]; dup {
			return nil, fmt.Errorf("columns %s and %s both map to ClickHouse column %s", prev, f.Name, ch.name)
		}
		used[ch.name] = f.Name
		mapped[i] = ch
	}
	return mapped, nil
}

// newEncoder maps the fields of schema onto the table's columns
// (mapColumns) and picks how each column's values are written for its
// ClickHouse type, refusing a pair of types no form fits.
func newEncoder(schema *arrow.Schema, cfg *config, chCols []column) (*encoder, error) {
	mapped, err := mapColumns(schema, cfg, chCols)
	if err != nil {
		return nil, err
	}
	e := &encoder{cols: make([]encColumn, schema.NumFields())}
	for i, f := range schema.Fields() {
		ch := mapped[i]
		col := &e.cols[i]
		col.name = f.Name
		if col.src, err = sourceOf(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		tgt := targetOf(ch.typ)
		form, ok := formOf(col.src, tgt)
		if !ok {
			return nil, fmt.Errorf("column %s (%s) cannot be written to ClickHouse column %s (%s)%s", f.Name, kernels.SQLTypeName(f.Type), ch.name, ch.typ, hint(col.src, tgt))
		}
		col.form = form
		if i > 0 {
			col.key = append(col.key, ',')
		} else {
			col.key = append(col.key, '{')
		}
		col.key = appendString(col.key, ch.name)
		col.key = append(col.key, ':')
	}
	return e, nil
}

// columnList is the INSERT's column list: the ClickHouse names in the
// order the rows give them.
func columnList(chCols []column, schema *arrow.Schema) string {
	parts := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		parts[i] = quoteIdent(lookupColumn(chCols, f.Name).name)
	}
	return strings.Join(parts, ", ")
}

func lookupColumn(cols []column, name string) *column {
	for i := range cols {
		if cols[i].name == name {
			return &cols[i]
		}
	}
	var found *column
	for i := range cols {
		if strings.EqualFold(cols[i].name, name) {
			if found != nil {
				return nil // ambiguous
			}
			found = &cols[i]
		}
	}
	return found
}

func sourceOf(t arrow.DataType) (source, error) {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return sInt, nil
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return sUint, nil
	case arrow.FLOAT32, arrow.FLOAT64:
		return sFloat, nil
	case arrow.STRING, arrow.LARGE_STRING:
		return sString, nil
	case arrow.BOOL:
		return sBool, nil
	case arrow.TIMESTAMP:
		return sTimestamp, nil
	case arrow.DECIMAL128:
		return sDecimal, nil
	case arrow.DATE32:
		return sDate, nil
	}
	return 0, fmt.Errorf("the clickhouse sink cannot write %s values", t)
}

// targetOf classifies a ClickHouse type such as
// "LowCardinality(Nullable(String))" or "DateTime('Europe/Berlin')".
func targetOf(typ string) target {
	for {
		inner, ok := unwrap(typ, "Nullable")
		if !ok {
			inner, ok = unwrap(typ, "LowCardinality")
		}
		if !ok {
			break
		}
		typ = inner
	}
	base, _, _ := strings.Cut(typ, "(")
	switch base {
	case "DateTime":
		return tDateTime
	case "DateTime64":
		return tDateTime64
	case "Date", "Date32":
		return tDate
	case "Bool", "Boolean":
		return tBool
	case "String", "FixedString", "Enum8", "Enum16", "UUID", "IPv4", "IPv6":
		return tString
	}
	if strings.HasPrefix(base, "Int") || strings.HasPrefix(base, "UInt") ||
		strings.HasPrefix(base, "Float") || strings.HasPrefix(base, "Decimal") {
		return tNumber
	}
	return tOther
}

func unwrap(typ, wrapper string) (string, bool) {
	if strings.HasPrefix(typ, wrapper+"(") && strings.HasSuffix(typ, ")") {
		return typ[len(wrapper)+1 : len(typ)-1], true
	}
	return "", false
}

// formOf picks how values of family s are written into a column of family
// t, as ClickHouse 18.16's JSONEachRow reads them: DateTime takes epoch
// seconds (time-zone free, unlike text, which the server reads in its own
// zone), Date a quoted 'YYYY-MM-DD', String only JSON strings, numbers
// JSON numbers (a quoted DECIMAL is refused). Integers into a date or time
// column are epoch milliseconds, as Clink's BIGINT times (window_start,
// BIGINT event time columns) are.
func formOf(s source, t target) (form, bool) {
	switch s {
	case sString:
		return fString, true
	case sInt, sUint:
		switch t {
		case tDateTime:
			return fEpochSec, true
		case tDateTime64:
			return fEpochSecMs, true
		case tDate:
			return fDate, true
		case tString:
			return fQuoted, true
		}
		return fNumber, true
	case sFloat:
		switch t {
		case tDateTime, tDateTime64, tDate:
			return 0, false
		case tString:
			return fQuoted, true
		}
		return fNumber, true
	case sDecimal:
		switch t {
		case tDateTime, tDateTime64, tDate, tBool:
			return 0, false
		case tString:
			return fQuoted, true
		}
		return fNumber, true
	case sBool:
		switch t {
		case tNumber:
			return fBool01, true
		case tString:
			return fBoolText, true
		case tBool, tOther:
			return fBoolJSON, true
		}
		return 0, false
	case sTimestamp, sDate:
		switch t {
		case tDateTime:
			return fEpochSec, true
		case tDateTime64:
			return fEpochSecMs, true
		case tDate:
			return fDate, true
		case tString, tOther:
			return fTimeText, true
		case tNumber:
			return fNumber, true // epoch milliseconds (days for a date)
		}
		return 0, false
	}
	return 0, false
}

func hint(s source, t target) string {
	if s == sFloat && (t == tDateTime || t == tDateTime64 || t == tDate) {
		return "; CAST it to TIMESTAMP(3) or BIGINT epoch milliseconds"
	}
	return ""
}

// bind points the column writers at b's arrays.
func (e *encoder) bind(rec arrow.RecordBatch) {
	for c := range e.cols {
		col := &e.cols[c]
		col.arr = rec.Column(c)
		switch t := col.arr.DataType().(type) {
		case *arrow.TimestampType:
			col.tsMul, col.tsDiv = 1, 1
			switch t.Unit {
			case arrow.Second:
				col.tsMul = 1000
			case arrow.Microsecond:
				col.tsDiv = 1000
			case arrow.Nanosecond:
				col.tsDiv = 1000000
			}
		case *arrow.Decimal128Type:
			col.scale = t.Scale
		}
	}
}

// appendBatch appends b's live rows as JSONEachRow lines. A value the
// target column cannot hold (a time outside DateTime's range) is an error
// naming the column and the value; dst then holds the rows before it.
func (e *encoder) appendBatch(dst []byte, b *vector.Batch) ([]byte, error) {
	e.bind(b.Rec)
	defer e.unbind()
	if b.Sel != nil {
		for _, i := range b.Sel {
			var err error
			if dst, err = e.row(dst, int(i)); err != nil {
				return dst, err
			}
		}
		return dst, nil
	}
	for i, n := 0, b.NumRows(); i < n; i++ {
		var err error
		if dst, err = e.row(dst, i); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// unbind drops the arrays so the encoder holds no batch memory.
func (e *encoder) unbind() {
	for c := range e.cols {
		e.cols[c].arr = nil
	}
}

func (e *encoder) row(dst []byte, i int) ([]byte, error) {
	start := len(dst)
	for c := range e.cols {
		col := &e.cols[c]
		dst = append(dst, col.key...)
		if col.arr.IsNull(i) {
			dst = append(dst, "null"...)
			continue
		}
		var err error
		if dst, err = col.value(dst, i); err != nil {
			return dst[:start], err
		}
	}
	return append(dst, '}', '\n'), nil
}

// value appends the value of row i.
func (col *encColumn) value(dst []byte, i int) ([]byte, error) {
	switch col.src {
	case sString:
		switch a := col.arr.(type) {
		case *array.String:
			return appendString(dst, a.Value(i)), nil
		case *array.LargeString:
			return appendString(dst, a.Value(i)), nil
		}
	case sBool:
		v := col.arr.(*array.Boolean).Value(i)
		switch col.form {
		case fBool01:
			return append(dst, "01"[b2i(v)]), nil
		case fBoolText:
			return append(dst, [...]string{`"false"`, `"true"`}[b2i(v)]...), nil
		}
		return strconv.AppendBool(dst, v), nil
	case sFloat:
		var f float64
		bits := 64
		switch a := col.arr.(type) {
		case *array.Float64:
			f = a.Value(i)
		case *array.Float32:
			f, bits = float64(a.Value(i)), 32
		}
		if col.form == fQuoted || math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, '"')
			dst = appendFloat(dst, f, bits)
			return append(dst, '"'), nil
		}
		return appendFloat(dst, f, bits), nil
	case sDecimal:
		s := col.arr.(*array.Decimal128).Value(i).ToString(col.scale)
		if col.form == fQuoted {
			return appendString(dst, s), nil
		}
		return append(dst, s...), nil
	case sUint:
		var u uint64
		switch a := col.arr.(type) {
		case *array.Uint8:
			u = uint64(a.Value(i))
		case *array.Uint16:
			u = uint64(a.Value(i))
		case *array.Uint32:
			u = uint64(a.Value(i))
		case *array.Uint64:
			u = a.Value(i)
		}
		if col.form == fNumber || col.form == fQuoted {
			return appendNumber(dst, strconv.AppendUint, u, col.form == fQuoted), nil
		}
		if u > math.MaxInt64 {
			return dst, fmt.Errorf("column %s: %d is too large for epoch milliseconds", col.name, u)
		}
		return col.time(dst, int64(u))
	case sInt:
		var v int64
		switch a := col.arr.(type) {
		case *array.Int8:
			v = int64(a.Value(i))
		case *array.Int16:
			v = int64(a.Value(i))
		case *array.Int32:
			v = int64(a.Value(i))
		case *array.Int64:
			v = a.Value(i)
		}
		if col.form == fNumber || col.form == fQuoted {
			return appendNumber(dst, strconv.AppendInt, v, col.form == fQuoted), nil
		}
		return col.time(dst, v)
	case sTimestamp:
		v := int64(col.arr.(*array.Timestamp).Value(i))
		if col.tsDiv != 1 {
			v = floorDiv(v, col.tsDiv)
		} else {
			v *= col.tsMul
		}
		if col.form == fNumber {
			return strconv.AppendInt(dst, v, 10), nil
		}
		return col.time(dst, v)
	case sDate:
		days := int64(col.arr.(*array.Date32).Value(i))
		if col.form == fNumber {
			return strconv.AppendInt(dst, days, 10), nil
		}
		return col.time(dst, days*86_400_000)
	}
	return dst, fmt.Errorf("column %s: unexpected %s array", col.name, col.arr.DataType())
}

// appendNumber writes an integer, as a JSON string when quoted.
func appendNumber[T int64 | uint64](dst []byte, appendNum func([]byte, T, int) []byte, v T, quoted bool) []byte {
	if quoted {
		dst = append(dst, '"')
		dst = appendNum(dst, v, 10)
		return append(dst, '"')
	}
	return appendNum(dst, v, 10)
}

// time appends epoch milliseconds ms in the column's time form.
func (col *encColumn) time(dst []byte, ms int64) ([]byte, error) {
	switch col.form {
	case fEpochSec:
		s := floorDiv(ms, 1000)
		if s < 0 || s > maxDateTime {
			return dst, col.rangeErr("DateTime", ms)
		}
		return strconv.AppendInt(dst, s, 10), nil
	case fEpochSecMs:
		dst = append(dst, '"')
		s, frac := floorDiv(ms, 1000), ms-floorDiv(ms, 1000)*1000
		dst = strconv.AppendInt(dst, s, 10)
		dst = append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
		return append(dst, '"'), nil
	case fDate:
		d := floorDiv(ms, 86_400_000)
		if d < 0 || d > maxDate {
			return dst, col.rangeErr("Date", ms)
		}
		dst = append(dst, '"')
		dst = time.UnixMilli(ms).UTC().AppendFormat(dst, time.DateOnly)
		return append(dst, '"'), nil
	case fTimeText:
		dst = append(dst, '"')
		dst = time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
		return append(dst, '"'), nil
	}
	return dst, fmt.Errorf("column %s: no time form", col.name)
}

func (col *encColumn) rangeErr(typ string, ms int64) error { return rangeErr(col.name, typ, ms) }

// rangeErr is the error for a time column name's value ms that a ClickHouse
// DateTime or Date cannot hold.
func rangeErr(name, typ string, ms int64) error {
	lo, hi := "1970-01-01 00:00:00", "2106-02-07 06:28:15"
	if typ == "Date" {
		lo, hi = "1970-01-01", "2105-12-31"
	}
	return fmt.Errorf("column %s: %s (epoch ms %d) is outside ClickHouse %s's range, %s to %s UTC (ClickHouse would wrap it)",
		name, time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000"), ms, typ, lo, hi)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendFloat writes f as the shortest decimal that reads back as the same
// value; NaN and ±Inf as ClickHouse spells them (the caller quotes them).
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Bytes are passed through as they
// are (a ClickHouse String holds bytes), only '"', '\\' and control
// characters are escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
