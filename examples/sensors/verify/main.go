// Command verify checks the output of the sensor pipeline (pipeline.sql)
// against windows recomputed from the workload DEFINITION (never from the
// generated input file).
//
// Usage:
//
//	verify [-in out] [-window 10000] [-lag 3000] [-closed-only] [-allow-duplicates] [-partial]
//	       [-sensors 8] [-ticks 305 | -n N] [-start 2026-03-01T08:00:00Z]
//	       [-late-sensor 3] [-late-by 2]
//
// -in is a file, or a directory in which every *.jsonl / *.json file is read,
// recursively; files and directories whose name starts with '.' or '_' are
// skipped. Every non-blank line must be one JSON object with the keys
// sensor_id (string), window_start and window_end (epoch ms, or date-time
// text in UTC as ClickHouse prints DateTime) and at least one aggregate:
// readings (an integer; also reading_count, count, cnt, ...), avg_temp,
// min_temp, max_temp (numbers; also avg_temp_c, ...). Each aggregate a row
// carries is checked; other keys are ignored. 64-bit integers may be
// quoted, as ClickHouse's JSONEachRow prints them.
//
// Expected: one row per (sensor, tumbling window [start, start+window) aligned
// to epoch 0) holding at least one reading. ids, window bounds, readings,
// min_temp and max_temp must match exactly; avg_temp within 1e-9 relative.
// Missing windows, extra rows, duplicate (sensor, window) rows, mismatched
// values and unparsable rows are failures. Exit status: 0 PASS, 1 FAIL,
// 2 usage error.
//
// Two flags adapt the check to an unbounded job read back from an
// at-least-once sink (examples/kafka-to-clickhouse):
//
//   - -closed-only expects only the windows the watermark has passed. With
//     no end of input the watermark ends at the workload's largest event
//     time minus -lag, so only windows whose end is at or before that are
//     expected; the later (open) windows must be absent.
//   - -allow-duplicates accepts a window's row more than once when every
//     copy is identical to the first (same readings, and bit-for-bit the
//     same avg_temp, min_temp and max_temp); they are counted and reported.
//     A copy that differs is a failure.
//
// -partial accepts missing windows: it checks the output a job has
// committed so far (after a crash, before its restart) for rows that are
// wrong, unexpected or repeated.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

// avgRelTol is the relative tolerance for avg_temp: the engine sums doubles,
// the expected value is sum_tenths / (10*count) computed exactly once.
const avgRelTol = 1e-9

// maxListed is how many entries of each problem category are printed.
const maxListed = 20

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes verify with args and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("verify", flag.ContinueOnError)
	fset.SetOutput(stderr)
	in := fset.String("in", "out", "output to check: a file, or a directory of *.jsonl/*.json files (recursive)")
	window := fset.Int64("window", 10000, "tumbling window size in ms (windows aligned to epoch 0)")
	lag := fset.Int64("lag", 3000, "watermark lag in ms (decides which windows are closed with -closed-only; else used only to warn when the late sensor exceeds it)")
	closedOnly := fset.Bool("closed-only", false, "expect only the windows closed by the final watermark, largest event time minus -lag (no end of input); open windows must be absent")
	allowDups := fset.Bool("allow-duplicates", false, "accept identical copies of a window's row (at-least-once sinks); copies that differ fail")
	partial := fset.Bool("partial", false, "accept missing windows (output committed so far, e.g. after a crash); every row read must still be expected, exact and once")
	config := workload.Flags(fset)
	if err := fset.Parse(args); err != nil {
		return 2
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "verify: unexpected arguments: %q\n", fset.Args())
		return 2
	}
	c, err := config()
	if err != nil {
		fmt.Fprintf(stderr, "verify: %v\n", err)
		return 2
	}
	if *window <= 0 {
		fmt.Fprintf(stderr, "verify: window must be > 0, got %d\n", *window)
		return 2
	}
	exp, err := expect(c, *window)
	if err != nil {
		fmt.Fprintf(stderr, "verify: %v\n", err)
		return 2
	}
	if *closedOnly && c.Ticks > 0 {
		exp.closeAt(c.TS(c.Ticks-1) - *lag)
	}

	late := "none"
	if c.LateSensor != 0 {
		late = fmt.Sprintf("%s by %d tick(s)", c.SensorID(c.LateSensor), c.LateBy)
	}
	var mode string
	if exp.closedOnly {
		mode += fmt.Sprintf("; closed windows only (final watermark %d = largest event time - lag)", exp.watermark)
	}
	if *allowDups {
		mode += "; identical duplicates allowed"
	}
	if *partial {
		mode += "; missing windows allowed"
	}
	fmt.Fprintf(stderr, "verify: workload %d sensors x %d ticks from %s, late sensor %s; window %d ms, lag %d ms%s; checking %s\n",
		c.Sensors, c.Ticks, time.UnixMilli(c.StartMs).UTC().Format(time.RFC3339Nano), late, *window, *lag, mode, *in)
	// The late sensor's reading of tick t arrives right after the on-time
	// readings of tick t+late-by, i.e. late-by seconds behind the newest event
	// time seen so far. Beyond the watermark lag an engine may drop it.
	if c.LateSensor != 0 && c.Ticks > 0 && int64(min(c.LateBy, c.Ticks-1))*1000 > *lag {
		fmt.Fprintf(stderr, "verify: warning: %s arrives up to %d ms behind the newest event time, more than the watermark lag (%d ms); "+
			"the expected windows count every reading, so an engine that drops late data will FAIL\n",
			c.SensorID(c.LateSensor), int64(min(c.LateBy, c.Ticks-1))*1000, *lag)
	}

	ch := newChecker(exp)
	ch.allowDups = *allowDups
	ch.partial = *partial
	if err := ch.readPath(*in); err != nil {
		fmt.Fprintf(stdout, "FAIL: cannot read output %s: %v\n", *in, err)
		return 1
	}
	if ch.report(stdout, *in) {
		return 0
	}
	return 1
}

// window is the expected aggregate of one (sensor, window); all values are in
// tenths of a degree, so they are exact.
type window struct {
	count, sum, min, max int64
	open                 bool // not passed by the final watermark (-closed-only)

	seen      bool
	seenWhere location
	first     row // the row seen first, which duplicates must equal
}

func (w *window) avg() float64   { return float64(w.sum) / float64(10*w.count) }
func (w *window) minT() float64  { return float64(w.min) / 10 }
func (w *window) maxT() float64  { return float64(w.max) / 10 }
func (w *window) String() string { return describe(w.count, w.avg(), w.minT(), w.maxT()) }

func describe(count int64, avg, minT, maxT float64) string {
	return fmt.Sprintf("readings=%d avg_temp=%s min_temp=%s max_temp=%s", count, ff(avg), ff(minT), ff(maxT))
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// expected holds, per sensor, the windows from firstWin (window index, i.e.
// floor(ts/size)) on.
type expected struct {
	c        workload.Config
	size     int64
	firstWin int64
	ids      map[string]int // sensor id -> sensor number
	win      [][]window     // [sensor][window index - firstWin]; sensor 0 unused
	rows     int            // expected rows: closed windows with at least one reading
	perSens  int            // expected rows per sensor (the same for all)

	closedOnly bool
	watermark  int64 // with closedOnly: windows ending after it are open
	openRows   int   // non-empty open windows, all sensors
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// expect recomputes every window from the workload definition.
func expect(c workload.Config, size int64) (*expected, error) {
	e := &expected{c: c, size: size, ids: make(map[string]int, c.Sensors), win: make([][]window, c.Sensors+1)}
	for s := 1; s <= c.Sensors; s++ {
		e.ids[c.SensorID(s)] = s
	}
	if c.Ticks == 0 {
		return e, nil
	}
	e.firstWin = floorDiv(c.TS(0), size)
	slots := floorDiv(c.TS(c.Ticks-1), size) - e.firstWin + 1
	if slots > 4*int64(c.Ticks)+1024 {
		return nil, fmt.Errorf("window %d ms is too small for this workload (%d windows per sensor)", size, slots)
	}
	for s := 1; s <= c.Sensors; s++ {
		ws := make([]window, slots)
		for t := 0; t < c.Ticks; t++ {
			w := &ws[floorDiv(c.TS(t), size)-e.firstWin]
			v := workload.Tenths(s, t)
			if w.count == 0 || v < w.min {
				w.min = v
			}
			if w.count == 0 || v > w.max {
				w.max = v
			}
			w.count++
			w.sum += v
		}
		e.win[s] = ws
	}
	for _, w := range e.win[1] {
		if w.count > 0 {
			e.perSens++
		}
	}
	e.rows = e.perSens * c.Sensors
	return e, nil
}

// closeAt keeps only the windows a final watermark wm has closed (end <=
// wm, as a window fires when the watermark reaches its end) as expected
// rows; the other non-empty windows are open and must not appear.
func (e *expected) closeAt(wm int64) {
	e.closedOnly, e.watermark = true, wm
	e.perSens, e.openRows = 0, 0
	for s := 1; s <= e.c.Sensors; s++ {
		for i := range e.win[s] {
			w := &e.win[s][i]
			if w.count == 0 {
				continue
			}
			if (e.firstWin+int64(i)+1)*e.size > wm {
				w.open = true
				e.openRows++
			} else if s == 1 {
				e.perSens++
			}
		}
	}
	e.rows = e.perSens * e.c.Sensors
}

// lookup returns the expected window for a row key, or nil if none is
// expected (unknown sensor, misaligned or empty window, wrong end).
func (e *expected) lookup(id string, start, end int64) *window {
	s, ok := e.ids[id]
	if !ok || e.c.Ticks == 0 || end != start+e.size || floorDiv(start, e.size)*e.size != start {
		return nil
	}
	i := start/e.size - e.firstWin
	if i < 0 || i >= int64(len(e.win[s])) || e.win[s][i].count == 0 {
		return nil
	}
	return &e.win[s][i]
}

type location struct {
	file int
	line int
}

// row is one parsed output row.
type row struct {
	id                string
	start, end, count int64
	avg, minT, maxT   float64
	has               int // hasCount | hasAvg | hasMin | hasMax
}

// String prints the aggregates the row carries.
func (r *row) String() string {
	var parts []string
	if r.has&hasCount != 0 {
		parts = append(parts, fmt.Sprintf("readings=%d", r.count))
	}
	if r.has&hasAvg != 0 {
		parts = append(parts, "avg_temp="+ff(r.avg))
	}
	if r.has&hasMin != 0 {
		parts = append(parts, "min_temp="+ff(r.minT))
	}
	if r.has&hasMax != 0 {
		parts = append(parts, "max_temp="+ff(r.maxT))
	}
	return strings.Join(parts, " ")
}

func (r *row) keyString() string {
	return fmt.Sprintf("%s [%d, %d)", r.id, r.start, r.end)
}

type checker struct {
	exp       *expected
	allowDups bool
	partial   bool // missing windows are no problem
	files     []string
	rows      int

	missing, extra, dups, mismatched, invalid, open   []string
	nMissing, nExtra, nDups, nMismatched, nInv, nOpen int
	nIdentical                                        int // accepted duplicates (allowDups)
}

func newChecker(e *expected) *checker { return &checker{exp: e} }

func (ch *checker) where(l location) string {
	return fmt.Sprintf("%s:%d", ch.files[l.file], l.line)
}

// add counts one problem and keeps its message if fewer than maxListed are
// kept; msg is only formatted when kept.
func add(list *[]string, n *int, msg func() string) {
	*n++
	if len(*list) < maxListed {
		*list = append(*list, msg())
	}
}

// readPath reads a file, or every eligible file under a directory.
func (ch *checker) readPath(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return ch.readFile(path)
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != path && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if ext := filepath.Ext(name); ext != ".jsonl" && ext != ".json" {
			return nil
		}
		return ch.readFile(p)
	})
}

func (ch *checker) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi := len(ch.files)
	ch.files = append(ch.files, path)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		ch.rows++
		ch.check(b, location{fi, line})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	return nil
}

// Column names the rows may use for each value: the reference pipeline's
// first, then the names tutorials and hand-written sinks use. A row must
// carry sensor_id, window_start, window_end and at least one of the four
// aggregates; each aggregate present is checked, one absent is not.
var (
	countNames = []string{"readings", "reading_count", "readings_count", "num_readings", "count", "cnt", "n"}
	avgNames   = []string{"avg_temp", "avg_temp_c", "avg_temperature", "temp_avg", "mean_temp"}
	minNames   = []string{"min_temp", "min_temp_c", "min_temperature", "temp_min"}
	maxNames   = []string{"max_temp", "max_temp_c", "max_temperature", "temp_max"}
)

// Which aggregates a row carries.
const (
	hasCount = 1 << iota
	hasAvg
	hasMin
	hasMax
)

// pick returns the first of names the object has, and its value.
func pick(obj map[string]json.RawMessage, names []string) (string, json.RawMessage) {
	for _, n := range names {
		if v, ok := obj[n]; ok {
			return n, v
		}
	}
	return "", nil
}

var errMissing = errors.New("missing or null")

// parseTime reads a window bound: epoch milliseconds as a JSON integer (or
// an integer in a string, as ClickHouse quotes 64-bit integers), or a
// date-time string in UTC as ClickHouse prints DateTime and DateTime64
// ("2026-03-01 08:00:10", "2026-03-01 08:00:10.000") or RFC 3339.
func parseTime(raw json.RawMessage) (int64, error) {
	if v, err := parseInt(raw); err == nil || errors.Is(err, errMissing) {
		return v, err
	}
	s, err := parseString(raw)
	if err != nil {
		return 0, fmt.Errorf("want epoch milliseconds or a date-time, got %s", raw)
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("want epoch milliseconds or a date-time, got %s", raw)
}

func parseString(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", errMissing
	}
	if raw[0] != '"' {
		return "", fmt.Errorf("want a JSON string, got %s", raw)
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func parseInt(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errMissing
	}
	text := string(raw)
	if len(text) > 2 && text[0] == '"' && text[len(text)-1] == '"' {
		text = text[1 : len(text)-1] // ClickHouse quotes 64-bit integers
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a JSON integer, got %s", raw)
	}
	return v, nil
}

func parseFloat(raw json.RawMessage) (float64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errMissing
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, fmt.Errorf("want a JSON number, got %s", raw)
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("want a JSON number, got %s", raw)
	}
	return v, nil
}

func parseRow(b []byte) (row, error) {
	var r row
	if b[0] != '{' {
		return r, errors.New("not a JSON object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return r, err
	}
	var err error
	field := func(name string, e error) {
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", name, e)
		}
	}
	var e error
	r.id, e = parseString(obj["sensor_id"])
	field("sensor_id", e)
	r.start, e = parseTime(obj["window_start"])
	field("window_start", e)
	r.end, e = parseTime(obj["window_end"])
	field("window_end", e)
	if name, v := pick(obj, countNames); name != "" {
		r.has |= hasCount
		r.count, e = parseInt(v)
		field(name, e)
	}
	for _, a := range []struct {
		names []string
		bit   int
		dst   *float64
	}{{avgNames, hasAvg, &r.avg}, {minNames, hasMin, &r.minT}, {maxNames, hasMax, &r.maxT}} {
		if name, v := pick(obj, a.names); name != "" {
			r.has |= a.bit
			*a.dst, e = parseFloat(v)
			field(name, e)
		}
	}
	if r.has == 0 && err == nil {
		err = fmt.Errorf("no aggregate column (one of %s; %s; %s; %s)", strings.Join(countNames, ", "),
			strings.Join(avgNames, ", "), strings.Join(minNames, ", "), strings.Join(maxNames, ", "))
	}
	return r, err
}

func avgOK(got, exp float64) bool {
	return math.Abs(got-exp) <= avgRelTol*math.Abs(exp) || (exp == 0 && math.Abs(got) <= 1e-12)
}

func (ch *checker) check(b []byte, at location) {
	r, err := parseRow(b)
	if err != nil {
		add(&ch.invalid, &ch.nInv, func() string {
			return fmt.Sprintf("%s: %v: %s", ch.where(at), err, truncate(b, 200))
		})
		return
	}
	key := r.keyString()
	w := ch.exp.lookup(r.id, r.start, r.end)
	if w == nil {
		add(&ch.extra, &ch.nExtra, func() string {
			return fmt.Sprintf("%s at %s: no such window expected; got %s",
				key, ch.where(at), r.String())
		})
		return
	}
	if w.open {
		add(&ch.open, &ch.nOpen, func() string {
			return fmt.Sprintf("%s at %s: the watermark never passes its end (final watermark %d), so it must be absent; got %s",
				key, ch.where(at), ch.exp.watermark, r.String())
		})
		return
	}
	if w.seen {
		if ch.allowDups && r == w.first {
			ch.nIdentical++
			return
		}
		add(&ch.dups, &ch.nDups, func() string {
			if ch.allowDups {
				f := w.first
				return fmt.Sprintf("%s at %s: differs from the copy at %s; got %s, first %s",
					key, ch.where(at), ch.where(w.seenWhere), r.String(),
					f.String())
			}
			return fmt.Sprintf("%s at %s: already emitted at %s (exactly-once violated); got %s",
				key, ch.where(at), ch.where(w.seenWhere), r.String())
		})
		return
	}
	w.seen, w.seenWhere, w.first = true, at, r
	var diffs []string
	if r.has&hasCount != 0 && r.count != w.count {
		diffs = append(diffs, fmt.Sprintf("readings expected %d got %d", w.count, r.count))
	}
	if r.has&hasAvg != 0 && !avgOK(r.avg, w.avg()) {
		diffs = append(diffs, fmt.Sprintf("avg_temp expected %s got %s (rel err %.3g > %g)",
			ff(w.avg()), ff(r.avg), math.Abs(r.avg-w.avg())/math.Abs(w.avg()), avgRelTol))
	}
	if r.has&hasMin != 0 && r.minT != w.minT() {
		diffs = append(diffs, fmt.Sprintf("min_temp expected %s got %s", ff(w.minT()), ff(r.minT)))
	}
	if r.has&hasMax != 0 && r.maxT != w.maxT() {
		diffs = append(diffs, fmt.Sprintf("max_temp expected %s got %s", ff(w.maxT()), ff(r.maxT)))
	}
	if len(diffs) > 0 {
		add(&ch.mismatched, &ch.nMismatched, func() string {
			return fmt.Sprintf("%s at %s: %s", key, ch.where(at), strings.Join(diffs, "; "))
		})
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// report prints PASS or FAIL (first line of stdout) and the problem lists;
// it returns true on PASS.
func (ch *checker) report(w io.Writer, in string) bool {
	e := ch.exp
	for s := 1; s <= e.c.Sensors; s++ {
		for i := range e.win[s] {
			x := &e.win[s][i]
			if x.count == 0 || x.seen || x.open || ch.partial {
				continue
			}
			start := (e.firstWin + int64(i)) * e.size
			add(&ch.missing, &ch.nMissing, func() string {
				return fmt.Sprintf("%s [%d, %d): expected %s",
					e.c.SensorID(s), start, start+e.size, x)
			})
		}
	}
	shape := fmt.Sprintf("%d sensors x %d windows", e.c.Sensors, e.perSens)
	openCount := ""
	if e.closedOnly {
		shape = fmt.Sprintf("%d sensors x %d closed windows; %d open windows absent", e.c.Sensors, e.perSens, e.openRows)
		openCount = fmt.Sprintf(", %d open", ch.nOpen)
	}
	if ch.allowDups {
		shape += fmt.Sprintf("; %d identical duplicate row(s)", ch.nIdentical)
	}
	if ch.partial {
		shape += fmt.Sprintf("; partial: %d row(s) read", ch.rows)
	}
	problems := ch.nMissing + ch.nExtra + ch.nDups + ch.nMismatched + ch.nInv + ch.nOpen
	if problems == 0 {
		fmt.Fprintf(w, "PASS: %d windows exact (%s)\n", e.rows, shape)
		return true
	}
	dupKind := "duplicate"
	if ch.allowDups {
		dupKind = "differing duplicate"
	}
	fmt.Fprintf(w, "FAIL: %d problem(s): %d missing, %d extra, %d %s, %d mismatched, %d invalid%s; expected %d windows (%s), read %d row(s) from %d file(s) under %s\n",
		problems, ch.nMissing, ch.nExtra, ch.nDups, dupKind, ch.nMismatched, ch.nInv, openCount, e.rows, shape, ch.rows, len(ch.files), in)
	if len(ch.files) == 0 {
		fmt.Fprintf(w, "  no *.jsonl / *.json files found under %s\n", in)
	}
	section := func(title string, n int, list []string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(w, "%s (%d):\n", title, n)
		for _, m := range list {
			fmt.Fprintf(w, "  %s\n", m)
		}
		if n > len(list) {
			fmt.Fprintf(w, "  ... and %d more\n", n-len(list))
		}
	}
	section("missing windows", ch.nMissing, ch.missing)
	section("open windows present", ch.nOpen, ch.open)
	section(dupKind+" rows", ch.nDups, ch.dups)
	section("extra rows", ch.nExtra, ch.extra)
	section("mismatched rows", ch.nMismatched, ch.mismatched)
	section("invalid rows", ch.nInv, ch.invalid)
	return false
}
