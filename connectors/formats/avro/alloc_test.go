package avro

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNoAllocPerRow: once a batch's buffers are sized, decoding and
// encoding a row allocate nothing.
func TestNoAllocPerRow(t *testing.T) {
	recs, _ := sensorRecords(t)
	dec := NewDecoder(sensors, memory.NewGoAllocator(), Options{})
	defer dec.Release()
	for _, r := range recs[:300] {
		if err := dec.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	dec.Flush().Release() // the next batch starts with room for 300 rows
	k := 0
	if n := testing.AllocsPerRun(250, func() {
		if err := dec.Append(recs[k]); err != nil {
			t.Fatal(err)
		}
		k++
	}); n != 0 {
		t.Errorf("Append: %v allocations per row", n)
	}
	rec := dec.Flush()
	defer rec.Release()
	enc, _ := NewEncoder(sensors)
	buf := make([]byte, 0, 1024)
	k = 0
	if n := testing.AllocsPerRun(200, func() {
		buf = enc.AppendRow(buf[:0], rec, k)
		k++
	}); n != 0 {
		t.Errorf("AppendRow: %v allocations per row", n)
	}
}
