package json

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/vector"
)

// batchRows is the engine's default micro-batch size (DESIGN §1).
const batchRows = 8192

var sensorSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// sensorLines returns n lines of the sensors workload, e.g.
// {"sensor_id":"sensor-03","ts":1772352000000,"temp_c":21.7}
func sensorLines(n int) (lines [][]byte, total int) {
	r := rand.New(rand.NewPCG(1, 2))
	ts := int64(1772352000000)
	for range n {
		ts += r.Int64N(50)
		l := fmt.Appendf(nil, `{"sensor_id":"sensor-%02d","ts":%d,"temp_c":%.1f}`,
			r.IntN(100), ts, -10+r.Float64()*50)
		lines = append(lines, l)
		total += len(l)
	}
	return lines, total
}

func BenchmarkDecode(b *testing.B) {
	lines, total := sensorLines(batchRows)
	b.Run("sensors", func(b *testing.B) {
		d := NewDecoder(sensorSchema, memory.DefaultAllocator, Options{})
		defer d.Release()
		b.SetBytes(int64(total / len(lines)))
		b.ReportAllocs()
		b.ResetTimer()
		for i, k := 0, 0; i < b.N; i, k = i+1, k+1 {
			if k == len(lines) {
				k = 0
			}
			if err := d.Append(lines[k]); err != nil {
				b.Fatal(err)
			}
			if d.Len() == batchRows {
				d.Flush().Release()
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("handloop", func(b *testing.B) {
		var h handSensors
		b.SetBytes(int64(total / len(lines)))
		b.ReportAllocs()
		b.ResetTimer()
		for i, k := 0, 0; i < b.N; i, k = i+1, k+1 {
			if k == len(lines) {
				k = 0
			}
			if !h.append(lines[k]) {
				b.Fatal("handloop: bad line")
			}
			if len(h.ts) == batchRows {
				h.reset()
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// handSensors is the hand-written limit for the sensors workload: a
// decoder that knows the exact line shape and writes plain Go slices.
type handSensors struct {
	idData []byte
	idOffs []int32
	ts     []int64
	temp   []float64
}

func (h *handSensors) reset() {
	h.idData, h.idOffs, h.ts, h.temp = h.idData[:0], h.idOffs[:0], h.ts[:0], h.temp[:0]
}

var (
	handP1 = []byte(`{"sensor_id":"`)
	handP2 = []byte(`","ts":`)
	handP3 = []byte(`,"temp_c":`)
)

func (h *handSensors) append(line []byte) bool {
	if !bytes.HasPrefix(line, handP1) {
		return false
	}
	i := len(handP1)
	j := i
	for j < len(line) && line[j] != '"' {
		j++
	}
	id := line[i:j]
	if !bytes.HasPrefix(line[j:], handP2) {
		return false
	}
	i = j + len(handP2)
	var ts int64
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		ts = ts*10 + int64(line[i]-'0')
		i++
	}
	if !bytes.HasPrefix(line[i:], handP3) {
		return false
	}
	i += len(handP3)
	j = i
	neg := false
	if line[j] == '-' {
		neg = true
		j++
	}
	var mant uint64
	exp := 0
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		mant = mant*10 + uint64(line[j]-'0')
		j++
	}
	if j < len(line) && line[j] == '.' {
		j++
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			mant = mant*10 + uint64(line[j]-'0')
			exp++
			j++
		}
	}
	var f float64
	if mant <= 1<<53 && exp <= 22 {
		f = float64(mant) / pow10[exp]
		if neg {
			f = -f
		}
	} else {
		var err error
		if f, err = strconv.ParseFloat(bytesString(line[i:j]), 64); err != nil {
			return false
		}
	}
	if j >= len(line) || line[j] != '}' {
		return false
	}
	h.idData = append(h.idData, id...)
	h.idOffs = append(h.idOffs, int32(len(h.idData)))
	h.ts = append(h.ts, ts)
	h.temp = append(h.temp, f)
	return true
}

// sensorBatch decodes n sensor lines into one batch.
func sensorBatch(tb testing.TB, n int) (*vector.Batch, int) {
	lines, total := sensorLines(n)
	d := NewDecoder(sensorSchema, memory.DefaultAllocator, Options{})
	defer d.Release()
	for _, l := range lines {
		if err := d.Append(l); err != nil {
			tb.Fatal(err)
		}
	}
	return vector.New(d.Flush()), total
}

func BenchmarkEncode(b *testing.B) {
	batch, total := sensorBatch(b, batchRows)
	defer batch.Release()
	b.Run("sensors", func(b *testing.B) {
		dst := make([]byte, 0, total*2)
		b.SetBytes(int64(total))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			dst = AppendBatch(dst[:0], batch)
		}
		b.ReportMetric(float64(b.N)*batchRows/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("handloop", func(b *testing.B) {
		ids := batch.Column(0).(*array.String)
		ts := batch.Column(1).(*array.Int64).Int64Values()
		temp := batch.Column(2).(*array.Float64).Float64Values()
		dst := make([]byte, 0, total*2)
		b.SetBytes(int64(total))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			dst = dst[:0]
			for r := range ts {
				dst = append(dst, `{"sensor_id":"`...)
				dst = append(dst, ids.Value(r)...)
				dst = append(dst, `","ts":`...)
				dst = strconv.AppendInt(dst, ts[r], 10)
				dst = append(dst, `,"temp_c":`...)
				dst = strconv.AppendFloat(dst, temp[r], 'f', -1, 64)
				dst = append(dst, '}', '\n')
			}
		}
		b.ReportMetric(float64(b.N)*batchRows/b.Elapsed().Seconds(), "rows/s")
	})
}
