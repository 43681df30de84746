package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/clink-dev/clink/connectors/formats/registry"
)

// TestRegistrySIGKILL: the sensor pipeline from Avro and from Protobuf
// through the Schema Registry, the first half of the readings written with
// v1 of the subject and the rest with v2 (Avro: an added field with a
// default and temp_c widened from float to double; Protobuf: an added
// field), streams through the dev broker into 10-second windows per sensor
// written to an exactly-once Kafka sink in Avro (registered under
// windows-value). The job is SIGKILLed twice mid-stream, once after the
// schema switch, and restored; read back with `clink kafka consume`
// (read_committed, decoding through the registry), every window is exact
// and written once, as recomputed here from the input.
func TestRegistrySIGKILL(t *testing.T) {
	for _, format := range []string{"avro-confluent", "protobuf-confluent"} {
		t.Run(format, func(t *testing.T) { registrySIGKILL(t, format) })
	}
}

func registrySIGKILL(t *testing.T, format string) {
	bin := build(t)
	dir := t.TempDir()
	addr := serveBroker(t, bin, "--topic", "readings:2", "--topic", "windows:1")
	srv, url, err := registry.StartLocal(registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sr, err := registry.NewClient(url, registry.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	encode := registryEncoder(t, ctx, sr, format)

	// The workload: a pure function of the seed. Temperatures are whole
	// quarter degrees, exact in float and double, so sums are exact.
	const sensors, readings = 50, 12000
	rng := rand.New(rand.NewPCG(18, 18))
	type win struct {
		n    int64
		sum  float64
		seen bool
	}
	want := map[string]*win{}
	var recs []*kgo.Record
	base := time.UnixMilli(1_772_352_000_000).UTC()
	for i := range readings {
		s := fmt.Sprintf("sensor-%02d", rng.IntN(sensors))
		ts := base.Add(time.Duration(i*20+rng.IntN(500)) * time.Millisecond)
		temp := float64(rng.IntN(400)-100) / 4
		v := 0
		if i >= readings/2 {
			v = 1
		}
		recs = append(recs, &kgo.Record{Partition: int32(len(s)+int(s[len(s)-1])) % 2, Key: []byte(s), Value: encode(v, s, ts, temp)})
		start := ts.UnixMilli() - ts.UnixMilli()%10000
		k := fmt.Sprintf("%s|%d", s, start)
		if want[k] == nil {
			want[k] = &win{}
		}
		want[k].n++
		want[k].sum += temp
	}
	// A last reading far ahead closes every window (its own stays open).
	for p := range 2 {
		recs = append(recs, &kgo.Record{Partition: int32(p), Value: encode(1, "flush", base.Add(time.Hour), 0)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("readings"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produced := make(chan error, 1)
	go func() {
		// 100 readings every 20 ms: the stream lasts about 2.4 s, v2 from 1.2 s.
		for lo := 0; lo < len(recs); lo += 100 {
			if err := cl.ProduceSync(ctx, recs[lo:min(lo+100, len(recs))]...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		produced <- nil
	}()

	script := filepath.Join(dir, "job.sql")
	os.WriteFile(script, []byte(fmt.Sprintf(`
CREATE TABLE readings (sensor_id STRING, ts TIMESTAMP(3), temp_c DOUBLE) WITH ('connector' = 'kafka', 'brokers' = '%[1]s',
  'topic' = 'readings', 'value.format' = '%[3]s', 'value.%[3]s.url' = '%[2]s',
  'event_time_column' = 'ts', 'watermark_lag_ms' = '2000');
CREATE TABLE windows (sensor_id STRING, window_start BIGINT, readings BIGINT, temp_sum DOUBLE) WITH ('connector' = 'kafka',
  'brokers' = '%[1]s', 'topic' = 'windows', 'format' = 'avro-confluent', 'avro-confluent.url' = '%[2]s',
  'delivery_guarantee' = 'exactly_once');
INSERT INTO windows SELECT sensor_id, window_start, COUNT(*), SUM(temp_c) FROM readings
  GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), sensor_id;
`, addr, url, format)), 0o644)
	args := []string{"run", "--checkpoint-dir", filepath.Join(dir, "ck"), "--checkpoint-interval-ms", "50", script}
	committed := func() []*kgo.Record {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("windows"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var out []*kgo.Record
		for {
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs := c.PollFetches(pctx)
			cancel()
			n := 0
			fs.EachRecord(func(r *kgo.Record) { out = append(out, r); n++ })
			if n == 0 {
				return out
			}
		}
	}
	// Kill points: 600 ms into the first run (v1 records), 1 s into
	// the second (past the switch to v2); the third runs to the end.
	for run, killAfter := range []time.Duration{600 * time.Millisecond, time.Second, 0} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if killAfter > 0 {
			select {
			case err := <-done:
				t.Fatalf("run %d ended: %v\n%s", run, err, stderr.String())
			case <-time.After(killAfter):
			}
			cmd.Process.Kill()
			<-done
			continue
		}
		deadline := time.Now().Add(90 * time.Second)
		for len(committed()) < len(want) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("run %d: %d windows after 90 s, want %d\n%s", run, len(committed()), len(want), stderr.String())
			}
			select {
			case err := <-done:
				t.Fatalf("run %d ended: %v\n%s", run, err, stderr.String())
			case <-time.After(200 * time.Millisecond):
			}
		}
		cmd.Process.Kill()
		<-done
		if !strings.Contains(stderr.String(), "restore point: checkpoint") {
			t.Fatalf("run %d did not restore:\n%s", run, stderr.String())
		}
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	// Read back as a user would: clink kafka consume, read_committed (its
	// default), decoding through the registry.
	out, err := exec.Command(bin, "kafka", "consume", "--brokers", addr, "--topic", "windows", "--from-beginning", "--to-end",
		"--value-format", "avro-confluent", "--schema-registry", url).Output()
	if err != nil {
		t.Fatalf("clink kafka consume: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range got {
		var w struct {
			SensorID    string  `json:"sensor_id"`
			WindowStart int64   `json:"window_start"`
			Readings    int64   `json:"readings"`
			TempSum     float64 `json:"temp_sum"`
		}
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		k := fmt.Sprintf("%s|%d", w.SensorID, w.WindowStart)
		e := want[k]
		switch {
		case e == nil:
			t.Fatalf("unexpected window %s", line)
		case e.seen:
			t.Fatalf("window %s written twice", line)
		case e.n != w.Readings || e.sum != w.TempSum:
			t.Fatalf("window %s: want %d readings sum %v", line, e.n, e.sum)
		}
		e.seen = true
	}
	if len(got) != len(want) {
		t.Fatalf("%d windows, want %d", len(got), len(want))
	}
}

// registryEncoder registers v1 and v2 of the readings-value subject in the
// format and returns an encoder of readings in version v (0 or 1), framed
// for the registry; the records are written with hamba/avro and protowire,
// code that is not Clink's decoders.
func registryEncoder(t *testing.T, ctx context.Context, sr *registry.Client, format string) func(v int, sensor string, ts time.Time, temp float64) []byte {
	var texts [2]string
	typ := registry.Avro
	if format == "avro-confluent" {
		texts = [2]string{`{"type":"record","name":"Reading","namespace":"sensors","fields":[
		{"name":"sensor_id","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"temp_c","type":"float"}]}`, `{"type":"record","name":"Reading","namespace":"sensors","fields":[
		{"name":"sensor_id","type":"string"},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"temp_c","type":"double"},
		{"name":"site","type":"string","default":"unknown"}]}`}
	} else {
		typ = registry.Protobuf
		v1 := `syntax = "proto3";
package sensors;
import "google/protobuf/timestamp.proto";
message Reading { string sensor_id = 1; google.protobuf.Timestamp ts = 2; double temp_c = 3; }
`
		texts = [2]string{v1, strings.Replace(v1, "double temp_c = 3;", "double temp_c = 3; string site = 4;", 1)}
	}
	var ids [2]int
	var schemas [2]hamba.Schema
	for i, text := range texts {
		var err error
		if ids[i], err = sr.Register(ctx, "readings-value", text, typ); err != nil {
			t.Fatal(err)
		}
		if typ == registry.Avro {
			schemas[i] = hamba.MustParse(text)
		}
	}
	return func(v int, sensor string, ts time.Time, temp float64) []byte {
		b := registry.AppendHeader(nil, ids[v])
		if typ == registry.Avro {
			val := map[string]any{"sensor_id": sensor, "ts": ts, "temp_c": float32(temp)}
			if v == 1 {
				val = map[string]any{"sensor_id": sensor, "ts": ts, "temp_c": temp, "site": "north"}
			}
			payload, err := hamba.Marshal(schemas[v], val)
			if err != nil {
				t.Fatal(err)
			}
			return append(b, payload...)
		}
		b = registry.AppendIndexes(b, []int{0})
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, sensor)
		var tsm []byte
		tsm = protowire.AppendTag(tsm, 1, protowire.VarintType)
		tsm = protowire.AppendVarint(tsm, uint64(ts.Unix()))
		tsm = protowire.AppendTag(tsm, 2, protowire.VarintType)
		tsm = protowire.AppendVarint(tsm, uint64(ts.Nanosecond()))
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, tsm)
		b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(temp))
		if v == 1 {
			b = protowire.AppendTag(b, 4, protowire.BytesType)
			b = protowire.AppendString(b, "north")
		}
		return b
	}
}
