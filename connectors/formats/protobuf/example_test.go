package protobuf_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clink-dev/clink/connectors/formats/json"
	"github.com/clink-dev/clink/connectors/formats/protobuf"
	"github.com/clink-dev/clink/vector"
)

func Example() {
	md, err := protobuf.CompileSource("sensors.proto", `
syntax = "proto3";
package sensors;
import "google/protobuf/timestamp.proto";
enum Unit { CELSIUS = 0; FAHRENHEIT = 1; }
message Reading {
  string sensor_id = 1;
  google.protobuf.Timestamp ts = 2;
  optional double temp_c = 3;
  Unit unit = 4;
  repeated string tags = 5; // no column reads it: skipped
}`, "Reading")
	if err != nil {
		panic(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "sensor_id", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_ms, Nullable: true},
		{Name: "temp_c", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "unit", Type: arrow.BinaryTypes.String},
	}, nil)

	// A sink writes two rows...
	in := json.NewDecoder(schema, memory.DefaultAllocator, json.Options{})
	defer in.Release()
	for _, line := range []string{
		`{"sensor_id":"sensor-03","ts":1772352000000,"temp_c":21.7,"unit":"CELSIUS"}`,
		`{"sensor_id":"sensor-04","ts":"2026-03-01T09:00:00.5+01:00","unit":"FAHRENHEIT"}`,
	} {
		if err := in.Append([]byte(line)); err != nil {
			panic(err)
		}
	}
	rows := vector.New(in.Flush())
	defer rows.Release()
	enc, err := protobuf.NewEncoder(schema, md)
	if err != nil {
		panic(err)
	}
	buf, ends, err := enc.AppendBatch(nil, nil, rows)
	if err != nil {
		panic(err)
	}

	// ...and a source reads them back, with a truncated record between.
	dec, err := protobuf.NewDecoder(schema, md, memory.DefaultAllocator, protobuf.Options{})
	if err != nil {
		panic(err)
	}
	defer dec.Release()
	records := [][]byte{buf[:ends[0]], buf[ends[0] : ends[1]-1], buf[ends[0]:ends[1]]}
	for n, r := range records {
		if err := dec.Append(r); err != nil {
			fmt.Printf("record %d: %v\n", n, err)
		}
	}
	out := vector.New(dec.Flush())
	defer out.Release()
	fmt.Print(string(json.AppendBatch(nil, out)))
	// Output:
	// record 1: invalid protobuf at byte 26: truncated
	// {"sensor_id":"sensor-03","ts":"2026-03-01 08:00:00.000","temp_c":21.7,"unit":"CELSIUS"}
	// {"sensor_id":"sensor-04","ts":"2026-03-01 08:00:00.500","temp_c":null,"unit":"FAHRENHEIT"}
}
