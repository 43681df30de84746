package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clink-dev/clink/connectors/formats/registry"
)

// FormatsConfig sets up the formats benchmark.
type FormatsConfig struct {
	Self     string
	Readings int64
	Sensors  int
	Runs     int
	Dir      string
	Log      io.Writer
}

// FormatsResult holds, per format, the medians of the sensors query and of
// decoding alone, over the same readings.
type FormatsResult struct {
	Events  int64
	Formats []string
	Sensors map[string]Measure
	Decode  map[string]Measure
}

// The readings' schemas in the registry formats.
const (
	readingsAvro = `{"type":"record","name":"Reading","namespace":"sensors","fields":[
  {"name":"sensor_id","type":"string"},{"name":"ts","type":"long"},{"name":"temp_c","type":"double"}]}`
	readingsProto = `syntax = "proto3";
package sensors;
message Reading { string sensor_id = 1; int64 ts = 2; double temp_c = 3; }
`
)

// RunFormats preloads the sensor workload into three topics of one
// partition each, as JSON, as Avro and as Protobuf in the Confluent wire
// format (schemas in a development Schema Registry run by this process),
// and measures `clink run` of the sensors query and of a bare decode over
// each, interleaved, in the same run.
func RunFormats(ctx context.Context, cfg FormatsConfig) (FormatsResult, error) {
	res := FormatsResult{Formats: []string{"json", "avro-confluent", "protobuf-confluent"}, Sensors: map[string]Measure{}, Decode: map[string]Measure{}}
	addr, stop, err := startBroker(cfg.Self, "readings-json:1", "readings-avro-confluent:1", "readings-protobuf-confluent:1")
	if err != nil {
		return res, err
	}
	defer stop()
	srv, url, err := registry.StartLocal(registry.Options{})
	if err != nil {
		return res, err
	}
	defer srv.Close()
	sr, err := registry.NewClient(url, registry.ClientOptions{})
	if err != nil {
		return res, err
	}
	avroID, err := sr.Register(ctx, "readings-avro-confluent-value", readingsAvro, registry.Avro)
	if err != nil {
		return res, err
	}
	protoID, err := sr.Register(ctx, "readings-protobuf-confluent-value", readingsProto, registry.Protobuf)
	if err != nil {
		return res, err
	}
	avroSchema := hamba.MustParse(readingsAvro)

	path := filepath.Join(cfg.Dir, "readings-formats.jsonl")
	fmt.Fprintf(cfg.Log, "generating %d readings (%d sensors) into %s\n", cfg.Readings, cfg.Sensors, path)
	wc, err := WriteSensors(path, cfg.Readings, cfg.Sensors)
	if err != nil {
		return res, err
	}
	res.Events = wc.Readings()
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	sc := bufio.NewScanner(f)
	var batch []*kgo.Record
	flush := func() error {
		err := cl.ProduceSync(ctx, batch...).FirstErr()
		batch = batch[:0]
		return err
	}
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var r struct {
			SensorID string  `json:"sensor_id" avro:"sensor_id"`
			TS       int64   `json:"ts" avro:"ts"`
			TempC    float64 `json:"temp_c" avro:"temp_c"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return res, err
		}
		a, err := hamba.Marshal(avroSchema, r)
		if err != nil {
			return res, err
		}
		p := registry.AppendIndexes(registry.AppendHeader(nil, protoID), []int{0})
		p = protowire.AppendTag(p, 1, protowire.BytesType)
		p = protowire.AppendString(p, r.SensorID)
		p = protowire.AppendTag(p, 2, protowire.VarintType)
		p = protowire.AppendVarint(p, uint64(r.TS))
		p = protowire.AppendTag(p, 3, protowire.Fixed64Type)
		p = protowire.AppendFixed64(p, math.Float64bits(r.TempC))
		batch = append(batch,
			&kgo.Record{Topic: "readings-json", Value: line},
			&kgo.Record{Topic: "readings-avro-confluent", Value: append(registry.AppendHeader(nil, avroID), a...)},
			&kgo.Record{Topic: "readings-protobuf-confluent", Value: p})
		if len(batch) >= 3000 {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	fmt.Fprintf(cfg.Log, "preloaded %d readings in each format on %s (registry %s)\n", res.Events, addr, url)

	script := func(format, sinkCols, query string) string {
		opts := fmt.Sprintf("'format' = '%s'", format)
		if format != "json" {
			opts += fmt.Sprintf(", '%s.url' = '%s'", format, url)
		}
		if format == "protobuf-confluent" {
			opts += ", 'protobuf-confluent.subject' = 'readings-protobuf-confluent-value'"
		}
		return fmt.Sprintf(`CREATE TABLE readings (sensor_id STRING, ts BIGINT, temp_c DOUBLE) WITH (
  'connector' = 'kafka', 'brokers' = '%s', 'topic' = 'readings-%s', %s,
  'event_time_column' = 'ts', 'watermark_lag_ms' = '3000', 'scan_bounded' = 'latest');
CREATE TABLE sink (%s) WITH ('connector' = 'blackhole');
%s;`, addr, format, opts, sinkCols, query)
	}
	median := func(label string, args ...string) (Measure, error) {
		return RunProcessMedian(ctx, cfg.Runs, label, res.Events, cfg.Self, args...)
	}
	sensorCols := "sensor_id STRING, window_start BIGINT, window_end BIGINT, readings BIGINT, avg_temp DOUBLE, min_temp DOUBLE, max_temp DOUBLE"
	for _, format := range res.Formats {
		m, err := median("decode "+format, "run", "--quiet", "-e", script(format, "sensor_id STRING, ts BIGINT, temp_c DOUBLE", "INSERT INTO sink SELECT * FROM readings"))
		if err != nil {
			return res, err
		}
		res.Decode[format] = m
		if m, err = median("sensors "+format, "run", "--quiet", "-e", script(format, sensorCols, SensorsQuery)); err != nil {
			return res, err
		}
		res.Sensors[format] = m
	}
	return res, nil
}

// FormatFormats prints the result table.
func FormatFormats(w io.Writer, r FormatsResult, sensors int) {
	fmt.Fprintf(w, "formats benchmark: %d sensor readings (%d sensors), one partition per format on `clink kafka serve` (own process), registry in the bench process\n\n", r.Events, sensors)
	fmt.Fprintf(w, "%-32s %14s %12s %16s %12s\n", "run", "records/s", "CPU s/M rec", "records/CPU-s", "peak RSS MB")
	for _, kind := range []map[string]Measure{r.Decode, r.Sensors} {
		for _, f := range r.Formats {
			m := kind[f]
			fmt.Fprintf(w, "%-32s %14.0f %12.3f %16.0f %12.1f\n", m.Label, m.EventsPerSec(), m.CPUPerMillion(), m.EventsPerCPUSec(), float64(m.PeakRSSKB)/1024)
		}
	}
	var parts []string
	for _, f := range r.Formats[1:] {
		parts = append(parts, fmt.Sprintf("%s %.2fx (decode %.2fx)", f,
			r.Sensors[f].EventsPerCPUSec()/r.Sensors["json"].EventsPerCPUSec(), r.Decode[f].EventsPerCPUSec()/r.Decode["json"].EventsPerCPUSec()))
	}
	fmt.Fprintf(w, "\nsensors via Kafka, records per CPU-second against JSON: %s\n", strings.Join(parts, ", "))
}
