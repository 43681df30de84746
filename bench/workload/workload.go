// Package workload is the single definition of the reference sensor
// workload shared by the generator (examples/sensors/gen) and the verifier
// (examples/sensors/verify). It is deliberately independent of the Clink
// engine: it imports only the Go standard library.
//
// The definition (see examples/sensors/README.md, which is normative):
//
//   - Sensors are numbered s = 1..Sensors and named "sensor-" followed by s
//     zero-padded to max(2, number of decimal digits of Sensors) digits.
//   - Tick t = 0..Ticks-1 has event time ts = StartMs + 1000*t (epoch ms).
//   - The reading of sensor s at tick t is, in tenths of a degree,
//     Tenths(s, t) = 150 + ((s*7919 + t*104729) mod 211) + (t/60)*3
//     (integer division); its temp_c is Tenths/10, written with
//     exactly one decimal.
//   - Emission: for each block b = 0..Ticks-1, the readings of tick b of
//     every sensor except the late one, in sensor order; then, if
//     LateSensor != 0 and b >= LateBy, the late sensor's reading of tick
//     b-LateBy. After the last block, the late sensor's readings of the
//     last LateBy ticks (ticks max(0, Ticks-LateBy)..Ticks-1) in tick order.
package workload

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Defaults of the reference workload.
const (
	DefaultSensors    = 8
	DefaultTicks      = 305
	DefaultStart      = "2026-03-01T08:00:00Z"
	DefaultLateSensor = 3
	DefaultLateBy     = 2
)

// Config describes one instance of the workload.
type Config struct {
	Sensors    int   // number of sensors, >= 1
	Ticks      int   // number of ticks, >= 0
	StartMs    int64 // event time of tick 0, epoch milliseconds
	LateSensor int   // 1..Sensors, or 0 for none
	LateBy     int   // ticks the late sensor lags behind, >= 0
}

// Default returns the reference workload (8 sensors, 305 ticks).
func Default() Config {
	start, err := ParseStart(DefaultStart)
	if err != nil {
		panic(err)
	}
	return Config{
		Sensors:    DefaultSensors,
		Ticks:      DefaultTicks,
		StartMs:    start,
		LateSensor: DefaultLateSensor,
		LateBy:     DefaultLateBy,
	}
}

// Validate reports whether c is a well-formed workload.
func (c Config) Validate() error {
	switch {
	case c.Sensors < 1:
		return fmt.Errorf("sensors must be >= 1, got %d", c.Sensors)
	case c.Ticks < 0:
		return fmt.Errorf("ticks must be >= 0, got %d", c.Ticks)
	case c.LateSensor < 0 || c.LateSensor > c.Sensors:
		return fmt.Errorf("late-sensor must be 0 (none) or 1..%d, got %d", c.Sensors, c.LateSensor)
	case c.LateBy < 0:
		return fmt.Errorf("late-by must be >= 0, got %d", c.LateBy)
	}
	return nil
}

// Readings is the total number of readings of the workload.
func (c Config) Readings() int64 { return int64(c.Sensors) * int64(c.Ticks) }

// TicksFor returns the number of ticks needed for about n readings:
// ceil(n/sensors).
func TicksFor(n int64, sensors int) int {
	if n <= 0 || sensors <= 0 {
		return 0
	}
	return int((n + int64(sensors) - 1) / int64(sensors))
}

// ParseStart parses an RFC 3339 time into epoch milliseconds. Sub-millisecond
// precision is rejected so that the definition stays exact.
func ParseStart(s string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("start: %w", err)
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return 0, fmt.Errorf("start: %q has sub-millisecond precision", s)
	}
	return t.UnixMilli(), nil
}

// IDWidth is the number of digits of sensor numbers in sensor ids:
// max(2, digits(Sensors)).
func (c Config) IDWidth() int {
	w := len(strconv.Itoa(c.Sensors))
	if w < 2 {
		w = 2
	}
	return w
}

// SensorID returns the id of sensor s (1-based), e.g. "sensor-03".
func (c Config) SensorID(s int) string {
	return fmt.Sprintf("sensor-%0*d", c.IDWidth(), s)
}

// TS returns the event time of tick t in epoch milliseconds.
func (c Config) TS(t int) int64 { return c.StartMs + 1000*int64(t) }

// Tenths is the reading of sensor s at tick t in tenths of a degree.
func Tenths(s, t int) int64 {
	return 150 + (int64(s)*7919+int64(t)*104729)%211 + int64(t/60)*3
}

// Emit calls fn(sensor, tick) for every reading, in emission order.
func (c Config) Emit(fn func(sensor, tick int)) {
	for b := 0; b < c.Ticks; b++ {
		for s := 1; s <= c.Sensors; s++ {
			if s != c.LateSensor {
				fn(s, b)
			}
		}
		if c.LateSensor != 0 && b >= c.LateBy {
			fn(c.LateSensor, b-c.LateBy)
		}
	}
	if c.LateSensor != 0 {
		for t := max(0, c.Ticks-c.LateBy); t < c.Ticks; t++ {
			fn(c.LateSensor, t)
		}
	}
}

// AppendTemperature appends tenths/10 with exactly one decimal ("21.7",
// "-3.0", "-0.5").
func AppendTemperature(dst []byte, tenths int64) []byte {
	u := uint64(tenths)
	if tenths < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/10, 10)
	return append(dst, '.', byte('0'+u%10))
}

// AppendRecord appends one JSON line (with trailing '\n'):
// {"sensor_id":"<id>","ts":<ts>,"temp_c":<t>}
func AppendRecord(dst []byte, id string, ts, tenths int64) []byte {
	dst = append(dst, `{"sensor_id":"`...)
	dst = append(dst, id...)
	dst = append(dst, `","ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"temp_c":`...)
	dst = AppendTemperature(dst, tenths)
	return append(dst, '}', '\n')
}

// Write writes the whole workload to w as JSON lines, in emission order.
func Write(w io.Writer, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	ids := make([]string, c.Sensors+1)
	for s := 1; s <= c.Sensors; s++ {
		ids[s] = c.SensorID(s)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var werr error
	c.Emit(func(s, t int) {
		if werr != nil {
			return
		}
		b := AppendRecord(bw.AvailableBuffer(), ids[s], c.TS(t), Tenths(s, t))
		_, werr = bw.Write(b)
	})
	if werr != nil {
		return werr
	}
	return bw.Flush()
}

// Flags registers the workload flags (-sensors -ticks -n -start -late-sensor
// -late-by) on fs. Call the returned function after fs.Parse to obtain the
// validated Config.
func Flags(fs *flag.FlagSet) func() (Config, error) {
	sensors := fs.Int("sensors", DefaultSensors, "number of sensors")
	ticks := fs.Int("ticks", DefaultTicks, "number of ticks (one reading per sensor per tick, 1 s apart)")
	n := fs.Int64("n", 0, "alternative to -ticks: about N readings in total (ticks = ceil(N/sensors))")
	start := fs.String("start", DefaultStart, "event time of tick 0 (RFC 3339)")
	late := fs.Int("late-sensor", DefaultLateSensor, "number of the sensor whose readings arrive late (0 = none)")
	lateBy := fs.Int("late-by", DefaultLateBy, "how many ticks the late sensor's readings are delayed")
	return func() (Config, error) {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["n"] && set["ticks"] {
			return Config{}, errors.New("use either -n or -ticks, not both")
		}
		startMs, err := ParseStart(*start)
		if err != nil {
			return Config{}, err
		}
		c := Config{Sensors: *sensors, Ticks: *ticks, StartMs: startMs, LateSensor: *late, LateBy: *lateBy}
		if set["n"] {
			if *n < 0 {
				return Config{}, fmt.Errorf("n must be >= 0, got %d", *n)
			}
			c.Ticks = TicksFor(*n, c.Sensors)
		}
		return c, c.Validate()
	}
}
