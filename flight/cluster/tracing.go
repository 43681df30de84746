package cluster

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/clink-dev/clink/checkpoint"
)

// The Coordinator's spans (docs/observability.md#traces): one trace per
// job. clink.submit is its root; clink.restore, clink.rescale,
// clink.checkpoint, clink.savepoint and clink.restart are its children,
// each written when what it times has ended (a span is exported when it
// ends: a job-long span would show nothing while the job runs). The
// root's context is kept with the job, and persisted with HA, so that a
// new leader's spans join the same trace.

// tracer is the Coordinator's tracer (a no-op without telemetry).
func (c *Coordinator) tracer() trace.Tracer { return c.tel.Tracer() }

// jobAttrs are the attributes every span of j carries.
func jobAttrs(j *job, attempt int) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("clink.job.id", j.id),
		attribute.String("clink.job.name", j.name),
		attribute.Int("clink.job.attempt", attempt),
		attribute.Int64("clink.leader.epoch", int64(j.epoch)),
	}
}

// jobContext is the context of j's trace: its submit span as the parent.
func (j *job) traceContext() context.Context {
	ctx := context.Background()
	if j.trace.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, j.trace)
	}
	return ctx
}

// spanSubmit records the submission (from start, now over) and makes it
// j's trace root.
func (c *Coordinator) spanSubmit(j *job, start time.Time) {
	_, span := c.tracer().Start(context.Background(), "clink.submit", trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(append(jobAttrs(j, 0),
			attribute.Int("clink.job.parallelism", j.parallelism),
			attribute.String("clink.job.guarantee", j.guarantee))...))
	j.trace = span.SpanContext()
	span.End()
}

// spanRestore records an attempt's restore of checkpoint id (and a
// rescale when its parallelism differs from the job's).
func (c *Coordinator) spanRestore(j *job, attempt int, id uint64, start time.Time) {
	attrs := append(jobAttrs(j, attempt), attribute.Int64("clink.checkpoint.id", int64(id)))
	from := 0
	if j.store != nil {
		if ck, err := j.store.Open(id); err == nil {
			from = partsParallelism(ck.Manifest.Parts)
		}
	}
	if from > 0 {
		attrs = append(attrs, attribute.Int("clink.restore.parallelism_from", from))
	}
	attrs = append(attrs, attribute.Int("clink.job.parallelism", j.parallelism))
	_, span := c.tracer().Start(j.traceContext(), "clink.restore", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End()
	if from > 0 && from != j.parallelism {
		_, rs := c.tracer().Start(j.traceContext(), "clink.rescale", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
		rs.End()
	}
}

// partsParallelism is the parallelism a checkpoint's parts were written
// at (0: no parts).
func partsParallelism(parts []checkpoint.PartInfo) int {
	n := 0
	for _, p := range parts {
		n = max(n, p.Subtask+1)
	}
	return n
}

// spanCheckpoint records a checkpoint (or savepoint) from its trigger to
// its outcome, with an event per operator: its parts' bytes and rows.
func (c *Coordinator) spanCheckpoint(j *job, attempt int, p *pendingCk, status, reason string, parts []checkpoint.PartInfo) {
	name := "clink.checkpoint"
	if p.kind == "savepoint" {
		name = "clink.savepoint"
	}
	var bytes int64
	for _, pi := range parts {
		bytes += pi.Bytes
	}
	_, span := c.tracer().Start(j.traceContext(), name, trace.WithTimestamp(p.start), trace.WithAttributes(append(jobAttrs(j, attempt),
		attribute.Int64("clink.checkpoint.id", int64(p.id)),
		attribute.String("clink.checkpoint.kind", p.kind),
		attribute.String("clink.checkpoint.status", status),
		attribute.Int64("clink.checkpoint.bytes", bytes),
		attribute.Int("clink.checkpoint.parts", len(parts)),
		attribute.Int64("clink.checkpoint.duration_ms", time.Since(p.start).Milliseconds()),
		attribute.Float64("clink.checkpoint.sync_duration_ms", p.syncMS))...))
	type opSum struct{ bytes, rows, parts int64 }
	var order []string
	ops := map[string]*opSum{}
	for _, pi := range parts {
		s, ok := ops[pi.Operator]
		if !ok {
			s = &opSum{}
			ops[pi.Operator] = s
			order = append(order, pi.Operator)
		}
		s.bytes += pi.Bytes
		s.rows += pi.Rows
		s.parts++
	}
	for _, op := range order {
		s := ops[op]
		span.AddEvent("operator "+op, trace.WithAttributes(
			attribute.String("clink.operator", op),
			attribute.Int64("clink.checkpoint.bytes", s.bytes),
			attribute.Int64("clink.checkpoint.rows", s.rows),
			attribute.Int64("clink.checkpoint.parts", s.parts)))
	}
	if status != "COMPLETED" {
		span.SetStatus(codes.Error, reason)
	}
	span.End()
}

// spanRestart records a failed attempt's restart: from the failure to
// the decision, with the reason.
func (c *Coordinator) spanRestart(j *job, attempt, restarts int, reason string, start time.Time) {
	_, span := c.tracer().Start(j.traceContext(), "clink.restart", trace.WithTimestamp(start), trace.WithAttributes(append(jobAttrs(j, attempt),
		attribute.Int("clink.job.restarts", restarts),
		attribute.String("clink.restart.reason", reason))...))
	span.SetStatus(codes.Error, reason)
	span.End()
}

// traceIDs are j's trace root as hex, for the HA job store.
func traceIDs(sc trace.SpanContext) (string, string) {
	if !sc.IsValid() {
		return "", ""
	}
	return sc.TraceID().String(), sc.SpanID().String()
}

// traceFrom is the span context the HA job store kept (invalid when it
// kept none).
func traceFrom(traceID, spanID string) trace.SpanContext {
	tid, err1 := trace.TraceIDFromHex(traceID)
	sid, err2 := trace.SpanIDFromHex(spanID)
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}
