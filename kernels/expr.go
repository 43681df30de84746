package kernels

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// Expr is a compiled scalar expression evaluated column at a time.
//
// Eval evaluates the expression over the live rows of b (b.Sel; nil = every
// row). The result has b.NumRows() physical rows aligned with b's columns;
// its values at rows outside the selection are unspecified. The caller owns
// the result and releases it. Only live rows raise errors: an integer
// division by zero on a filtered-out row is not an error.
//
// An Expr holds no per-evaluation state, so one compiled expression may be
// evaluated by several goroutines at once.
type Expr interface {
	Type() arrow.DataType
	Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error)
	String() string
}

// exprNode is implemented by every Expr of this package. Expressions built
// elsewhere are treated conservatively (they may fail).
type exprNode interface {
	Expr
	// exprMayFail reports whether Eval can return an error for some input.
	// AND, OR and COALESCE evaluate such operands only on the rows that
	// need them, so `x <> 0 AND 10 / x > 1` does not fail on x = 0.
	exprMayFail() bool
}

func exprMayFail(e Expr) bool {
	if n, ok := e.(exprNode); ok {
		return n.exprMayFail()
	}
	return true
}

// ---------------------------------------------------------------------------
// Column references

type exprCol struct {
	index int
	typ   arrow.DataType
	name  string
}

// ColRef returns an expression reading column index of the batch, which must
// have type t. Evaluating it returns the column itself (one more reference,
// no copy).
func ColRef(index int, t arrow.DataType, name string) Expr {
	return &exprCol{index: index, typ: t, name: name}
}

// ColIndex reports the column e reads when e is a plain column reference
// (ColRef).
func ColIndex(e Expr) (int, bool) {
	if c, ok := e.(*exprCol); ok {
		return c.index, true
	}
	return 0, false
}

func (c *exprCol) Type() arrow.DataType { return c.typ }
func (c *exprCol) exprMayFail() bool    { return false }

func (c *exprCol) String() string {
	if c.name != "" {
		return c.name
	}
	return "$" + strconv.Itoa(c.index)
}

func (c *exprCol) Eval(b *vector.Batch, _ memory.Allocator) (arrow.Array, error) {
	if c.index < 0 || c.index >= int(b.Rec.NumCols()) {
		return nil, fmt.Errorf("column %s: index %d out of range (batch has %d columns)", c, c.index, b.Rec.NumCols())
	}
	col := b.Column(c.index)
	// Same type, or the same supported kind (a timestamp's time zone or a
	// field's metadata may differ; a decimal's scale may not).
	if k := scKindOf(c.typ); !arrow.TypeEqual(col.DataType(), c.typ) && (k == skUnsupported || scKindOf(col.DataType()) != k ||
		k == skDecimal && col.DataType().(*arrow.Decimal128Type).Scale != c.typ.(*arrow.Decimal128Type).Scale) {
		return nil, fmt.Errorf("column %s: batch has type %s, expression expects %s", c, SQLTypeName(col.DataType()), SQLTypeName(c.typ))
	}
	col.Retain()
	return col, nil
}

// ---------------------------------------------------------------------------
// Literals

// literal is a constant. Kernels take it as a scalar operand; it is turned
// into an array only when it is the whole expression (SELECT 1).
type exprLit struct {
	typ  arrow.DataType
	kind scKind
	null bool
	i    int64 // integers and timestamps (epoch ms)
	f    float64
	s    string
	b    bool
	d    scDec // DECIMAL: the unscaled value
}

// Literal returns a constant of type t. v is nil (SQL NULL), an integer
// (int, int8..int64), a float (float32, float64), a string or a bool; it must
// be representable in t without loss: Literal(300, TINYINT) and
// Literal(1.5, INT) are errors, Literal(int64(3), DOUBLE) is 3.0. A timestamp
// literal takes epoch milliseconds. A DECIMAL(p, s) literal takes an integer,
// a float (rounded half up to s digits), decimal text or a decimal128.Num
// (the unscaled value); it must fit p digits. t arrow.Null is the untyped
// NULL, which function calls coerce to the other operands' type.
func Literal(v any, t arrow.DataType) (Expr, error) {
	k := scKindOf(t)
	if k == skUnsupported {
		return nil, fmt.Errorf("literal of unsupported type %s", t)
	}
	l := &exprLit{typ: t, kind: k}
	if v == nil {
		l.null = true
		return l, nil
	}
	if k == skNull {
		return nil, fmt.Errorf("literal %v of type NULL", v)
	}
	bad := func() (Expr, error) {
		return nil, fmt.Errorf("literal %v (%T) is not a valid %s", v, v, SQLTypeName(t))
	}
	if k == skDecimal {
		d, ok := scDecLiteralValue(v, t)
		if !ok {
			return bad()
		}
		l.d = d
		return l, nil
	}
	var iv int64
	var fv float64
	isInt, isFloat := false, false
	switch x := v.(type) {
	case int:
		iv, isInt = int64(x), true
	case int8:
		iv, isInt = int64(x), true
	case int16:
		iv, isInt = int64(x), true
	case int32:
		iv, isInt = int64(x), true
	case int64:
		iv, isInt = x, true
	case float32:
		fv, isFloat = float64(x), true
	case float64:
		fv, isFloat = x, true
	case string:
		if k != skString {
			return bad()
		}
		l.s = x
		return l, nil
	case bool:
		if k != skBool {
			return bad()
		}
		l.b = x
		return l, nil
	default:
		return bad()
	}
	switch {
	case k.isInt() || k == skTimestamp:
		if isFloat {
			if fv != math.Trunc(fv) || fv < -(1<<63) || fv >= 1<<63 {
				return bad()
			}
			iv = int64(fv)
		}
		lo, hi := k.intRange()
		if iv < lo || iv > hi {
			return nil, fmt.Errorf("literal %v out of range for %s", v, SQLTypeName(t))
		}
		l.i = iv
	case k.isFloat():
		if isInt {
			fv = float64(iv)
		}
		if k == skFloat32 {
			fv = float64(float32(fv))
		}
		l.f = fv
	default:
		return bad()
	}
	return l, nil
}

func (l *exprLit) Type() arrow.DataType { return l.typ }
func (l *exprLit) exprMayFail() bool    { return false }

func (l *exprLit) String() string {
	if l.null {
		return "NULL"
	}
	switch {
	case l.kind.isInt():
		return strconv.FormatInt(l.i, 10)
	case l.kind.isFloat():
		return string(scAppendJavaFloat(nil, l.f, l.kind.floatBits()))
	case l.kind == skString:
		return "'" + strings.ReplaceAll(l.s, "'", "''") + "'"
	case l.kind == skBool:
		if l.b {
			return "TRUE"
		}
		return "FALSE"
	case l.kind == skTimestamp:
		return "TIMESTAMP '" + string(scAppendTimestamp(nil, l.i)) + "'"
	case l.kind == skDecimal:
		_, s := scDecPS(l.typ)
		return decString(l.d, s)
	}
	return "?"
}

// Eval broadcasts the constant to b.NumRows() rows.
func (l *exprLit) Eval(b *vector.Batch, mem memory.Allocator) (arrow.Array, error) {
	n := b.NumRows()
	if l.null {
		return array.MakeArrayOfNull(mem, l.typ, n), nil
	}
	switch l.kind {
	case skInt8:
		return scFill(mem, l.typ, n, int8(l.i)), nil
	case skInt16:
		return scFill(mem, l.typ, n, int16(l.i)), nil
	case skInt32:
		return scFill(mem, l.typ, n, int32(l.i)), nil
	case skInt64, skTimestamp:
		return scFill(mem, l.typ, n, l.i), nil
	case skFloat32:
		return scFill(mem, l.typ, n, float32(l.f)), nil
	case skFloat64:
		return scFill(mem, l.typ, n, l.f), nil
	case skDecimal:
		return scFill(mem, l.typ, n, l.d), nil
	case skBool:
		buf, bits := scAllocBitmap(mem, n)
		var fill byte
		if l.b {
			fill = 0xff
		}
		for i := range bits {
			bits[i] = fill
		}
		return scMakeArray(l.typ, n, nil, 0, buf), nil
	case skString:
		w := newScStrWriter(mem, n, n*len(l.s))
		for i := 0; i < n; i++ {
			w.appendString(l.s)
			w.endRow(i)
		}
		return w.finish(l.typ, nil, 0), nil
	}
	return nil, fmt.Errorf("literal of unsupported type %s", l.typ)
}

func scFill[T scFixed](mem memory.Allocator, t arrow.DataType, n int, v T) arrow.Array {
	buf, o := scAllocValues[T](mem, n)
	for i := range o {
		o[i] = v
	}
	return scMakeArray(t, n, nil, 0, buf)
}

// scLiteralAt reads row i of arr as a literal of arr's type.
func scLiteralAt(arr arrow.Array, i int) *exprLit {
	t := arr.DataType()
	l := &exprLit{typ: t, kind: scKindOf(t)}
	if arr.IsNull(i) {
		l.null = true
		return l
	}
	switch l.kind {
	case skInt8:
		l.i = int64(scValues[int8](arr)[i])
	case skInt16:
		l.i = int64(scValues[int16](arr)[i])
	case skInt32:
		l.i = int64(scValues[int32](arr)[i])
	case skInt64, skTimestamp:
		l.i = scValues[int64](arr)[i]
	case skFloat32:
		l.f = float64(scValues[float32](arr)[i])
	case skFloat64:
		l.f = scValues[float64](arr)[i]
	case skDecimal:
		l.d = scValues[scDec](arr)[i]
	case skBool:
		l.b = arr.(*array.Boolean).Value(i)
	case skString:
		l.s = strings.Clone(arr.(*array.String).Value(i))
	default:
		l.null = true
	}
	return l
}

// scLitFixed returns a fixed-width literal as T (T scDec for a DECIMAL).
func scLitFixed[T scFixed](l *exprLit) T {
	var z T
	if d, ok := any(&z).(*scDec); ok {
		*d = l.d
		return z
	}
	switch p := any(&z).(type) {
	case *int8:
		*p = int8(l.i)
	case *int16:
		*p = int16(l.i)
	case *int32:
		*p = int32(l.i)
	case *int64:
		*p = l.i
	case *float32:
		*p = float32(l.f)
	case *float64:
		*p = l.f
	}
	return z
}

// scLitNum returns a numeric literal as T. The literal has T's kind.
func scLitNum[T scNum](l *exprLit) T {
	if l.kind.isFloat() {
		return T(l.f)
	}
	return T(l.i)
}

// exprFold replaces an expression whose operands are all literals by its
// value. If evaluating it fails (1/0) the expression is kept: the error is
// raised at run time, and only if a live row reaches it.
func exprFold(e Expr) Expr {
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer rec.Release()
	arr, err := e.Eval(&vector.Batch{Rec: rec}, memory.DefaultAllocator)
	if err != nil {
		return e
	}
	defer arr.Release()
	l := scLiteralAt(arr, 0)
	l.typ = e.Type()
	return l
}

func scIsLiteral(e Expr) (*exprLit, bool) {
	l, ok := e.(*exprLit)
	return l, ok
}

func scIsNullLiteral(e Expr) bool {
	l, ok := e.(*exprLit)
	return ok && l.null
}

// ---------------------------------------------------------------------------
// Types

// scKind classifies the Arrow types the scalar kernels support.
type scKind uint8

const (
	skUnsupported scKind = iota
	skNull
	skBool
	skInt8
	skInt16
	skInt32
	skInt64
	skFloat32
	skFloat64
	skString
	skTimestamp
	skDecimal // Decimal128 with 0 <= scale <= precision <= 38
)

func (k scKind) isInt() bool     { return k >= skInt8 && k <= skInt64 }
func (k scKind) isFloat() bool   { return k == skFloat32 || k == skFloat64 }
func (k scKind) isNumeric() bool { return k >= skInt8 && k <= skFloat64 }

func (k scKind) floatBits() int {
	if k == skFloat32 {
		return 32
	}
	return 64
}

func (k scKind) intRange() (int64, int64) {
	switch k {
	case skInt8:
		return math.MinInt8, math.MaxInt8
	case skInt16:
		return math.MinInt16, math.MaxInt16
	case skInt32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

func scKindOf(t arrow.DataType) scKind {
	if t == nil {
		return skUnsupported
	}
	switch t.ID() {
	case arrow.NULL:
		return skNull
	case arrow.BOOL:
		return skBool
	case arrow.INT8:
		return skInt8
	case arrow.INT16:
		return skInt16
	case arrow.INT32:
		return skInt32
	case arrow.INT64:
		return skInt64
	case arrow.FLOAT32:
		return skFloat32
	case arrow.FLOAT64:
		return skFloat64
	case arrow.STRING:
		return skString
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).Unit == arrow.Millisecond {
			return skTimestamp
		}
	case arrow.DECIMAL128:
		d := t.(*arrow.Decimal128Type)
		if d.Precision >= 1 && d.Precision <= scDecMaxPrecision && d.Scale >= 0 && d.Scale <= d.Precision {
			return skDecimal
		}
	}
	return skUnsupported
}

// scTypeOf is the canonical Arrow type of a kind (timestamps: Timestamp_ms;
// DECIMAL has none: nil).
func scTypeOf(k scKind) arrow.DataType {
	switch k {
	case skNull:
		return arrow.Null
	case skBool:
		return arrow.FixedWidthTypes.Boolean
	case skInt8:
		return arrow.PrimitiveTypes.Int8
	case skInt16:
		return arrow.PrimitiveTypes.Int16
	case skInt32:
		return arrow.PrimitiveTypes.Int32
	case skInt64:
		return arrow.PrimitiveTypes.Int64
	case skFloat32:
		return arrow.PrimitiveTypes.Float32
	case skFloat64:
		return arrow.PrimitiveTypes.Float64
	case skString:
		return arrow.BinaryTypes.String
	case skTimestamp:
		return arrow.FixedWidthTypes.Timestamp_ms
	}
	return nil
}

// SQLTypeName is the SQL spelling of an Arrow type, as error messages show it
// to users: BIGINT, INT, SMALLINT, TINYINT, DOUBLE, FLOAT, VARCHAR, BOOLEAN,
// TIMESTAMP(3), DECIMAL(p, s), NULL.
func SQLTypeName(t arrow.DataType) string {
	if t == nil {
		return "<nil>"
	}
	switch t.ID() {
	case arrow.NULL:
		return "NULL"
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT16:
		return "SMALLINT"
	case arrow.INT32:
		return "INT"
	case arrow.INT64:
		return "BIGINT"
	case arrow.FLOAT32:
		return "FLOAT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return "VARCHAR"
	case arrow.BINARY, arrow.LARGE_BINARY:
		return "VARBINARY"
	case arrow.DATE32, arrow.DATE64:
		return "DATE"
	case arrow.DECIMAL128, arrow.DECIMAL256, arrow.DECIMAL32, arrow.DECIMAL64:
		d := t.(arrow.DecimalType)
		return fmt.Sprintf("DECIMAL(%d, %d)", d.GetPrecision(), d.GetScale())
	case arrow.TIMESTAMP:
		switch t.(*arrow.TimestampType).Unit {
		case arrow.Second:
			return "TIMESTAMP(0)"
		case arrow.Millisecond:
			return "TIMESTAMP(3)"
		case arrow.Microsecond:
			return "TIMESTAMP(6)"
		default:
			return "TIMESTAMP(9)"
		}
	}
	return strings.ToUpper(t.String())
}
