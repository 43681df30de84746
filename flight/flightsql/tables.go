package flightsql

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A system table: its columns (Clink SQL types) and rows. A row holds,
// per column, an int64 (BIGINT), int32 (INT), float64 (DOUBLE), string
// (STRING) or nil.
type table struct {
	name string
	cols []column
	rows [][]any
}

type column struct {
	name, sql, doc string
}

// ddl declares the table over the memory connector.
func (t *table) ddl() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (", t.name)
	for i, c := range t.cols {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s` %s", c.name, c.sql)
	}
	fmt.Fprintf(&b, ") WITH ('connector' = '%s', 'table' = '%s')", memConnectorName, t.name)
	return b.String()
}

var (
	jobsCols = []column{
		{"id", "BIGINT", "the job id"},
		{"name", "STRING", "the job's name"},
		{"status", "STRING", "CREATED, RUNNING, RESTARTING, FINISHED, CANCELED or FAILED"},
		{"guarantee", "STRING", "the end-to-end guarantee (EXACTLY_ONCE, AT_LEAST_ONCE, NONE)"},
		{"parallelism", "INT", "subtasks per operator"},
		{"attempt", "INT", "the current attempt (0 first)"},
		{"restarts", "INT", "restarts after failures"},
		{"failures", "INT", "failed attempts"},
		{"latest_checkpoint_id", "BIGINT", "the newest completed checkpoint, NULL before the first"},
		{"start_time", "BIGINT", "submission time, epoch ms"},
		{"end_time", "BIGINT", "end time, epoch ms; NULL while it runs"},
		{"duration_ms", "BIGINT", "end (or now) minus start"},
		{"failure", "STRING", "the last failure, NULL without one"},
	}
	operatorsCols = []column{
		{"job_id", "BIGINT", "the job"},
		{"operator", "STRING", "the operator's name"},
		{"subtask", "INT", "the subtask"},
		{"worker", "STRING", "the Worker running it"},
		{"records_in", "BIGINT", "rows in"},
		{"records_out", "BIGINT", "rows out"},
		{"watermark", "BIGINT", "event-time watermark, epoch ms; NULL before the first"},
		{"watermark_lag_ms", "BIGINT", "now minus the watermark; NULL without one"},
		{"late_records_dropped", "BIGINT", "rows dropped as late"},
		{"records_skipped", "BIGINT", "bad records skipped or dead-lettered (sources)"},
	}
	checkpointsCols = []column{
		{"job_id", "BIGINT", "the job"},
		{"id", "BIGINT", "the checkpoint id"},
		{"status", "STRING", "COMPLETED, FAILED or IN_PROGRESS"},
		{"kind", "STRING", "checkpoint, final or savepoint"},
		{"trigger_time", "BIGINT", "epoch ms"},
		{"duration_ms", "BIGINT", "trigger to completion"},
		{"parts", "INT", "part files"},
		{"checkpointed_size", "BIGINT", "bytes this checkpoint wrote"},
		{"state_size", "BIGINT", "bytes of the full state, with the earlier files its delta parts build on"},
		{"sync_duration_ms", "DOUBLE", "the longest synchronous part of a subtask's snapshot"},
		{"path", "STRING", "the chk-<id> directory"},
		{"failure", "STRING", "why it failed, NULL otherwise"},
	}
	workersCols = []column{
		{"id", "STRING", "the Worker's id"},
		{"address", "STRING", "its Flight address"},
		{"slots", "INT", "task slots"},
		{"free_slots", "INT", "slots not in use"},
		{"last_heartbeat", "BIGINT", "epoch ms"},
	}
)

// systemTables are the tables of the catalog's current snapshot.
func systemTables(cat Catalog, now time.Time) []*table {
	jobs := &table{name: "jobs", cols: jobsCols}
	for _, j := range cat.Jobs() {
		end, dur := nullIf0(j.EndTime), now.UnixMilli()-j.StartTime
		if j.EndTime != 0 {
			dur = j.EndTime - j.StartTime
		}
		jobs.rows = append(jobs.rows, []any{jobID(j.ID), j.Name, j.Status, j.Guarantee, int32(j.Parallelism), int32(j.Attempt),
			int32(j.Restarts), int32(j.Failures), nullIf0(int64(j.LatestCheckpoint)), j.StartTime, end, dur, nullIfEmpty(j.Failure)})
	}
	ops := &table{name: "operators", cols: operatorsCols}
	for _, o := range cat.Operators() {
		var wm, lag any
		if o.Watermark != nil {
			wm, lag = *o.Watermark, now.UnixMilli()-*o.Watermark
		}
		ops.rows = append(ops.rows, []any{jobID(o.Job), o.Name, int32(o.Subtask), o.Worker, o.RecordsIn, o.RecordsOut, wm, lag, o.LateDropped, o.RecordsSkipped})
	}
	cks := &table{name: "checkpoints", cols: checkpointsCols}
	for _, c := range cat.Checkpoints() {
		cks.rows = append(cks.rows, []any{jobID(c.Job), int64(c.ID), c.Status, c.Kind, c.Trigger, c.Duration, int32(c.Parts), c.Bytes, c.StateSize,
			c.SyncMS, nullIfEmpty(c.Path), nullIfEmpty(c.Failure)})
	}
	wks := &table{name: "workers", cols: workersCols}
	for _, w := range cat.Workers() {
		wks.rows = append(wks.rows, []any{w.ID, w.Addr, int32(w.Slots), int32(w.Free), w.LastHeartbeat})
	}
	return []*table{jobs, ops, cks, wks}
}

// jobID is a job id as BIGINT (ids are sequential integers), NULL should
// one not be.
func jobID(id string) any {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil
	}
	return n
}

func nullIf0(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
