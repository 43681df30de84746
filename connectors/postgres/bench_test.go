package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/jackc/pgx/v5"

	"github.com/clink-dev/clink/vector"
)

// benchSchema is the sensor pipeline's output row.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "sensor_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "window_start", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "window_end", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "readings", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "avg_temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "min_temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "max_temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

const benchBatch = 1024

// benchRow is row i: sensor i mod keys, its window i / keys.
func benchRow(i, keys int) []any {
	w := int64(i/keys) * 10000
	return []any{fmt.Sprintf("sensor-%05d", i%keys), w, w + 10000, int64(40 + i%7), 20.5 + float64(i%100)/10, 15.25, 25.75}
}

func benchBatchOf(mem memory.Allocator, from, keys int) *vector.Batch {
	b := array.NewRecordBuilder(mem, benchSchema)
	defer b.Release()
	for i := from; i < from+benchBatch; i++ {
		r := benchRow(i, keys)
		b.Field(0).(*array.StringBuilder).Append(r[0].(string))
		for c := 1; c < 4; c++ {
			b.Field(c).(*array.Int64Builder).Append(r[c].(int64))
		}
		for c := 4; c < 7; c++ {
			b.Field(c).(*array.Float64Builder).Append(r[c].(float64))
		}
	}
	return vector.New(b.NewRecordBatch())
}

const benchDDL = `(sensor_id text, window_start bigint, window_end bigint, readings bigint,
	avg_temp double precision, min_temp double precision, max_temp double precision%s)`

// BenchmarkSink writes sensor windows, 1024 rows per Write, through the
// sink into an unlogged table (append: binary COPY; upsert: the latest
// change per key, one INSERT ... ON CONFLICT over arrays per 20000 rows,
// over 10k sensors, whose rows replace each other, or over distinct
// ones), at least once and exactly once (a checkpoint every 50 batches),
// beside hand-written baselines over the same rows with pgx: CopyFrom of
// [][]any, and a pipelined batch of one INSERT ... ON CONFLICT per row.
// The batches are built outside the timer; rows/s counts rows written.
func BenchmarkSink(b *testing.B) {
	srv, db, url := SharedDatabase(b)
	conn := srv.Connect(b, db)
	mem := memory.NewGoAllocator()
	report := func(b *testing.B, rows int, d time.Duration) {
		b.ReportMetric(float64(rows)/d.Seconds(), "rows/s")
	}
	for _, tc := range []struct {
		mode string
		keys int // distinct sensors: rows of one sensor replace each other in upsert mode
	}{{"append", 10000}, {"upsert", 10000}, {"upsert", 1 << 30}} {
		name := "mode=" + tc.mode
		if tc.mode == "upsert" {
			if tc.keys < 1<<30 {
				name += fmt.Sprintf(",keys=%dk", tc.keys/1000)
			} else {
				name += ",keys=distinct"
			}
		}
		// Batches, reused (Write releases its batch: retained first); rows
		// differ from batch to batch so that distinct keys stay distinct
		// up to 64 batches.
		var batches []*vector.Batch
		for i := 0; i < 64; i++ {
			batches = append(batches, benchBatchOf(mem, i*benchBatch, tc.keys))
		}
		pk := ""
		if tc.mode == "upsert" {
			pk = ", PRIMARY KEY (sensor_id)"
		}
		for _, guarantee := range []string{"at_least_once", "exactly_once"} {
			b.Run(name+",guarantee="+guarantee, func(b *testing.B) {
				table := "bench_sink"
				srv.Exec(b, db, "DROP TABLE IF EXISTS "+table+"; CREATE UNLOGGED TABLE "+table+fmt.Sprintf(benchDDL, pk))
				s, err := openSink(b, url, table, benchSchema, "mode", tc.mode, "primary_key", "sensor_id", "delivery_guarantee", guarantee, "batch_rows", "20000")
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				tx, _ := s.(*TxSink)
				if tx != nil {
					tx.StartTransactions()
				}
				b.ResetTimer()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					bt := batches[i%len(batches)]
					bt.Rec.Retain()
					if err := s.Write(&vector.Batch{Rec: bt.Rec}); err != nil {
						b.Fatal(err)
					}
					if tx != nil && i%50 == 49 { // a checkpoint every 50k rows
						benchCheckpoint(b, tx, uint64(i+1))
					}
				}
				if tx != nil {
					benchCheckpoint(b, tx, uint64(b.N+1))
				} else if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
				report(b, b.N*benchBatch, time.Since(start))
			})
		}
		b.Run(name+",baseline=pgx", func(b *testing.B) {
			table := "bench_base"
			srv.Exec(b, db, "DROP TABLE IF EXISTS "+table+"; CREATE UNLOGGED TABLE "+table+fmt.Sprintf(benchDDL, pk))
			rows := make([][]any, 64*benchBatch)
			for i := range rows {
				rows[i] = benchRow(i, tc.keys)
			}
			cols := []string{"sensor_id", "window_start", "window_end", "readings", "avg_temp", "min_temp", "max_temp"}
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N*benchBatch; {
				at := done % len(rows)
				n := min(20*benchBatch, len(rows)-at, b.N*benchBatch-done)
				if tc.mode == "append" {
					if _, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows[at:at+n])); err != nil {
						b.Fatal(err)
					}
				} else {
					var batch pgx.Batch
					for _, r := range rows[at : at+n] {
						batch.Queue(`INSERT INTO `+table+` VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (sensor_id) DO UPDATE SET
							window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, readings = EXCLUDED.readings,
							avg_temp = EXCLUDED.avg_temp, min_temp = EXCLUDED.min_temp, max_temp = EXCLUDED.max_temp`, r...)
					}
					if err := conn.SendBatch(ctx, &batch).Close(); err != nil {
						b.Fatal(err)
					}
				}
				done += n
			}
			report(b, b.N*benchBatch, time.Since(start))
		})
	}
}

// benchCheckpoint is a checkpoint without a store: the barrier's
// PreCommit, the snapshot's assignment and the commit.
func benchCheckpoint(b *testing.B, tx *TxSink, id uint64) {
	if err := tx.PreCommit(); err != nil {
		b.Fatal(err)
	}
	tx.Assign(id)
	if err := tx.Commit(id); err != nil {
		b.Fatal(err)
	}
}
