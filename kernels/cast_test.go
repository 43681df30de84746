package kernels

import (
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestJavaFloatFormat(t *testing.T) {
	cases := []struct {
		f    float64
		bits int
		want string
	}{
		{1, 64, "1.0"}, {-1, 64, "-1.0"}, {0, 64, "0.0"}, {math.Copysign(0, -1), 64, "-0.0"},
		{1.5, 64, "1.5"}, {100, 64, "100.0"}, {123456.789, 64, "123456.789"},
		{1e7, 64, "1.0E7"}, {9999999, 64, "9999999.0"}, {12345678, 64, "1.2345678E7"},
		{0.001, 64, "0.001"}, {0.0001, 64, "1.0E-4"}, {0.00123, 64, "0.00123"}, {1.25e-5, 64, "1.25E-5"},
		{0.1, 64, "0.1"}, {1.0 / 3, 64, "0.3333333333333333"}, {1e21, 64, "1.0E21"}, {-2.5e-10, 64, "-2.5E-10"},
		{math.MaxFloat64, 64, "1.7976931348623157E308"}, {5e-324, 64, "4.9E-324"}, {1e-323, 64, "9.9E-324"}, {1e23, 64, "1.0E23"},
		{math.NaN(), 64, "NaN"}, {math.Inf(1), 64, "Infinity"}, {math.Inf(-1), 64, "-Infinity"},
		{float64(float32(0.1)), 32, "0.1"}, {float64(float32(1.0 / 3)), 32, "0.33333334"}, {float64(float32(1e10)), 32, "1.0E10"},
	}
	for _, c := range cases {
		if got := string(scAppendJavaFloat(nil, c.f, c.bits)); got != c.want {
			t.Errorf("%v (%d bits): %q, want %q", c.f, c.bits, got, c.want)
		}
	}
}

// etCastRows casts a one-column batch and returns the live rows or the error.
func etCastRows(t *testing.T, mem memory.Allocator, from arrow.DataType, vals []any, sel []int32, to arrow.DataType) ([]etVal, error) {
	t.Helper()
	b := etOneBatch(t, mem, map[string][]any{"x": vals}, map[string]arrow.DataType{"x": from}, "x")
	defer b.Release()
	b.Sel = sel
	e, err := Cast(ColRef(0, from, "x"), to)
	if err != nil {
		t.Fatal(err)
	}
	return etEvalRows(t, mem, e, b)
}

func TestCastTable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	type tc struct {
		from arrow.DataType
		in   []any
		to   arrow.DataType
		want []etVal
	}
	null := etVal{null: true}
	cases := []tc{
		// float → int: truncation toward zero, Java saturation, NaN → 0.
		{etDouble, []any{2.9, -2.9, nil, math.NaN(), 1e300, -1e300}, etInt64,
			[]etVal{{i: 2}, {i: -2}, null, {i: 0}, {i: math.MaxInt64}, {i: math.MinInt64}}},
		{etDouble, []any{3e9, -3e9, 300.7}, etInt32, []etVal{{i: math.MaxInt32}, {i: math.MinInt32}, {i: 300}}},
		{etDouble, []any{300.7, 1e10}, etInt8, []etVal{{i: 44}, {i: -1}}}, // (byte)(int)d
		{etInt64, []any{300, -129, math.MaxInt64}, etInt8, []etVal{{i: 44}, {i: 127}, {i: -1}}},
		{etInt64, []any{1 << 53, (1 << 53) + 1}, etDouble, []etVal{{f: 1 << 53}, {f: 1 << 53}}},
		// → VARCHAR
		{etInt32, []any{-42, nil, 0}, etString, []etVal{{s: "-42"}, null, {s: "0"}}},
		{etDouble, []any{1.0, 1e10, 0.5, nil}, etString, []etVal{{s: "1.0"}, {s: "1.0E10"}, {s: "0.5"}, null}},
		{etFloat, []any{0.1}, etString, []etVal{{s: "0.1"}}},
		{etBool, []any{true, false, nil}, etString, []etVal{{s: "TRUE"}, {s: "FALSE"}, null}},
		{etTs, []any{int64(0), int64(1700000000123), int64(-1)}, etString,
			[]etVal{{s: "1970-01-01 00:00:00.000"}, {s: "2023-11-14 22:13:20.123"}, {s: "1969-12-31 23:59:59.999"}}},
		// VARCHAR →
		{etString, []any{" 42 ", "-7", nil, "+3"}, etInt32, []etVal{{i: 42}, {i: -7}, null, {i: 3}}},
		{etString, []any{"1.5", "-1e3", "NaN", "Infinity", "-inf", "1e400"}, etDouble,
			[]etVal{{f: 1.5}, {f: -1000}, {f: math.NaN()}, {f: math.Inf(1)}, {f: math.Inf(-1)}, {f: math.Inf(1)}}},
		{etString, []any{"TRUE", "f", " yes ", "0", "N"}, etBool, []etVal{{b: true}, {b: false}, {b: true}, {b: false}, {b: false}}},
		{etString, []any{"2023-11-14 22:13:20.123", "2023-11-14T22:13:20", "1970-01-02", "2023-11-14 22:13:20.1239"}, etTs,
			[]etVal{{i: 1700000000123}, {i: 1700000000000}, {i: 86400000}, {i: 1700000000123}}},
		// integer ↔ TIMESTAMP(3)
		{etInt64, []any{int64(1700000000123), nil}, etTs, []etVal{{i: 1700000000123}, null}},
		{etInt32, []any{1000}, etTs, []etVal{{i: 1000}}},
		{etTs, []any{int64(5)}, etInt64, []etVal{{i: 5}}},
		// NULL → anything
		{arrow.Null, []any{nil, nil}, etString, []etVal{null, null}},
		// BOOLEAN ↔ numeric (Flink: CAST(TRUE AS INT) = 1, a number is TRUE when not zero).
		{etBool, []any{true, false, nil}, etInt32, []etVal{{i: 1}, {i: 0}, null}},
		{etBool, []any{true, false}, etDouble, []etVal{{f: 1}, {f: 0}}},
		{etInt64, []any{0, -3, 7, nil}, etBool, []etVal{{b: false}, {b: true}, {b: true}, null}},
		{etDouble, []any{0.0, math.Copysign(0, -1), 0.5, math.NaN()}, etBool, []etVal{{b: false}, {b: false}, {b: true}, {b: true}}},
		// TIMESTAMP text forms: ' ' or 'T', fractions truncated, short fields.
		{etString, []any{"2023-1-5 7:08", " 2023-11-14T22:13:20.5 ", "2024-02-29", "1969-12-31 23:59:59.999"}, etTs,
			[]etVal{{i: 1672902480000}, {i: 1700000000500}, {i: 1709164800000}, {i: -1}}},
	}
	for _, c := range cases {
		var got []etVal
		var err error
		if c.from.ID() == arrow.NULL {
			b := etOneBatch(t, mem, map[string][]any{"x": {1, 2}}, map[string]arrow.DataType{"x": etInt64}, "x")
			got, err = etEvalRows(t, mem, etMustCast(t, ColRef(0, arrow.Null, "n"), c.to), b)
			b.Release()
		} else {
			got, err = etCastRows(t, mem, c.from, c.in, nil, c.to)
		}
		if err != nil {
			t.Fatalf("CAST(%v AS %s): %v", c.in, SQLTypeName(c.to), err)
		}
		for i := range c.want {
			if !etSameVal(scKindOf(c.to), got[i], c.want[i]) {
				t.Errorf("CAST(%v AS %s) row %d: %v, want %v", c.in[i], SQLTypeName(c.to), i, got[i], c.want[i])
			}
		}
	}
}

func etMustCast(t *testing.T, e Expr, to arrow.DataType) Expr {
	t.Helper()
	c, err := Cast(e, to)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCastErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Bad text fails only on live rows, naming the value.
	good := map[arrow.DataType]string{etInt8: "12", etInt32: "12", etInt64: "12", etFloat: "1.5", etDouble: "1.5", etBool: "true", etTs: "1970-01-01"}
	for to, ok := range good {
		_, err := etCastRows(t, mem, etString, []any{ok, "abc", nil}, nil, to)
		want := "cannot cast 'abc' to " + SQLTypeName(to)
		if err == nil || err.Error() != want {
			t.Errorf("CAST('abc' AS %s): %v, want %q", SQLTypeName(to), err, want)
		}
		if _, err := etCastRows(t, mem, etString, []any{ok, "abc", nil}, []int32{0, 2}, to); err != nil {
			t.Errorf("CAST AS %s with 'abc' filtered out: %v", SQLTypeName(to), err)
		}
	}
	if _, err := etCastRows(t, mem, etString, []any{"300"}, nil, etInt8); err == nil || !strings.Contains(err.Error(), "'300'") {
		t.Errorf("CAST('300' AS TINYINT): %v", err)
	}
	if _, err := etCastRows(t, mem, etString, []any{"1.5"}, nil, etInt64); err == nil {
		t.Error("CAST('1.5' AS BIGINT): no error")
	}
	for _, bad := range []string{"2023-02-29", "2023-13-01", "2023-01-01 24:00", "2023-01-01X10:00", "23-01-01", "2023-01-01 10:00:00."} {
		if _, err := etCastRows(t, mem, etString, []any{bad}, nil, etTs); err == nil {
			t.Errorf("CAST('%s' AS TIMESTAMP(3)): no error", bad)
		}
	}
	// A constant cast that fails is kept and fails at run time.
	e := etMustCast(t, etLit(t, "x", etString), etInt64)
	if _, ok := e.(*exprLit); ok {
		t.Fatal("CAST('x' AS BIGINT) folded")
	}
	// Unsupported pairs fail at bind time.
	for _, c := range []struct{ from, to arrow.DataType }{
		{etTs, etInt32}, {etDouble, etTs}, {etInt64, arrow.PrimitiveTypes.Uint8}, {etInt64, arrow.Null}, {etBool, etTs}, {scDecType(5, 2), etTs},
	} {
		_, err := Cast(ColRef(0, c.from, "x"), c.to)
		want := "cannot cast " + SQLTypeName(c.from) + " to " + SQLTypeName(c.to)
		if err == nil || err.Error() != want {
			t.Errorf("Cast %s→%s: %v, want %q", SQLTypeName(c.from), SQLTypeName(c.to), err, want)
		}
	}
	// Folded constant casts.
	if l, ok := etMustCast(t, etLit(t, "12", etString), etInt16).(*exprLit); !ok || l.i != 12 {
		t.Error("CAST('12' AS SMALLINT) not folded to 12")
	}
}

// Integers and strings round-trip through VARCHAR over random batches.
func TestCastStringRandom(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 40; iter++ {
		tb := etRandBatch(r, mem)
		for _, k := range []scKind{skInt8, skInt16, skInt32, skInt64, skFloat64, skFloat32, skBool, skTimestamp} {
			name := etColName(k, "a")
			toStr := etMustCast(t, tb.col(name), etString)
			etCheckAgainst(t, mem, toStr, tb, func(i int) (etVal, bool) {
				v := tb.vals[name][i]
				switch {
				case v.null:
					return v, false
				case k.isInt():
					return etVal{s: strconv.FormatInt(v.i, 10)}, false
				case k == skBool:
					return etVal{s: strings.ToUpper(strconv.FormatBool(v.b))}, false
				case k.isFloat():
					return etVal{s: string(scAppendJavaFloat(nil, v.f, k.floatBits()))}, false
				}
				return etVal{s: etArrowTs(v.i)}, false
			})
			back := etMustCast(t, toStr, scTypeOf(k))
			etCheckAgainst(t, mem, back, tb, func(i int) (etVal, bool) { return tb.vals[name][i], false })
		}
		tb.release()
	}
}

func etArrowTs(ms int64) string {
	return string(etScAppendTs(ms))
}

func etScAppendTs(ms int64) []byte {
	l := &exprLit{kind: skTimestamp, i: ms}
	s := l.String()
	return []byte(s[len("TIMESTAMP '") : len(s)-1])
}
