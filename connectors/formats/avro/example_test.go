package avro_test

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/avro"
	"github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/vector"
)

// A registry-backed source strips the 5-byte prefix (magic 0, schema id)
// and decodes with a Writer cached by schema id.
func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "sensor_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms},
		{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	registry := map[uint32]string{ // what the Schema Registry would answer
		1: `{"type":"record","name":"Reading","fields":[
			{"name":"sensor_id","type":"string"},
			{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
			{"name":"temp_c","type":"float"}]}`,
		2: `{"type":"record","name":"Reading","fields":[
			{"name":"sensor_id","type":"string"},
			{"name":"site","type":["null","string"],"default":null},
			{"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}}]}`,
	}
	d := avro.NewDecoder(schema, memory.DefaultAllocator, avro.Options{})
	defer d.Release()
	writers := map[uint32]*avro.Writer{}
	decode := func(value []byte) error {
		if len(value) < 5 || value[0] != 0 {
			return fmt.Errorf("not a Schema Registry framed record")
		}
		id := binary.BigEndian.Uint32(value[1:5])
		w, ok := writers[id]
		if !ok {
			var err error
			if w, err = d.Writer(registry[id]); err != nil {
				return err
			}
			writers[id] = w
		}
		return d.AppendWriter(w, value[5:])
	}
	for n, value := range [][]byte{
		// v1: "sensor-03", 2026-03-01 08:00:00 UTC, 21.5
		{0, 0, 0, 0, 1, 18, 's', 'e', 'n', 's', 'o', 'r', '-', '0', '3', 0x80, 0xc0, 0xca, 0x86, 0x95, 0x67, 0, 0, 0xac, 0x41},
		// v2: "sensor-04", site "lab", 2026-03-01 08:00:00.5 UTC in µs
		{0, 0, 0, 0, 2, 18, 's', 'e', 'n', 's', 'o', 'r', '-', '0', '4', 2, 6, 'l', 'a', 'b', 0xc0, 0x84, 0xc1, 0xb6, 0xbb, 0xfc, 0xa5, 0x06},
		// v1 truncated
		{0, 0, 0, 0, 1, 18, 's', 'e', 'n'},
	} {
		if err := decode(value); err != nil {
			fmt.Printf("record %d: %v\n", n+1, err)
		}
	}
	b := vector.New(d.Flush())
	defer b.Release()
	fmt.Print(string(json.AppendBatch(nil, b)))
	// Output:
	// record 3: avro field "sensor_id": record truncated (at byte 0)
	// {"sensor_id":"sensor-03","ts":"2026-03-01 08:00:00.000","temp_c":21.5}
	// {"sensor_id":"sensor-04","ts":"2026-03-01 08:00:00.500","temp_c":null}
}
