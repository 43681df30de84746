package kernels

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

func TestTimeCivilRandom(t *testing.T) {
	r := rand.New(rand.NewSource(80))
	for iter := 0; iter < 100000; iter++ {
		days := r.Int63n(2*3_000_000) - 3_000_000 // about ±8000 years
		tm := time.Unix(days*86400, 0).UTC()
		y, m, d := scCivil(days)
		if y != int64(tm.Year()) || m != int(tm.Month()) || d != tm.Day() {
			t.Fatalf("day %d: %d-%d-%d, want %s", days, y, m, d, tm)
		}
		if back := scDaysFromCivil(y, m, d); back != days {
			t.Fatalf("%d-%d-%d: day %d, want %d", y, m, d, back, days)
		}
		if wy, ww := tm.ISOWeek(); ww != scISOWeek(days) {
			t.Fatalf("%s: ISO week %d, want %d (%d)", tm, scISOWeek(days), ww, wy)
		}
	}
}

// etTimeBatch has a TIMESTAMP(3) column "ts" of random instants over
// ±300 years (some NULL), a VARCHAR column "unit" and a random selection.
func etTimeBatch(r *rand.Rand, t *testing.T, mem memory.Allocator) (*vector.Batch, []etVal, []string) {
	n := []int{1, 7, 64, 200, 1024}[r.Intn(5)]
	ts := make([]any, n)
	vals := make([]etVal, n)
	units := make([]any, n)
	unitVals := make([]string, n)
	names := []string{"year", "QUARTER", "Month", "week", "DAY", "hour", "MINUTE", "second", "millisecond"}
	for i := range ts {
		unitVals[i] = names[r.Intn(len(names))]
		units[i] = unitVals[i]
		if r.Intn(10) == 0 {
			vals[i] = etVal{null: true}
			continue
		}
		v := r.Int63n(2*300*365*86400000) - 300*365*86400000
		if r.Intn(4) == 0 {
			v = v / 86400000 * 86400000 // midnight
		}
		ts[i], vals[i] = v, etVal{i: v}
	}
	b := etOneBatch(t, mem, map[string][]any{"ts": ts, "unit": units}, map[string]arrow.DataType{"ts": etTs, "unit": etString}, "ts", "unit")
	if r.Intn(2) == 0 {
		sel := []int32{}
		for i := 0; i < n; i++ {
			if r.Intn(3) > 0 {
				sel = append(sel, int32(i))
			}
		}
		b.Sel = sel
	}
	return b, vals, unitVals
}

func etRefExtract(unit string, ms int64) int64 {
	tm := time.UnixMilli(ms).UTC()
	switch strings.ToUpper(unit) {
	case "YEAR":
		return int64(tm.Year())
	case "QUARTER":
		return int64(tm.Month()-1)/3 + 1
	case "MONTH":
		return int64(tm.Month())
	case "WEEK":
		_, w := tm.ISOWeek()
		return int64(w)
	case "DAY":
		return int64(tm.Day())
	case "DAYOFWEEK", "DOW":
		return int64(tm.Weekday()) + 1
	case "ISODOW":
		return int64((tm.Weekday()+6)%7) + 1
	case "DAYOFYEAR", "DOY":
		return int64(tm.YearDay())
	case "HOUR":
		return int64(tm.Hour())
	case "MINUTE":
		return int64(tm.Minute())
	case "SECOND":
		return int64(tm.Second())
	case "MILLISECOND":
		return int64(tm.Nanosecond() / 1e6)
	case "EPOCH":
		return tm.Truncate(time.Second).Unix()
	}
	panic(unit)
}

func etRefTrunc(unit string, ms int64) int64 {
	tm := time.UnixMilli(ms).UTC()
	y, mo, d := tm.Date()
	var out time.Time
	switch strings.ToUpper(unit) {
	case "YEAR":
		out = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	case "QUARTER":
		out = time.Date(y, (mo-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)
	case "MONTH":
		out = time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC)
	case "WEEK":
		out = time.Date(y, mo, d-int(tm.Weekday()+6)%7, 0, 0, 0, 0, time.UTC)
	case "DAY":
		out = time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	case "HOUR":
		out = tm.Truncate(time.Hour)
	case "MINUTE":
		out = tm.Truncate(time.Minute)
	case "SECOND":
		out = tm.Truncate(time.Second)
	default:
		out = tm
	}
	return out.UnixMilli()
}

func TestTimeExtractRandom(t *testing.T) {
	r := rand.New(rand.NewSource(81))
	reg := etNewTestRegistry()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 40; iter++ {
		b, vals, units := etTimeBatch(r, t, mem)
		tb := &etTestBatch{b: b, vals: map[string][]etVal{"ts": vals}, cols: map[string]int{"ts": 0, "unit": 1}}
		ts := ColRef(0, etTs, "ts")
		for unit := range scTimeUnits {
			e, err := reg.Call("extract", []Expr{etLit(t, strings.ToLower(unit), etString), ts})
			if err != nil {
				t.Fatal(err)
			}
			if e.Type().ID() != arrow.INT64 {
				t.Fatalf("extract type %s", e.Type())
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if vals[i].null {
					return vals[i], false
				}
				return etVal{i: etRefExtract(unit, vals[i].i)}, false
			})
			if scParseUnit(unit, true) == tuInvalid {
				if _, err := reg.Call("date_trunc", []Expr{etLit(t, unit, etString), ts}); err == nil {
					t.Fatalf("date_trunc(%s): no error", unit)
				}
				continue
			}
			e, err = reg.Call("date_trunc", []Expr{etLit(t, unit, etString), ts})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if vals[i].null {
					return vals[i], false
				}
				return etVal{i: etRefTrunc(unit, vals[i].i)}, false
			})
		}
		// A column of units.
		for _, fn := range []string{"extract", "date_trunc"} {
			e, err := reg.Call(fn, []Expr{ColRef(1, etString, "unit"), ts})
			if err != nil {
				t.Fatal(err)
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if vals[i].null {
					return vals[i], false
				}
				if fn == "extract" {
					return etVal{i: etRefExtract(units[i], vals[i].i)}, false
				}
				return etVal{i: etRefTrunc(units[i], vals[i].i)}, false
			})
		}
		// TIMESTAMP → VARCHAR → TIMESTAMP, and TO_TIMESTAMP of the text.
		str := etMustCast(t, ts, etString)
		etCheckAgainst(t, mem, str, tb, func(i int) (etVal, bool) {
			if vals[i].null {
				return vals[i], false
			}
			return etVal{s: time.UnixMilli(vals[i].i).UTC().Format("2006-01-02 15:04:05.000")}, false
		})
		for _, back := range []Expr{etMustCast(t, str, etTs), etCall(t, "to_timestamp", str)} {
			etCheckAgainst(t, mem, back, tb, func(i int) (etVal, bool) { return vals[i], false })
		}
		// Interval arithmetic.
		for _, c := range []struct {
			fn   string
			args []Expr
			ref  func(v int64) int64
		}{
			{"add", []Expr{ts, etLit(t, int64(90_000), etInt64)}, func(v int64) int64 { return v + 90_000 }},
			{"add", []Expr{etLit(t, 1000, etInt32), ts}, func(v int64) int64 { return v + 1000 }},
			{"subtract", []Expr{ts, etLit(t, int64(86_400_000), etInt64)}, func(v int64) int64 { return v - 86_400_000 }},
		} {
			e := etCall(t, c.fn, c.args...)
			if e.Type().ID() != arrow.TIMESTAMP {
				t.Fatalf("%s: type %s", e, SQLTypeName(e.Type()))
			}
			etCheckAgainst(t, mem, e, tb, func(i int) (etVal, bool) {
				if vals[i].null {
					return vals[i], false
				}
				return etVal{i: c.ref(vals[i].i)}, false
			})
		}
		b.Release()
	}
}

func TestTimeFunctions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := etNewTestRegistry()
	s := func(v string) Expr { return etLit(t, v, etString) }
	ms := func(text string) string {
		tm, err := time.Parse("2006-01-02 15:04:05.000", text)
		if err != nil {
			t.Fatal(err)
		}
		return "TIMESTAMP '" + tm.Format("2006-01-02 15:04:05.000") + "'"
	}
	tsLit := etLit(t, int64(1700000000123), etTs) // 2023-11-14 22:13:20.123, a Tuesday
	cases := []struct {
		fn   string
		args []Expr
		want string
	}{
		{"to_timestamp", []Expr{s("2023-11-14 22:13:20")}, ms("2023-11-14 22:13:20.000")},
		{"to_timestamp", []Expr{s("2023-11-14 22:13:20.5")}, ms("2023-11-14 22:13:20.500")},
		{"to_timestamp", []Expr{s("2023-11-14T22:13:20.123456")}, ms("2023-11-14 22:13:20.123")},
		{"to_timestamp", []Expr{s("2023-11-14")}, ms("2023-11-14 00:00:00.000")},
		{"to_timestamp", []Expr{s("not a time")}, "NULL"},
		{"to_timestamp", []Expr{s("2023-02-30 00:00:00")}, "NULL"},
		{"to_timestamp", []Expr{s("14/11/2023 22:13"), s("dd/MM/yyyy HH:mm")}, ms("2023-11-14 22:13:00.000")},
		{"to_timestamp", []Expr{s("20231114221320"), s("yyyyMMddHHmmss")}, ms("2023-11-14 22:13:20.000")},
		{"to_timestamp", []Expr{s("2023-11-14T22:13:20.123Z"), s("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")}, ms("2023-11-14 22:13:20.123")},
		{"to_timestamp", []Expr{s("14.11.23"), s("dd.MM.yy")}, ms("2023-11-14 00:00:00.000")},
		{"to_timestamp", []Expr{s("2023-1-5"), s("yyyy-M-d")}, ms("2023-01-05 00:00:00.000")},
		{"to_timestamp", []Expr{s("2023-1-5"), s("yyyy-MM-dd")}, "NULL"},
		{"to_timestamp", []Expr{s("2023-11-14 22"), s("yyyy-MM-dd")}, "NULL"},
		{"to_timestamp", []Expr{s("it's 2023"), s("'it''s' yyyy")}, ms("2023-01-01 00:00:00.000")},
		{"to_timestamp_ltz", []Expr{etLit(t, int64(1700000000), etInt64), etLit(t, 0, etInt32)}, ms("2023-11-14 22:13:20.000")},
		{"to_timestamp_ltz", []Expr{etLit(t, int64(1700000000123), etInt64), etLit(t, 3, etInt32)}, ms("2023-11-14 22:13:20.123")},
		{"to_timestamp_ltz", []Expr{etLit(t, int64(-1), etInt64)}, ms("1969-12-31 23:59:59.999")},
		{"extract", []Expr{s("YEAR"), tsLit}, "2023"},
		{"extract", []Expr{s("quarter"), tsLit}, "4"},
		{"extract", []Expr{s("week"), tsLit}, "46"},
		{"extract", []Expr{s("DAYOFWEEK"), tsLit}, "3"},
		{"extract", []Expr{s("ISODOW"), tsLit}, "2"},
		{"extract", []Expr{s("DOY"), tsLit}, "318"},
		{"extract", []Expr{s("MILLISECOND"), tsLit}, "123"},
		{"extract", []Expr{s("EPOCH"), tsLit}, "1700000000"},
		{"extract", []Expr{s("WEEK"), etLit(t, int64(1609459200000), etTs)}, "53"}, // 2021-01-01: week 53 of 2020
		{"date_trunc", []Expr{s("WEEK"), tsLit}, ms("2023-11-13 00:00:00.000")},
		{"date_trunc", []Expr{s("quarter"), tsLit}, ms("2023-10-01 00:00:00.000")},
		{"date_trunc", []Expr{s("hour"), etLit(t, int64(-1), etTs)}, ms("1969-12-31 23:00:00.000")},
		{"extract", []Expr{s("YEAR"), etLit(t, nil, arrow.Null)}, "NULL"},
	}
	for _, c := range cases {
		e, err := reg.Call(c.fn, c.args)
		if err != nil {
			t.Errorf("%s: %v", c.fn, err)
			continue
		}
		if e.String() != c.want {
			t.Errorf("%s(%v) = %s, want %s", c.fn, c.args, e, c.want)
		}
	}
	col := ColRef(0, etTs, "ts")
	for _, bad := range []struct {
		fn   string
		args []Expr
		want string
	}{
		{"extract", []Expr{s("FORTNIGHT"), col}, "unknown unit 'FORTNIGHT'"},
		{"date_trunc", []Expr{s("DOW"), col}, "unknown unit 'DOW'"},
		{"extract", []Expr{s("YEAR"), ColRef(0, etInt64, "n")}, "does not accept (VARCHAR, BIGINT)"},
		{"to_timestamp", []Expr{s("x"), s("yyyy-QQ")}, "pattern letter 'Q' is not supported"},
		{"to_timestamp", []Expr{s("x"), s("'yyyy")}, "unterminated quote"},
		{"to_timestamp_ltz", []Expr{ColRef(0, etInt64, "n"), etLit(t, 6, etInt32)}, "precision must be"},
		{"to_timestamp_ltz", []Expr{col}, "does not accept (TIMESTAMP(3))"},
	} {
		if _, err := reg.Call(bad.fn, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want %q", bad.fn, err, bad.want)
		}
	}
	// A column of formats: compiled per distinct format; a bad one fails.
	b := etOneBatch(t, mem, map[string][]any{"s": {"2023-11-14", "14/11/2023", "x"}, "f": {"yyyy-MM-dd", "dd/MM/yyyy", "yyyy"}},
		map[string]arrow.DataType{"s": etString, "f": etString}, "s", "f")
	defer b.Release()
	e := etCall(t, "to_timestamp", ColRef(0, etString, "s"), ColRef(1, etString, "f"))
	rows, err := etEvalRows(t, mem, e, b)
	if err != nil || rows[0].i != 1699920000000 || rows[1].i != 1699920000000 || !rows[2].null {
		t.Errorf("to_timestamp with a format column: %v %v", rows, err)
	}
}
