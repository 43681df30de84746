package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/clink-dev/clink/bench/workload"
)

// outRow is one row as the pipeline writes it.
type outRow struct {
	SensorID    string  `json:"sensor_id"`
	WindowStart int64   `json:"window_start"`
	WindowEnd   int64   `json:"window_end"`
	Readings    int64   `json:"readings"`
	AvgTemp     float64 `json:"avg_temp"`
	MinTemp     float64 `json:"min_temp"`
	MaxTemp     float64 `json:"max_temp"`
}

// generate returns the generator's JSON lines for the workload given by the
// gen/verify workload flags.
func generate(t *testing.T, args ...string) []byte {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	config := workload.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c, err := config()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := workload.Write(&buf, c); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// naiveWindows is an independent, deliberately simple stand-in for the
// engine: it parses the generated JSON lines and aggregates them per sensor
// and tumbling window, summing doubles in arrival order, then returns the
// rows in window-end order (as a streaming engine would fire them).
func naiveWindows(t *testing.T, input []byte, size int64) []outRow {
	t.Helper()
	type acc struct {
		row outRow
		sum float64
	}
	type key struct {
		id    string
		start int64
	}
	m := map[key]*acc{}
	sc := bufio.NewScanner(bytes.NewReader(input))
	for sc.Scan() {
		var rec struct {
			SensorID    string  `json:"sensor_id"`
			TS          int64   `json:"ts"`
			Temperature float64 `json:"temp_c"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("bad generated line %q: %v", sc.Text(), err)
		}
		start := rec.TS - ((rec.TS%size)+size)%size
		k := key{rec.SensorID, start}
		a := m[k]
		if a == nil {
			a = &acc{row: outRow{SensorID: rec.SensorID, WindowStart: start, WindowEnd: start + size,
				MinTemp: rec.Temperature, MaxTemp: rec.Temperature}}
			m[k] = a
		}
		a.row.Readings++
		a.sum += rec.Temperature
		if rec.Temperature < a.row.MinTemp {
			a.row.MinTemp = rec.Temperature
		}
		if rec.Temperature > a.row.MaxTemp {
			a.row.MaxTemp = rec.Temperature
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	rows := make([]outRow, 0, len(m))
	for _, a := range m {
		a.row.AvgTemp = a.sum / float64(a.row.Readings)
		rows = append(rows, a.row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].WindowEnd != rows[j].WindowEnd {
			return rows[i].WindowEnd < rows[j].WindowEnd
		}
		return rows[i].SensorID < rows[j].SensorID
	})
	return rows
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// writeOut writes rows as JSON lines into a fresh output directory, split
// over two files (one nested), next to files verify must ignore.
func writeOut(t *testing.T, rows []outRow) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	half := len(rows) / 2
	writeLines(t, filepath.Join(dir, "part-0.jsonl"), rows[:half])
	writeLines(t, filepath.Join(dir, "sub", "part-1.json"), rows[half:])
	// Ignored: names starting with '.' or '_', other extensions.
	for _, p := range []string{"_SUCCESS", ".part-2.jsonl.inprogress", ".hidden.jsonl", "_tmp/part-3.jsonl", ".staging/part-4.jsonl", "notes.txt"} {
		mustWrite(t, filepath.Join(dir, p), []byte("garbage that is not JSON\n"))
	}
	return dir
}

func writeLines(t *testing.T, path string, rows []outRow) {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	mustWrite(t, path, buf.Bytes())
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func runVerify(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

const passDefault = "PASS: 248 windows exact (8 sensors x 31 windows)\n"

func defaultRows(t *testing.T) []outRow {
	return naiveWindows(t, generate(t), 10000)
}

func TestPassDefault(t *testing.T) {
	rows := defaultRows(t)
	if len(rows) != 248 {
		t.Fatalf("naive engine produced %d rows, want 248", len(rows))
	}
	dir := writeOut(t, rows)
	code, out, errOut := runVerify(t, "-in", dir)
	if code != 0 || out != passDefault {
		t.Fatalf("code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("unexpected warning for the default workload: %s", errOut)
	}
}

func TestPassSingleFileAnyOrder(t *testing.T) {
	rows := defaultRows(t)
	// Reverse order, extra keys and blank lines are fine.
	var buf bytes.Buffer
	for i := len(rows) - 1; i >= 0; i-- {
		b, _ := json.Marshal(rows[i])
		buf.WriteString(`{"op":"+I",` + string(b[1:]) + "\n\n")
	}
	path := filepath.Join(t.TempDir(), "result.txt")
	mustWrite(t, path, buf.Bytes())
	code, out, errOut := runVerify(t, "-in", path)
	if code != 0 || out != passDefault {
		t.Fatalf("code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestPassOtherWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		window int64
		want   string
	}{
		{"unaligned start, no late sensor", []string{"-sensors", "3", "-ticks", "95", "-start", "2026-03-01T08:00:07.5Z", "-late-sensor", "0"}, 10000,
			"PASS: 33 windows exact (3 sensors x 11 windows)\n"},
		{"120 sensors, last one late", []string{"-sensors", "120", "-ticks", "25", "-late-sensor", "120", "-late-by", "1"}, 5000,
			"PASS: 600 windows exact (120 sensors x 5 windows)\n"},
		{"-n sizing", []string{"-n", "1001"}, 10000,
			"PASS: 104 windows exact (8 sensors x 13 windows)\n"},
		{"before 1970", []string{"-sensors", "2", "-ticks", "30", "-start", "1969-12-31T23:59:45Z", "-late-sensor", "1"}, 10000,
			"PASS: 8 windows exact (2 sensors x 4 windows)\n"},
		{"sub-second window", []string{"-sensors", "2", "-ticks", "4", "-late-sensor", "2", "-late-by", "3"}, 300,
			"PASS: 8 windows exact (2 sensors x 4 windows)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeOut(t, naiveWindows(t, generate(t, tc.args...), tc.window))
			args := append([]string{"-in", dir, "-window", itoa(tc.window)}, tc.args...)
			code, out, errOut := runVerify(t, args...)
			if code != 0 || out != tc.want {
				t.Fatalf("code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
}

func TestAvgTolerance(t *testing.T) {
	rows := defaultRows(t)
	rows[5].AvgTemp *= 1 + 1e-10 // within 1e-9 relative
	code, out, _ := runVerify(t, "-in", writeOut(t, rows))
	if code != 0 || out != passDefault {
		t.Fatalf("code %d, stdout:\n%s", code, out)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perturb func([]outRow) []outRow
		want    []string
	}{
		{"drop a row", func(r []outRow) []outRow { return append(r[:10:10], r[11:]...) },
			[]string{"FAIL: 1 problem(s): 1 missing, 0 extra, 0 duplicate, 0 mismatched, 0 invalid",
				"missing windows (1):", "sensor-03 [1772352010000, 1772352020000): expected readings=10 avg_temp="}},
		{"duplicate a row", func(r []outRow) []outRow { return append(r, r[7]) },
			[]string{"FAIL: 1 problem(s): 0 missing, 0 extra, 1 duplicate", "duplicate rows (1):",
				"sensor-08 [1772352000000, 1772352010000) at ", "already emitted at ", "part-0.jsonl:8", "exactly-once violated"}},
		{"change an avg by 1e-6", func(r []outRow) []outRow { r[3].AvgTemp += 1e-6; return r },
			[]string{"1 mismatched", "mismatched rows (1):", "sensor-04 [1772352000000, 1772352010000) at ", "avg_temp expected "}},
		{"change a count", func(r []outRow) []outRow { r[9].Readings++; return r },
			[]string{"1 mismatched", "sensor-02 [1772352010000, 1772352020000)", "readings expected 10 got 11"}},
		{"change min and max", func(r []outRow) []outRow { r[0].MinTemp -= 0.1; r[0].MaxTemp += 1e-12; return r },
			[]string{"1 mismatched", "min_temp expected ", "max_temp expected "}},
		{"unknown sensor", func(r []outRow) []outRow {
			x := r[0]
			x.SensorID = "sensor-09"
			return append(r, x)
		}, []string{"0 missing, 1 extra", "extra rows (1):", "sensor-09 [1772352000000, 1772352010000) at ", "no such window expected"}},
		{"window shifted", func(r []outRow) []outRow { r[0].WindowStart += 1000; r[0].WindowEnd += 1000; return r },
			[]string{"1 missing, 1 extra", "sensor-01 [1772352001000, 1772352011000)"}},
		{"wrong window end", func(r []outRow) []outRow { r[0].WindowEnd--; return r },
			[]string{"1 missing, 1 extra", "sensor-01 [1772352000000, 1772352009999)"}},
		{"window after the last tick", func(r []outRow) []outRow {
			x := r[len(r)-1]
			x.WindowStart += 10000
			x.WindowEnd += 10000
			return append(r, x)
		}, []string{"1 extra"}},
		{"no output", func(r []outRow) []outRow { return nil },
			[]string{"FAIL: 248 problem(s): 248 missing", "no *.jsonl / *.json files found", "... and 228 more"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.perturb(defaultRows(t))
			dir := writeOut(t, rows)
			if len(rows) == 0 {
				dir = t.TempDir()
			}
			code, out, _ := runVerify(t, "-in", dir)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if !strings.HasPrefix(out, "FAIL: ") {
				t.Errorf("stdout does not start with FAIL:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestInvalidRows(t *testing.T) {
	rows := defaultRows(t)
	dir := writeOut(t, rows)
	bad := strings.Join([]string{
		`{"sensor_id":"sensor-01"}`,
		`not json`,
		`{"sensor_id":"sensor-01","window_start":"yesterday","window_end":1772352010000,"readings":10,"avg_temp":1,"min_temp":1,"max_temp":1}`,
		`{"sensor_id":"sensor-01","window_start":1772352000000,"window_end":1772352010000,"readings":10.0,"avg_temp":1,"min_temp":1,"max_temp":1}`,
		`{"sensor_id":null,"window_start":1772352000000,"window_end":1772352010000,"readings":10,"avg_temp":1,"min_temp":1,"max_temp":1}`,
		`[1,2]`,
	}, "\n")
	mustWrite(t, filepath.Join(dir, "bad.jsonl"), []byte(bad+"\n"))
	code, out, _ := runVerify(t, "-in", dir)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, w := range []string{
		"0 missing, 0 extra, 0 duplicate, 0 mismatched, 6 invalid",
		"bad.jsonl:1: window_start: missing or null",
		"bad.jsonl:2: ",
		`bad.jsonl:3: window_start: want epoch milliseconds or a date-time, got "yesterday"`,
		"bad.jsonl:4: readings: want a JSON integer, got 10.0",
		"bad.jsonl:5: sensor_id: missing or null",
		"bad.jsonl:6: not a JSON object",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
}

func TestMissingInput(t *testing.T) {
	code, out, _ := runVerify(t, "-in", filepath.Join(t.TempDir(), "nope"))
	if code != 1 || !strings.HasPrefix(out, "FAIL: cannot read output ") {
		t.Fatalf("code %d, stdout:\n%s", code, out)
	}
}

func TestLateWarning(t *testing.T) {
	args := []string{"-late-by", "4"}
	dir := writeOut(t, naiveWindows(t, generate(t, args...), 10000))
	code, out, errOut := runVerify(t, append([]string{"-in", dir}, args...)...)
	if code != 0 || out != passDefault {
		t.Fatalf("code %d, stdout:\n%s", code, out)
	}
	if !strings.Contains(errOut, "warning: sensor-03 arrives up to 4000 ms behind the newest event time, more than the watermark lag (3000 ms)") {
		t.Errorf("no lateness warning on stderr:\n%s", errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-window", "0"},
		{"-late-sensor", "9"},
		{"-n", "100", "-ticks", "5"},
		{"-start", "yesterday"},
		{"extra-arg"},
	} {
		if code, _, _ := runVerify(t, args...); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}

// closed keeps the rows whose window the final watermark of the default
// workload (last tick minus lag) has passed, as an unbounded job emits them.
func closed(rows []outRow, lag int64) []outRow {
	wm := int64(1772352000000) + 304000 - lag
	var out []outRow
	for _, r := range rows {
		if r.WindowEnd <= wm {
			out = append(out, r)
		}
	}
	return out
}

func TestClosedOnly(t *testing.T) {
	rows := closed(defaultRows(t), 3000)
	if len(rows) != 240 {
		t.Fatalf("%d closed rows, want 240", len(rows))
	}
	code, out, errOut := runVerify(t, "-in", writeOut(t, rows), "-closed-only")
	if want := "PASS: 240 windows exact (8 sensors x 30 closed windows; 8 open windows absent)\n"; code != 0 || out != want {
		t.Fatalf("code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "closed windows only (final watermark 1772352301000 = largest event time - lag)") {
		t.Errorf("stderr does not name the final watermark:\n%s", errOut)
	}

	// A lag of 5 s leaves [1772352290000, 1772352300000) open too.
	code, out, _ = runVerify(t, "-in", writeOut(t, closed(defaultRows(t), 5000)), "-closed-only", "-lag", "5000")
	if want := "PASS: 232 windows exact (8 sensors x 29 closed windows; 16 open windows absent)\n"; code != 0 || out != want {
		t.Fatalf("-lag 5000: code %d, stdout:\n%s", code, out)
	}

	// Every window present: the open ones are failures.
	code, out, _ = runVerify(t, "-in", writeOut(t, defaultRows(t)), "-closed-only")
	for _, w := range []string{
		"FAIL: 8 problem(s): 0 missing, 0 extra, 0 duplicate, 0 mismatched, 0 invalid, 8 open; expected 240 windows",
		"open windows present (8):",
		"sensor-03 [1772352300000, 1772352310000) at ",
		"the watermark never passes its end (final watermark 1772352301000), so it must be absent; got readings=5 ",
	} {
		if code != 1 || !strings.Contains(out, w) {
			t.Errorf("all windows: code %d, stdout lacks %q:\n%s", code, w, out)
		}
	}

	// A closed window missing is still a failure.
	code, out, _ = runVerify(t, "-in", writeOut(t, rows[1:]), "-closed-only")
	if code != 1 || !strings.Contains(out, "FAIL: 1 problem(s): 1 missing, 0 extra, 0 duplicate, 0 mismatched, 0 invalid, 0 open") {
		t.Errorf("a closed window missing: code %d, stdout:\n%s", code, out)
	}
}

func TestAllowDuplicates(t *testing.T) {
	rows := closed(defaultRows(t), 3000)
	dup := append(append([]outRow{}, rows...), rows[7], rows[200], rows[7])
	code, out, errOut := runVerify(t, "-in", writeOut(t, dup), "-closed-only", "-allow-duplicates")
	if want := "PASS: 240 windows exact (8 sensors x 30 closed windows; 8 open windows absent; 3 identical duplicate row(s))\n"; code != 0 || out != want {
		t.Fatalf("code %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = runVerify(t, "-in", writeOut(t, defaultRows(t)), "-allow-duplicates")
	if want := "PASS: 248 windows exact (8 sensors x 31 windows; 0 identical duplicate row(s))\n"; code != 0 || out != want {
		t.Fatalf("no duplicates: code %d, stdout:\n%s", code, out)
	}

	// A copy that differs fails, even within the avg tolerance.
	x := rows[7]
	x.AvgTemp *= 1 + 1e-12
	code, out, _ = runVerify(t, "-in", writeOut(t, append(append([]outRow{}, rows...), rows[7], x)), "-closed-only", "-allow-duplicates")
	for _, w := range []string{
		"FAIL: 1 problem(s): 0 missing, 0 extra, 1 differing duplicate, 0 mismatched, 0 invalid, 0 open",
		"differing duplicate rows (1):",
		"sensor-08 [1772352000000, 1772352010000) at ",
		"differs from the copy at ",
	} {
		if code != 1 || !strings.Contains(out, w) {
			t.Errorf("differing copy: code %d, stdout lacks %q:\n%s", code, w, out)
		}
	}

	// An open window is a failure however many identical copies it has.
	all := defaultRows(t)
	code, out, _ = runVerify(t, "-in", writeOut(t, append(rows, all[len(all)-1], all[len(all)-1])), "-closed-only", "-allow-duplicates")
	if code != 1 || !strings.Contains(out, ", 2 open;") {
		t.Errorf("open window twice: code %d, stdout:\n%s", code, out)
	}
}

// TestColumnAliases: rows as a ClickHouse table of another shape prints
// them (JSONEachRow: DateTime as text, UInt64 quoted, tutorial column
// names, no min/max) verify as the reference rows do.
func TestColumnAliases(t *testing.T) {
	var buf bytes.Buffer
	rows := defaultRows(t)
	for i, r := range rows {
		start := time.UnixMilli(r.WindowStart).UTC()
		count := fmt.Sprint(r.Readings)
		if i == 3 {
			count = fmt.Sprint(r.Readings + 1) // a wrong value under an alias
		}
		out, _ := json.Marshal(map[string]any{
			"sensor_id":     r.SensorID,
			"window_start":  start.Format("2006-01-02 15:04:05"),
			"window_end":    time.UnixMilli(r.WindowEnd).UTC().Format("2006-01-02 15:04:05.000"),
			"reading_count": count,
			"avg_temp_c":    r.AvgTemp,
		})
		buf.Write(out)
		buf.WriteByte('\n')
	}
	file := filepath.Join(t.TempDir(), "stats.jsonl")
	mustWrite(t, file, buf.Bytes())
	code, out, _ := runVerify(t, "-in", file)
	if code != 1 || !strings.Contains(out, "0 missing, 0 extra, 0 duplicate, 1 mismatched, 0 invalid") ||
		!strings.Contains(out, "readings expected "+fmt.Sprint(rows[3].Readings)) {
		t.Fatalf("exit %d, want exactly the one wrong count:\n%s", code, out)
	}
}
