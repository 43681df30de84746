package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goldenSHA256 pins the bytes of the default workload (8 sensors, 305 ticks,
// sensor-03 late by 2). If the definition changes on purpose, update it here
// and in examples/sensors/README.md.
const goldenSHA256 = "389784834690d944285e44868666cc8e16e2f8101dc0ad98613a1c5c41f3ff50"

func gen(t *testing.T, args ...string) []byte {
	t.Helper()
	var o, e bytes.Buffer
	if code := run(args, &o, &e); code != 0 {
		t.Fatalf("gen %q: exit %d: %s", args, code, e.String())
	}
	return o.Bytes()
}

type rec struct {
	SensorID    string  `json:"sensor_id"`
	TS          int64   `json:"ts"`
	Temperature float64 `json:"temp_c"`
}

func parse(t *testing.T, b []byte) []rec {
	t.Helper()
	var rs []rec
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var r rec
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		rs = append(rs, r)
	}
	return rs
}

const start = int64(1772352000000) // 2026-03-01T08:00:00Z

func TestDeterministicAndGolden(t *testing.T) {
	a, b := gen(t), gen(t)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs produced different bytes")
	}
	out := filepath.Join(t.TempDir(), "data", "readings.jsonl")
	gen(t, "-out", out)
	c, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, c) {
		t.Fatal("-out file differs from stdout")
	}
	sum := sha256.Sum256(a)
	if got := hex.EncodeToString(sum[:]); got != goldenSHA256 {
		t.Errorf("sha256 of the default workload = %s, want %s (definition changed?)", got, goldenSHA256)
	}
	lines := strings.Split(string(a), "\n")
	if len(lines) != 2441 || lines[2440] != "" {
		t.Fatalf("got %d lines, want 2440 + final newline", len(lines)-1)
	}
	// Hand-computed: sensor 1, tick 0: 150 + 7919 mod 211 = 150 + 112 = 262.
	// sensor 2, tick 0: 150 + 15838 mod 211 = 150 + 13 = 163.
	for i, want := range []string{
		`{"sensor_id":"sensor-01","ts":1772352000000,"temp_c":26.2}`,
		`{"sensor_id":"sensor-02","ts":1772352000000,"temp_c":16.3}`,
		`{"sensor_id":"sensor-04","ts":1772352000000,"temp_c":17.6}`,
	} {
		if lines[i] != want {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
		}
	}
}

// tenths re-implements the value formula independently of the generator.
func tenths(s, t int64) int64 { return 150 + (s*7919+t*104729)%211 + (t/60)*3 }

func TestValuesFollowDefinition(t *testing.T) {
	rs := parse(t, gen(t, "-ticks", "200"))
	for _, r := range rs {
		var s int64
		if _, err := fmt.Sscanf(r.SensorID, "sensor-%d", &s); err != nil {
			t.Fatal(err)
		}
		tick := (r.TS - start) / 1000
		if want := float64(tenths(s, tick)) / 10; r.Temperature != want {
			t.Fatalf("%s tick %d: temp_c %v, want %v", r.SensorID, tick, r.Temperature, want)
		}
	}
	// Drift: +3 tenths per full minute.
	b := string(gen(t, "-ticks", "61", "-late-sensor", "0"))
	if want := fmt.Sprintf(`{"sensor_id":"sensor-01","ts":%d,"temp_c":%.1f}`, start+60000, float64(tenths(1, 60))/10); !strings.Contains(b, want+"\n") {
		t.Errorf("missing %s", want)
	}
	if tenths(1, 60) != 150+(7919+60*104729)%211+3 {
		t.Error("drift")
	}
}

func TestLatePlacement(t *testing.T) {
	rs := parse(t, gen(t))
	if len(rs) != 8*305 {
		t.Fatalf("%d readings, want 2440", len(rs))
	}
	seen := map[string]bool{}
	maxTS := int64(-1 << 63)
	for i, r := range rs {
		k := fmt.Sprint(r.SensorID, r.TS)
		if seen[k] {
			t.Fatalf("line %d: %s duplicated", i+1, k)
		}
		seen[k] = true
		if r.SensorID == "sensor-03" {
			tick := (r.TS - start) / 1000
			if tick < 303 && maxTS != r.TS+2000 {
				t.Fatalf("line %d: sensor-03 tick %d emitted when max ts seen is %d, want ts+2000", i+1, tick, maxTS)
			}
		} else if r.TS < maxTS {
			t.Fatalf("line %d: on-time sensor %s goes back in time", i+1, r.SensorID)
		}
		maxTS = max(maxTS, r.TS)
	}
	// Blocks 0 and 1 hold 7 on-time readings each; block 2 ends with
	// sensor-03's tick-0 reading; block 304 ends with its tick 302 and the
	// file ends with its ticks 303 and 304.
	for i := 0; i < 14; i++ {
		if rs[i].SensorID == "sensor-03" {
			t.Fatalf("line %d: sensor-03 in the first two blocks", i+1)
		}
	}
	check := func(i int, id string, tick int64) {
		t.Helper()
		if rs[i].SensorID != id || rs[i].TS != start+1000*tick {
			t.Errorf("line %d = %+v, want %s tick %d", i+1, rs[i], id, tick)
		}
	}
	check(14, "sensor-01", 2)
	check(20, "sensor-08", 2)
	check(21, "sensor-03", 0)
	check(29, "sensor-03", 1)
	check(len(rs)-4, "sensor-08", 304)
	check(len(rs)-3, "sensor-03", 302)
	check(len(rs)-2, "sensor-03", 303)
	check(len(rs)-1, "sensor-03", 304)

	// No late sensor: strictly tick by tick, sensor by sensor.
	rs = parse(t, gen(t, "-late-sensor", "0", "-ticks", "3", "-sensors", "2"))
	for i, want := range []struct {
		id   string
		tick int64
	}{{"sensor-01", 0}, {"sensor-02", 0}, {"sensor-01", 1}, {"sensor-02", 1}, {"sensor-01", 2}, {"sensor-02", 2}} {
		check(i, want.id, want.tick)
	}
	// late-by beyond the run: every late reading is emitted at the end.
	rs = parse(t, gen(t, "-late-sensor", "1", "-late-by", "5", "-ticks", "3", "-sensors", "2"))
	for i, want := range []struct {
		id   string
		tick int64
	}{{"sensor-02", 0}, {"sensor-02", 1}, {"sensor-02", 2}, {"sensor-01", 0}, {"sensor-01", 1}, {"sensor-01", 2}} {
		check(i, want.id, want.tick)
	}
}

func TestSizing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"-n", "1000"}, 1000},
		{[]string{"-n", "1001"}, 1008},
		{[]string{"-n", "10", "-sensors", "3"}, 12},
		{[]string{"-n", "0"}, 0},
		{[]string{"-ticks", "7"}, 56},
	} {
		if got := bytes.Count(gen(t, tc.args...), []byte("\n")); got != tc.want {
			t.Errorf("%q: %d readings, want %d", tc.args, got, tc.want)
		}
	}
}

func TestSensorIDWidth(t *testing.T) {
	for _, tc := range []struct {
		sensors    string
		first, end string
	}{
		{"1", "sensor-01", "sensor-01"},
		{"9", "sensor-01", "sensor-09"},
		{"99", "sensor-01", "sensor-99"},
		{"100", "sensor-001", "sensor-100"},
		{"1200", "sensor-0001", "sensor-1200"},
	} {
		rs := parse(t, gen(t, "-sensors", tc.sensors, "-ticks", "1", "-late-sensor", "0"))
		if rs[0].SensorID != tc.first || rs[len(rs)-1].SensorID != tc.end {
			t.Errorf("-sensors %s: ids %s..%s, want %s..%s", tc.sensors, rs[0].SensorID, rs[len(rs)-1].SensorID, tc.first, tc.end)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-late-sensor", "9"},
		{"-late-sensor", "-1"},
		{"-late-by", "-1"},
		{"-sensors", "0"},
		{"-n", "10", "-ticks", "10"},
		{"-start", "2026-03-01"},
		{"-start", "2026-03-01T08:00:00.0001Z"},
		{"-rate", "-1"},
		{"stray"},
	} {
		var o, e bytes.Buffer
		if code := run(args, &o, &e); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if o.Len() != 0 {
			t.Errorf("%q: wrote output on error", args)
		}
	}
}

// lineTimes records when each line arrives.
type lineTimes struct {
	buf   bytes.Buffer
	times []time.Time
	calls int
}

func (l *lineTimes) Write(b []byte) (int, error) {
	l.calls++
	for range bytes.Count(b, []byte("\n")) {
		l.times = append(l.times, time.Now())
	}
	return l.buf.Write(b)
}

func TestRate(t *testing.T) {
	args := []string{"-sensors", "2", "-ticks", "10", "-late-sensor", "2"}
	var lt lineTimes
	var e bytes.Buffer
	if code := run(append([]string{"-rate", "200"}, args...), &lt, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if want := gen(t, args...); !bytes.Equal(lt.buf.Bytes(), want) {
		t.Fatalf("-rate changed the output:\n%s\nwant:\n%s", lt.buf.Bytes(), want)
	}
	if len(lt.times) != 20 || lt.calls != 20 {
		t.Fatalf("%d lines in %d writes, want 20 in 20 (one line each)", len(lt.times), lt.calls)
	}
	// Line i is written no earlier than i/200 s after the first.
	for i, at := range lt.times {
		if d, want := at.Sub(lt.times[0]), time.Duration(i)*5*time.Millisecond; d < want {
			t.Errorf("line %d written %s after the first, want >= %s", i, d, want)
		}
	}

	out := filepath.Join(t.TempDir(), "paced.jsonl")
	gen(t, append([]string{"-rate", "1000", "-out", out}, args...)...)
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, gen(t, args...)) {
		t.Fatalf("-rate -out: %v\n%s", err, b)
	}
}

func BenchmarkGenerate1M(b *testing.B) {
	for b.Loop() {
		var e bytes.Buffer
		if code := run([]string{"-n", "1000000", "-out", os.DevNull}, nil, &e); code != 0 {
			b.Fatal(e.String())
		}
	}
}
