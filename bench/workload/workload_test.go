package workload

import (
	"strconv"
	"testing"
)

func TestAppendTemperature(t *testing.T) {
	for tenths, want := range map[int64]string{
		0: "0.0", 5: "0.5", 217: "21.7", 150: "15.0", -30: "-3.0", -5: "-0.5", -217: "-21.7", 62859: "6285.9",
	} {
		got := string(AppendTemperature(nil, tenths))
		if got != want {
			t.Errorf("AppendTemperature(%d) = %q, want %q", tenths, got, want)
		}
		// The verifier relies on ParseFloat(text) == tenths/10 exactly.
		f, err := strconv.ParseFloat(got, 64)
		if err != nil || f != float64(tenths)/10 {
			t.Errorf("ParseFloat(%q) = %v, want %v", got, f, float64(tenths)/10)
		}
	}
}

func TestTenthsExactAsFloat(t *testing.T) {
	for s := 1; s <= 8; s++ {
		for tick := 0; tick < 5000; tick++ {
			v := Tenths(s, tick)
			f, _ := strconv.ParseFloat(string(AppendTemperature(nil, v)), 64)
			if f != float64(v)/10 {
				t.Fatalf("sensor %d tick %d: %v != %v", s, tick, f, float64(v)/10)
			}
		}
	}
}

func TestEmitCountsEachReadingOnce(t *testing.T) {
	for _, c := range []Config{
		{Sensors: 8, Ticks: 305, LateSensor: 3, LateBy: 2},
		{Sensors: 1, Ticks: 4, LateSensor: 1, LateBy: 0},
		{Sensors: 3, Ticks: 2, LateSensor: 3, LateBy: 7},
		{Sensors: 5, Ticks: 0, LateSensor: 2, LateBy: 1},
	} {
		seen := map[[2]int]int{}
		c.Emit(func(s, t int) { seen[[2]int{s, t}]++ })
		if int64(len(seen)) != c.Readings() {
			t.Errorf("%+v: %d distinct readings, want %d", c, len(seen), c.Readings())
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%+v: reading %v emitted %d times", c, k, n)
			}
		}
	}
}

func TestTicksFor(t *testing.T) {
	for _, tc := range []struct {
		n       int64
		sensors int
		want    int
	}{{10_000_000, 8, 1_250_000}, {1001, 8, 126}, {1, 8, 1}, {0, 8, 0}, {7, 7, 1}} {
		if got := TicksFor(tc.n, tc.sensors); got != tc.want {
			t.Errorf("TicksFor(%d, %d) = %d, want %d", tc.n, tc.sensors, got, tc.want)
		}
	}
}
