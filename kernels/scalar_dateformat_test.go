package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// etDateFormats pairs Java patterns with a reference written with Go's
// time package (its layouts where they exist), independent of scCivil.
var etDateFormats = []struct {
	java string
	ref  func(tm time.Time) string
}{
	{"yyyy-MM-dd", func(tm time.Time) string { return tm.Format("2006-01-02") }},
	{"yyyy-MM-dd HH:mm:ss.SSS", func(tm time.Time) string { return tm.Format("2006-01-02 15:04:05.000") }},
	{"HH:mm", func(tm time.Time) string { return tm.Format("15:04") }},
	{"yy/M/d h:m:s a", func(tm time.Time) string { return tm.Format("06/1/2 3:4:5 PM") }},
	{"EEE, d MMM yyyy HH:mm", func(tm time.Time) string { return tm.Format("Mon, 2 Jan 2006 15:04") }},
	{"EEEE MMMM dd", func(tm time.Time) string { return tm.Format("Monday January 02") }},
	{"yyyy'T'HH'h'mm 'o''clock'", func(tm time.Time) string { return tm.Format("2006T15h04 ") + "o'clock" }},
	{"yyyy年MM月dd日 E", func(tm time.Time) string { return tm.Format("2006年01月02日 Mon") }},
	{"S SS SSS SSSS SSSSSS", func(tm time.Time) string {
		ns := fmt.Sprintf("%09d", tm.Nanosecond())
		return ns[:1] + " " + ns[:2] + " " + ns[:3] + " " + ns[:4] + " " + ns[:6]
	}},
	{"D DD DDD", func(tm time.Time) string {
		d := tm.YearDay()
		return fmt.Sprintf("%d %02d %03d", d, d, d)
	}},
	{"k K kk KK hh", func(tm time.Time) string {
		h := tm.Hour()
		k := h
		if k == 0 {
			k = 24
		}
		return fmt.Sprintf("%d %d %02d %02d %s", k, h%12, k, h%12, tm.Format("03"))
	}},
	{"MMMMM EEEEE", func(tm time.Time) string { return tm.Month().String()[:1] + " " + tm.Weekday().String()[:1] }},
	{"y yyy yyyyy", func(tm time.Time) string { return fmt.Sprintf("%d %03d %05d", tm.Year(), tm.Year(), tm.Year()) }},
	{"", func(time.Time) string { return "" }},
}

// TestDateFormatRandom formats random timestamps (years 1670-2270, NULLs,
// selections) with every pattern, as a literal and as a column of
// patterns, against Go's time formatting.
func TestDateFormatRandom(t *testing.T) {
	r := rand.New(rand.NewSource(91))
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for iter := 0; iter < 60; iter++ {
		b, vals, _ := etTimeBatch(r, t, mem)
		for _, f := range etDateFormats {
			e := etCall(t, "date_format", ColRef(0, etTs, "ts"), etLit(t, f.java, etString))
			if e.Type().ID() != arrow.STRING {
				t.Fatalf("date_format type %s", e.Type())
			}
			rows, err := etEvalRows(t, mem, e, b)
			if err != nil {
				t.Fatal(err)
			}
			for k, i := range etLiveRows(b) {
				v := vals[i]
				if v.null {
					if !rows[k].null {
						t.Fatalf("date_format(NULL, %q) = %v", f.java, rows[k])
					}
					continue
				}
				want := f.ref(time.UnixMilli(v.i).UTC())
				if rows[k].null || rows[k].s != want {
					t.Fatalf("date_format(%d, %q) = %v, want %q", v.i, f.java, rows[k], want)
				}
			}
		}
		b.Release()
	}
}

func TestDateFormatEdgeCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	reg := etNewTestRegistry()
	s := func(v string) Expr { return etLit(t, v, etString) }
	ts := func(v int64) Expr { return etLit(t, v, etTs) }
	null := etLit(t, nil, arrow.Null)
	at := func(y, mo, d, h, mi, sec, ms int) Expr {
		return ts(time.Date(y, time.Month(mo), d, h, mi, sec, ms*1e6, time.UTC).UnixMilli())
	}
	cases := []struct {
		args []Expr
		want string // the folded literal's String()
	}{
		{[]Expr{at(2026, 3, 1, 8, 30, 15, 250), s("yyyy-MM-dd")}, "'2026-03-01'"},
		{[]Expr{at(2026, 3, 1, 8, 30, 15, 250), s("yyyy-MM-dd HH:mm:ss.SSS")}, "'2026-03-01 08:30:15.250'"},
		{[]Expr{at(2026, 3, 1, 0, 5, 0, 7), s("h:mm a, k'h', S")}, "'12:05 AM, 24h, 0'"},
		{[]Expr{at(2026, 12, 31, 23, 59, 59, 999), s("D EEEE")}, "'365 Thursday'"},
		{[]Expr{at(1969, 12, 31, 23, 59, 59, 999), s("yyyy-MM-dd HH:mm:ss.SSS")}, "'1969-12-31 23:59:59.999'"},
		// Year of era, as DateTimeFormatter: 1 BC is year 0, 2 BC is -1;
		// more digits than yyyy asks for get a '+'.
		{[]Expr{at(0, 6, 1, 0, 0, 0, 0), s("yyyy")}, "'0001'"},
		{[]Expr{at(-1, 6, 1, 0, 0, 0, 0), s("yyyy yy")}, "'0002 02'"},
		{[]Expr{at(12345, 1, 1, 0, 0, 0, 0), s("yyyy|yyyyyy|yy")}, "'+12345|012345|45'"},
		{[]Expr{at(2026, 3, 1, 0, 0, 0, 0), s("")}, "''"},
		{[]Expr{at(2026, 3, 1, 0, 0, 0, 0), s("'['yyyy']' '' -/: ")}, "'[2026] '' -/: '"}, // String() doubles the quote,
		// A VARCHAR is read as CAST(s AS TIMESTAMP(3)); text that does not
		// parse is NULL.
		{[]Expr{s("2026-03-01 08:30:15.250"), s("dd.MM.yy HH:mm")}, "'01.03.26 08:30'"},
		{[]Expr{s(" 2026-03-01T08:30 "), s("HH:mm")}, "'08:30'"},
		{[]Expr{s("2026-03-01"), s("yyyy-MM-dd HH:mm")}, "'2026-03-01 00:00'"},
		{[]Expr{s("yesterday"), s("yyyy")}, "NULL"},
		{[]Expr{s(""), s("yyyy")}, "NULL"},
		{[]Expr{null, s("yyyy")}, "NULL"},
		{[]Expr{at(2026, 3, 1, 0, 0, 0, 0), null}, "NULL"},
	}
	for _, c := range cases {
		e, err := reg.Call("date_format", c.args)
		if err != nil {
			t.Errorf("date_format(%v): %v", c.args, err)
			continue
		}
		if e.String() != c.want {
			t.Errorf("date_format(%v) = %s, want %s", c.args, e, c.want)
		}
	}
	col := ColRef(0, etTs, "ts")
	for _, bad := range []struct {
		args []Expr
		want string
	}{
		{[]Expr{col, s("yyyy-QQ")}, "pattern letter 'Q' is not supported (y M d D E a H h K k m s S)"},
		{[]Expr{col, s("ddd")}, "too many pattern letters 'ddd' (at most 2)"},
		{[]Expr{col, s("aa")}, "too many pattern letters 'aa' (at most 1)"},
		{[]Expr{col, s("yyyy[-MM]")}, "'[' is reserved"},
		{[]Expr{col, s("'yyyy")}, "unterminated quote"},
		{[]Expr{col, s("zzz")}, "pattern letter 'z' is not supported"},
		{[]Expr{ColRef(0, etInt64, "n"), s("yyyy")}, "does not accept (BIGINT, VARCHAR): the first argument is a TIMESTAMP(3) or a VARCHAR (an epoch in milliseconds is TO_TIMESTAMP_LTZ(x, 3))"},
		{[]Expr{col, ColRef(1, etInt32, "i")}, "does not accept (TIMESTAMP(3), INT)"},
	} {
		if _, err := reg.Call("date_format", bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("date_format(%v): %v, want %q", bad.args, err, bad.want)
		}
	}

	// A column of formats: compiled per distinct value; NULL formats give
	// NULL; a bad live format fails, a filtered-out one does not.
	b := etOneBatch(t, mem, map[string][]any{
		"ts": {int64(1772353815250), int64(1772353815250), int64(1772353815250), nil, int64(0)},
		"f":  {"yyyy", "HH:mm", "HH:mm", "yyyy", nil},
	}, map[string]arrow.DataType{"ts": etTs, "f": etString}, "ts", "f")
	defer b.Release()
	e := etCall(t, "date_format", ColRef(0, etTs, "ts"), ColRef(1, etString, "f"))
	rows, err := etEvalRows(t, mem, e, b)
	if err != nil || rows[0].s != "2026" || rows[1].s != "08:30" || rows[2].s != "08:30" || !rows[3].null || !rows[4].null {
		t.Errorf("date_format with a format column: %v %v", rows, err)
	}
	bad := etOneBatch(t, mem, map[string][]any{"ts": {int64(0), int64(0)}, "f": {"yyyy", "yyyy-QQ"}},
		map[string]arrow.DataType{"ts": etTs, "f": etString}, "ts", "f")
	defer bad.Release()
	if _, err := etEvalRows(t, mem, e, bad); err == nil || !strings.Contains(err.Error(), "pattern letter 'Q'") {
		t.Errorf("date_format with a bad live format: %v", err)
	}
	bad.Sel = []int32{0}
	if rows, err := etEvalRows(t, mem, e, bad); err != nil || rows[0].s != "1970" {
		t.Errorf("date_format with the bad format filtered out: %v %v", rows, err)
	}
}

// TestDateFormatMaxLen: no timestamp formats longer than the bound the
// kernel reserves before writing a row.
func TestDateFormatMaxLen(t *testing.T) {
	patterns := []string{"yyyy-MM-dd HH:mm:ss.SSSSSSSSS", "y yy yyy yyyyyyyyyyyyyyyyyyyyyy", "MMMM EEEE MMMMM EEEEE D DD DDD a", "h hh k kk K KK", "'日本' MMM E"}
	for _, p := range etDateFormats {
		patterns = append(patterns, p.java)
	}
	r := rand.New(rand.NewSource(92))
	var cc scCivilCache
	for _, p := range patterns {
		f, err := scCompileDateFormat(p)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2000; k++ {
			ms := r.Int63() >> uint(r.Intn(63))
			if r.Intn(2) == 0 {
				ms = -ms
			}
			if k < 2 {
				ms = []int64{math.MaxInt64, math.MinInt64}[k]
			}
			if out := f.format(nil, ms, &cc); len(out) > f.maxLen {
				t.Fatalf("%q of %d: %d bytes (%q), bound %d", p, ms, len(out), out, f.maxLen)
			}
		}
	}
}

// TestToTimestampKeepsItsLetters: the pattern code DATE_FORMAT extends
// still refuses, for parsing, the letters TO_TIMESTAMP cannot parse.
func TestToTimestampKeepsItsLetters(t *testing.T) {
	_, err := etNewTestRegistry().Call("to_timestamp", []Expr{ColRef(0, etString, "s"), etLit(t, "EEE yyyy", etString)})
	if err == nil || !strings.Contains(err.Error(), "pattern letter 'E' is not supported (y M d H m s S)") {
		t.Errorf("to_timestamp with E: %v", err)
	}
}

func BenchmarkDateFormat(b *testing.B) {
	mem := memory.NewGoAllocator()
	const n = 8192
	vals := make([]any, n)
	for i := range vals {
		vals[i] = int64(1767225600000 + i*10_000)
	}
	t := &testing.T{}
	batch := etOneBatch(t, mem, map[string][]any{"ts": vals}, map[string]arrow.DataType{"ts": etTs}, "ts")
	defer batch.Release()
	for _, f := range []string{"yyyy-MM-dd", "yyyy-MM-dd HH:mm:ss.SSS"} {
		e, err := etNewTestRegistry().Call("date_format", []Expr{ColRef(0, etTs, "ts"), etLit(t, f, etString)})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("format="+f, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := e.Eval(batch, mem)
				if err != nil {
					b.Fatal(err)
				}
				res.Release()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
