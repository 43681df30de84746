package json_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/vector"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	d := json.NewDecoder(schema, memory.DefaultAllocator, json.Options{})
	defer d.Release()
	for n, line := range []string{
		`{"sensor_id":"sensor-03","ts":1772352000000,"temp_c":21.7}`,
		`{"Sensor_ID":"sensor-04","ts":"2026-03-01T09:00:00.5+01:00","extra":[1,{"a":2}]}`,
		`{"sensor_id":"sensor-05","temp_c":"abc"}`,
	} {
		if err := d.Append([]byte(line)); err != nil {
			fmt.Printf("line %d: %v\n", n+1, err)
		}
	}
	b := vector.New(d.Flush())
	defer b.Release()
	fmt.Print(string(json.AppendBatch(nil, b)))
	// Output:
	// line 3: field "temp_c": expected a number, found "abc"
	// {"sensor_id":"sensor-03","ts":"2026-03-01 08:00:00.000","temp_c":21.7}
	// {"sensor_id":"sensor-04","ts":"2026-03-01 08:00:00.500","temp_c":null}
}
