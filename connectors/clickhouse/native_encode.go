package clickhouse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/shopspring/decimal"

	"github.com/clink-dev/clink/kernels"
	"github.com/clink-dev/clink/vector"
)

// nativeEncoder turns batches into one value slice per ClickHouse column,
// each value of the Go type clickhouse-go takes for that column's type.
type nativeEncoder struct {
	cols []nativeColumn
}

type nativeColumn struct {
	name, chName, chType string // for errors
	nullable             bool
	src                  source
	conv                 converter
}

// newNativeEncoder picks, for each field, how its values become values of
// its ClickHouse column's type. It refuses the pairs the HTTP encoder
// refuses and the types this path was not tested with (DateTime64, Bool,
// UUID, IP, Array, ...: they need protocol = 'http').
func newNativeEncoder(schema *arrow.Schema, cfg *config, chCols []column) (*nativeEncoder, error) {
	mapped, err := mapColumns(schema, cfg, chCols)
	if err != nil {
		return nil, err
	}
	e := &nativeEncoder{cols: make([]nativeColumn, len(mapped))}
	for i, f := range schema.Fields() {
		chc := mapped[i]
		col := &e.cols[i]
		col.name, col.chName, col.chType = f.Name, chc.name, chc.typ
		if col.src, err = sourceOf(f.Type); err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		base := chc.typ
		for {
			if inner, ok := unwrap(base, "Nullable"); ok {
				base, col.nullable = inner, true
			} else if inner, ok := unwrap(base, "LowCardinality"); ok {
				base = inner
			} else {
				break
			}
		}
		if col.conv = nativeConv(f.Name, col.src, base); col.conv == nil {
			if _, ok := formOf(col.src, targetOf(chc.typ)); !ok {
				return nil, fmt.Errorf("column %s (%s) cannot be written to ClickHouse column %s (%s)%s", f.Name, kernels.SQLTypeName(f.Type), chc.name, chc.typ, hint(col.src, targetOf(chc.typ)))
			}
			return nil, fmt.Errorf("column %s (%s) into ClickHouse column %s (%s): the native protocol path does not write this pair; use the HTTP interface (protocol = 'http' and the server's http_port, 8123 by default)", f.Name, kernels.SQLTypeName(f.Type), chc.name, chc.typ)
		}
	}
	return e, nil
}

// appendBatch appends b's live rows to cols (one slice per column): all of
// them or, on an error naming the column and value, none.
func (e *nativeEncoder) appendBatch(cols [][]any, b *vector.Batch) ([][]any, error) {
	if cols == nil {
		cols = make([][]any, len(e.cols))
	}
	before := 0
	if len(cols) > 0 {
		before = len(cols[0])
	}
	row := func(i int) error {
		for c := range e.cols {
			col := &e.cols[c]
			arr := b.Rec.Column(c)
			if arr.IsNull(i) {
				if !col.nullable {
					return fmt.Errorf("column %s: NULL cannot be written to ClickHouse column %s (%s), which is not Nullable", col.name, col.chName, col.chType)
				}
				cols[c] = append(cols[c], nil)
				continue
			}
			v, err := col.conv(arr, i)
			if err != nil {
				return err
			}
			cols[c] = append(cols[c], v)
		}
		return nil
	}
	var err error
	if b.Sel != nil {
		for _, i := range b.Sel {
			if err = row(int(i)); err != nil {
				break
			}
		}
	} else {
		for i, n := 0, b.NumRows(); i < n; i++ {
			if err = row(i); err != nil {
				break
			}
		}
	}
	if err != nil {
		for c := range cols {
			clear(cols[c][before:])
			cols[c] = cols[c][:before]
		}
		return cols, err
	}
	return cols, nil
}

// converter reads row i of an array as the Go value clickhouse-go takes
// for one ClickHouse type. Errors name the Clink column.
type converter func(a arrow.Array, i int) (any, error)

// nativeConv is the converter of a source family's values into a
// ClickHouse base type (wrappers removed), or nil when there is none. The
// forms are the HTTP encoder's: integers into date and time columns are
// epoch milliseconds, times into number columns epoch milliseconds (days
// for a date), anything into a String its text.
func nativeConv(name string, src source, base string) converter {
	typ, _, _ := strings.Cut(base, "(")
	switch {
	case typ == "String" || typ == "FixedString":
		return func(a arrow.Array, i int) (any, error) { return textOf(a, src, i), nil }
	case typ == "Enum8" || typ == "Enum16":
		if src == sString {
			return func(a arrow.Array, i int) (any, error) { return textOf(a, src, i), nil }
		}
	case typ == "DateTime" || typ == "Date":
		if src == sFloat || src == sDecimal || src == sBool || src == sString {
			return nil
		}
		return func(a arrow.Array, i int) (any, error) {
			ms, err := millisOf(name, a, src, i)
			if err != nil {
				return nil, err
			}
			if typ == "Date" {
				d := floorDiv(ms, 86_400_000)
				if d < 0 || d > maxDate {
					return nil, rangeErr(name, "Date", ms)
				}
				return time.Unix(d*86_400, 0).UTC(), nil
			}
			s := floorDiv(ms, 1000)
			if s < 0 || s > maxDateTime {
				return nil, rangeErr(name, "DateTime", ms)
			}
			return time.Unix(s, 0).UTC(), nil
		}
	case strings.HasPrefix(typ, "Int") || strings.HasPrefix(typ, "UInt"):
		if src == sFloat || src == sDecimal || src == sString {
			return nil
		}
		bits, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(typ, "U"), "Int"))
		if err != nil || bits > 64 {
			return nil // Int128, Int256: not written natively
		}
		signed := typ[0] == 'I'
		return func(a arrow.Array, i int) (any, error) {
			v, neg, err := integerOf(name, a, src, i)
			if err != nil {
				return nil, err
			}
			return fitInteger(name, base, v, neg, signed, bits)
		}
	case typ == "Float32" || typ == "Float64":
		if src == sString {
			return nil
		}
		return func(a arrow.Array, i int) (any, error) {
			f, err := floatOf(name, a, src, i)
			if typ == "Float32" {
				return float32(f), err
			}
			return f, err
		}
	case strings.HasPrefix(typ, "Decimal"):
		if src == sString {
			return nil
		}
		return func(a arrow.Array, i int) (any, error) { return decimalOf(name, a, src, i) }
	}
	return nil
}

// textOf is a value's text as the HTTP encoder writes it into a String
// column.
func textOf(a arrow.Array, src source, i int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Float32:
		return string(appendFloat(nil, float64(a.Value(i)), 32))
	case *array.Float64:
		return string(appendFloat(nil, a.Value(i), 64))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	}
	if src == sTimestamp || src == sDate {
		ms, _ := millisOf("", a, src, i)
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
	}
	v, neg, _ := integerOf("", a, src, i)
	if neg {
		return strconv.FormatInt(-int64(v), 10)
	}
	return strconv.FormatUint(v, 10)
}

// millisOf is a time (or an integer taken as one) as epoch milliseconds.
func millisOf(name string, a arrow.Array, src source, i int) (int64, error) {
	switch a := a.(type) {
	case *array.Timestamp:
		v := int64(a.Value(i))
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Second:
			return v * 1000, nil
		case arrow.Microsecond:
			return floorDiv(v, 1000), nil
		case arrow.Nanosecond:
			return floorDiv(v, 1_000_000), nil
		}
		return v, nil
	case *array.Date32:
		return int64(a.Value(i)) * 86_400_000, nil
	}
	v, neg, err := integerOf(name, a, src, i)
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(v), nil
	}
	if v > math.MaxInt64 {
		return 0, fmt.Errorf("column %s: %d is too large for epoch milliseconds", name, v)
	}
	return int64(v), nil
}

// integerOf is an integer, boolean (0/1) or time (epoch milliseconds, days
// for a date, as a number column receives them) as magnitude and sign.
func integerOf(name string, a arrow.Array, src source, i int) (uint64, bool, error) {
	var v int64
	switch a := a.(type) {
	case *array.Int8:
		v = int64(a.Value(i))
	case *array.Int16:
		v = int64(a.Value(i))
	case *array.Int32:
		v = int64(a.Value(i))
	case *array.Int64:
		v = a.Value(i)
	case *array.Uint8:
		return uint64(a.Value(i)), false, nil
	case *array.Uint16:
		return uint64(a.Value(i)), false, nil
	case *array.Uint32:
		return uint64(a.Value(i)), false, nil
	case *array.Uint64:
		return a.Value(i), false, nil
	case *array.Boolean:
		return uint64(b2i(a.Value(i))), false, nil
	case *array.Date32:
		v = int64(a.Value(i))
	case *array.Timestamp:
		var err error
		if v, err = millisOf(name, a, src, i); err != nil {
			return 0, false, err
		}
	default:
		return 0, false, fmt.Errorf("column %s: unexpected %s array", name, a.DataType())
	}
	if v < 0 {
		return uint64(-v), true, nil // -MinInt64 wraps to its own magnitude
	}
	return uint64(v), false, nil
}

// fitInteger is v in the Go type of a ClickHouse Int<bits> or UInt<bits>,
// or an error when it does not fit (the HTTP path's server would refuse
// or wrap it).
func fitInteger(name, typ string, v uint64, neg, signed bool, bits int) (any, error) {
	fits := !neg && v <= math.MaxUint64>>(64-bits)
	if signed {
		fits = v <= 1<<(bits-1)-1 || (neg && v == 1<<(bits-1))
	}
	if !fits {
		s := strconv.FormatUint(v, 10)
		if neg {
			s = "-" + s
		}
		return nil, fmt.Errorf("column %s: %s is outside ClickHouse %s's range", name, s, typ)
	}
	n := int64(v)
	if neg {
		n = -n
	}
	switch {
	case signed && bits == 8:
		return int8(n), nil
	case signed && bits == 16:
		return int16(n), nil
	case signed && bits == 32:
		return int32(n), nil
	case signed:
		return n, nil
	case bits == 8:
		return uint8(v), nil
	case bits == 16:
		return uint16(v), nil
	case bits == 32:
		return uint32(v), nil
	}
	return v, nil
}

func floatOf(name string, a arrow.Array, src source, i int) (float64, error) {
	switch a := a.(type) {
	case *array.Float32:
		return float64(a.Value(i)), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.Decimal128:
		return a.Value(i).ToFloat64(a.DataType().(*arrow.Decimal128Type).Scale), nil
	}
	v, neg, err := integerOf(name, a, src, i)
	if neg {
		return -float64(v), err
	}
	return float64(v), err
}

func decimalOf(name string, a arrow.Array, src source, i int) (decimal.Decimal, error) {
	switch a := a.(type) {
	case *array.Decimal128:
		return decimal.NewFromBigInt(a.Value(i).BigInt(), -a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Float32, *array.Float64:
		f, _ := floatOf(name, a, src, i)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return decimal.Decimal{}, fmt.Errorf("column %s: %s cannot be a Decimal", name, appendFloat(nil, f, 64))
		}
		return decimal.NewFromFloat(f), nil
	}
	v, neg, err := integerOf(name, a, src, i)
	d := decimal.NewFromUint64(v)
	if neg {
		d = d.Neg()
	}
	return d, err
}
