package postgres

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clink-dev/clink/kernels"
)

// PostgreSQL type OIDs the sink writes (pg_type.dat).
const (
	oidBool        = 16
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
)

// pgEpochMicros is 2000-01-01 00:00:00 UTC, PostgreSQL's epoch, in
// microseconds since 1970; pgEpochDays the same in days.
const (
	pgEpochMicros = 946684800 * 1_000_000
	pgEpochDays   = 10957
)

// accepts lists the PostgreSQL types (by OID of the base type) each Clink
// type is written into. Only conversions that keep every value are
// accepted: an integer into a wider integer or numeric, REAL into real or
// double precision, and so on.
func accepts(t arrow.DataType) []uint32 {
	switch t.ID() {
	case arrow.INT64:
		return []uint32{oidInt8, oidNumeric}
	case arrow.INT32:
		return []uint32{oidInt4, oidInt8, oidNumeric}
	case arrow.INT16, arrow.INT8:
		return []uint32{oidInt2, oidInt4, oidInt8, oidNumeric}
	case arrow.FLOAT64:
		return []uint32{oidFloat8}
	case arrow.FLOAT32:
		return []uint32{oidFloat4, oidFloat8}
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return []uint32{oidText, oidVarchar, oidBpchar, oidJSON, oidJSONB, oidUUID}
	case arrow.BOOL:
		return []uint32{oidBool}
	case arrow.DECIMAL128:
		return []uint32{oidNumeric}
	case arrow.TIMESTAMP:
		return []uint32{oidTimestamp, oidTimestamptz}
	case arrow.DATE32:
		return []uint32{oidDate}
	}
	return nil
}

// typeNames names the accepted types in errors.
var typeNames = map[uint32]string{
	oidBool: "boolean", oidInt8: "bigint", oidInt2: "smallint", oidInt4: "integer", oidText: "text",
	oidJSON: "json", oidFloat4: "real", oidFloat8: "double precision", oidBpchar: "character(n)",
	oidVarchar: "character varying", oidDate: "date", oidTimestamp: "timestamp", oidTimestamptz: "timestamp with time zone",
	oidNumeric: "numeric", oidUUID: "uuid", oidJSONB: "jsonb",
}

// column is one Clink column and the PostgreSQL column it is written to.
type column struct {
	clink  string         // the Clink column's name
	typ    arrow.DataType // its type
	name   string         // the PostgreSQL column's name
	pgType string         // format_type, for messages
	oid    uint32         // base type of the PostgreSQL column
	array  uint32         // the array type of oid (upsert parameters)
	typmod int32
	// key marks a primary key column (upsert).
	key bool
}

// checkType reports why c's Clink type cannot be written into its
// PostgreSQL column, or "".
func (c *column) checkType() string {
	ok := false
	for _, o := range accepts(c.typ) {
		if o == c.oid {
			ok = true
		}
	}
	if !ok {
		var names []string
		for _, o := range accepts(c.typ) {
			names = append(names, typeNames[o])
		}
		if len(names) == 0 {
			return fmt.Sprintf("Clink type %s cannot be written to PostgreSQL", kernels.SQLTypeName(c.typ))
		}
		return fmt.Sprintf("it is %s in PostgreSQL, but %s in Clink, which needs %s", c.pgType, kernels.SQLTypeName(c.typ), joinOr(names))
	}
	if c.oid != oidNumeric || c.typmod < 0 {
		return ""
	}
	// numeric(p, s): typmod = (p << 16 | s) + 4. The integer digits and
	// the scale must hold every value of the Clink type.
	p, s := int((c.typmod-4)>>16), int((c.typmod-4)&0xffff)
	var ip, is int
	switch t := c.typ.(type) {
	case *arrow.Decimal128Type:
		ip, is = int(t.Precision-t.Scale), int(t.Scale)
	case *arrow.Int64Type:
		ip = 19
	case *arrow.Int32Type:
		ip = 10
	case *arrow.Int16Type:
		ip = 5
	case *arrow.Int8Type:
		ip = 3
	}
	if p-s < ip || s < is {
		return fmt.Sprintf("it is %s in PostgreSQL, which cannot hold every %s value (needs at least %d integer digits and scale %d)", c.pgType, kernels.SQLTypeName(c.typ), ip, is)
	}
	return ""
}

func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			out += " or "
		default:
			out += ", "
		}
		out += n
	}
	return out
}

// numericMap encodes numeric values (pgx's binary numeric encoder).
var numericMap = pgtype.NewMap()

// appendField appends row i of a, c's column, in the binary format of
// COPY and of array elements: an int32 length (-1 for NULL) and the
// value's bytes.
func (c *column) appendField(dst []byte, a arrow.Array, i int) ([]byte, error) {
	if a.IsNull(i) {
		return binary.BigEndian.AppendUint32(dst, math.MaxUint32), nil
	}
	switch c.oid {
	case oidInt8, oidInt2, oidInt4:
		v := intValue(a, i)
		switch c.oid {
		case oidInt8:
			return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(dst, 8), uint64(v)), nil
		case oidInt4:
			return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(dst, 4), uint32(int32(v))), nil
		}
		return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint32(dst, 2), uint16(int16(v))), nil
	case oidFloat8:
		var f float64
		switch a := a.(type) {
		case *array.Float64:
			f = a.Value(i)
		case *array.Float32:
			// The shortest decimal that reads back as the REAL, not its
			// binary expansion: 20.1, not 20.100000381469727.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32), 64)
		}
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(dst, 8), math.Float64bits(f)), nil
	case oidFloat4:
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(dst, 4), math.Float32bits(a.(*array.Float32).Value(i))), nil
	case oidBool:
		b := byte(0)
		if a.(*array.Boolean).Value(i) {
			b = 1
		}
		return append(binary.BigEndian.AppendUint32(dst, 1), b), nil
	case oidText, oidVarchar, oidBpchar, oidJSON:
		s := stringValue(a, i)
		return append(binary.BigEndian.AppendUint32(dst, uint32(len(s))), s...), nil
	case oidJSONB:
		// jsonb's binary format is a version byte (1) and the text.
		s := stringValue(a, i)
		return append(append(binary.BigEndian.AppendUint32(dst, uint32(len(s)+1)), 1), s...), nil
	case oidUUID:
		s := stringValue(a, i)
		u, ok := parseUUID(s)
		if !ok {
			return dst, fmt.Errorf("'%s' is not a UUID", s)
		}
		return append(binary.BigEndian.AppendUint32(dst, 16), u[:]...), nil
	case oidTimestamp, oidTimestamptz:
		us, ok := micros(a, i)
		if !ok {
			return dst, fmt.Errorf("timestamp out of range")
		}
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(dst, 8), uint64(us-pgEpochMicros)), nil
	case oidDate:
		d := int64(a.(*array.Date32).Value(i)) - pgEpochDays
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(dst, 4), uint32(int32(d))), nil
	case oidNumeric:
		var n pgtype.Numeric
		switch a := a.(type) {
		case *array.Decimal128:
			n = pgtype.Numeric{Int: a.Value(i).BigInt(), Exp: -a.DataType().(*arrow.Decimal128Type).Scale, Valid: true}
		default:
			n = pgtype.Numeric{Int: big.NewInt(intValue(a, i)), Valid: true}
		}
		at := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, 0)
		out, err := numericMap.Encode(oidNumeric, pgtype.BinaryFormatCode, n, dst)
		if err != nil {
			return dst[:at], err
		}
		binary.BigEndian.PutUint32(out[at:], uint32(len(out)-at-4))
		return out, nil
	}
	return dst, fmt.Errorf("no encoding for PostgreSQL type %s", c.pgType)
}

func intValue(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i)
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int8:
		return int64(a.Value(i))
	}
	return 0
}

func stringValue(a arrow.Array, i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	}
	return ""
}

// micros is row i of a timestamp column in microseconds since 1970
// (Clink's TIMESTAMP(3) is milliseconds).
func micros(a arrow.Array, i int) (int64, bool) {
	ts := a.(*array.Timestamp)
	v := int64(ts.Value(i))
	var mul int64
	switch ts.DataType().(*arrow.TimestampType).Unit {
	case arrow.Second:
		mul = 1_000_000
	case arrow.Millisecond:
		mul = 1000
	case arrow.Microsecond:
		return v, true
	case arrow.Nanosecond:
		return v / 1000, true // floors toward zero, as PostgreSQL rounds to µs
	}
	if v > math.MaxInt64/mul || v < math.MinInt64/mul+pgEpochMicros {
		return 0, false
	}
	return v * mul, true
}

// parseUUID reads 32 hex digits, with or without the usual hyphens.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	var digits [32]byte
	n := 0
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c == '-' {
			continue
		}
		if n == 32 {
			return u, false
		}
		digits[n] = c
		n++
	}
	if n != 32 {
		return u, false
	}
	if _, err := hex.Decode(u[:], digits[:]); err != nil {
		return u, false
	}
	return u, true
}
