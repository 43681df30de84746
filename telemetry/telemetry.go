// Package telemetry sets up OpenTelemetry for a Clink process: traces
// and metrics exported over OTLP, configured the standard way, by the
// OTEL_* environment variables (the OpenTelemetry SDK specification's:
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL, the
// per-signal _TRACES_/_METRICS_ variants, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_EXPORTER, OTEL_METRICS_EXPORTER,
// OTEL_SDK_DISABLED), read by go.opentelemetry.io/contrib/exporters/autoexport.
//
// It is off unless configured: without an OTLP endpoint (or an explicit
// OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER) a process exports
// nothing and its tracer is a no-op. The metrics exported are those the
// process serves at /metrics (its Prometheus registry, through the
// OpenTelemetry Prometheus bridge), so the two never disagree.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promb "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config names the process and what it exports.
type Config struct {
	// Service is the default service.name (OTEL_SERVICE_NAME wins):
	// clink-coordinator, clink-worker, clink.
	Service string
	// Version is service.version.
	Version string
	// Gatherer is the process's Prometheus registry; its metrics are
	// exported over OTLP when metrics are on (nil: no metrics).
	Gatherer prometheus.Gatherer
}

// Telemetry is a process's OpenTelemetry: a tracer provider (no-op when
// traces are off) and the metric reader exporting Gatherer.
type Telemetry struct {
	traces  *sdktrace.TracerProvider
	metrics *sdkmetric.MeterProvider
	tp      trace.TracerProvider
	// Traces and Metrics say what is on (for the start-up line).
	Traces, Metrics bool
}

// Off is telemetry that exports nothing.
func Off() *Telemetry { return &Telemetry{tp: noop.NewTracerProvider()} }

// Start sets telemetry up from the environment.
func Start(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := os.Getenv
	t := Off()
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return t, nil
	}
	traces, metrics := signalOn(getenv, "TRACES"), signalOn(getenv, "METRICS") && cfg.Gatherer != nil
	if !traces && !metrics {
		return t, nil
	}
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithAttributes(semconv.ServiceName(cfg.Service))}
	if cfg.Version != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.Version)))
	}
	// From the environment last: OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES win over the defaults.
	res, err := resource.New(ctx, append(attrs, resource.WithFromEnv(), resource.WithHost())...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry resource: %v", err)
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("OpenTelemetry traces: %v", err)
		}
		t.traces = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)), sdktrace.WithResource(res))
		t.tp, t.Traces = t.traces, true
	}
	if metrics {
		// The producer autoexport's reader reads: the process's registry.
		// (A process setting telemetry up twice exports the second's.)
		g := cfg.Gatherer
		autoexport.WithFallbackMetricProducer(func(context.Context) (sdkmetric.Producer, error) {
			return promb.NewMetricProducer(promb.WithGatherer(g)), nil
		})
		reader, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			t.Shutdown(ctx)
			return nil, fmt.Errorf("OpenTelemetry metrics: %v", err)
		}
		t.metrics = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
		t.Metrics = true
	}
	return t, nil
}

// signalOn: an exporter is configured for the signal (TRACES, METRICS):
// an OTLP endpoint for it or for all, or its exporter named (not none).
func signalOn(getenv func(string) string, signal string) bool {
	switch e := strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER")); {
	case e == "none":
		return false
	case e != "":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// Tracer is the tracer of Clink's spans.
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return t.tp.Tracer("github.com/clink-dev/clink")
}

// Describe is the start-up line's words for what is exported.
func (t *Telemetry) Describe() string {
	switch {
	case t == nil || (!t.Traces && !t.Metrics):
		return "off"
	case t.Traces && t.Metrics:
		return "traces and metrics"
	case t.Traces:
		return "traces"
	}
	return "metrics"
}

// Shutdown flushes what is buffered (spans, a last metrics export) and
// stops, within ctx.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.traces != nil {
		errs = append(errs, t.traces.Shutdown(ctx))
	}
	if t.metrics != nil {
		errs = append(errs, t.metrics.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
