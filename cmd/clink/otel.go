package main

import (
	"flag"
	"fmt"
	"os"
)

// otelFlags are the OpenTelemetry flags of the long-running commands:
// shorthands for the standard OTEL_* variables, which they set for the
// process (docs/observability.md). Without either, and without the
// variables, nothing is exported.
type otelFlags struct{ endpoint, protocol, logFormat string }

func (f *otelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "otlp-endpoint", "", "export traces and metrics over OTLP to this URL (sets OTEL_EXPORTER_OTLP_ENDPOINT; e.g. http://127.0.0.1:4318)")
	fs.StringVar(&f.protocol, "otlp-protocol", "", "grpc or http/protobuf (sets OTEL_EXPORTER_OTLP_PROTOCOL; default http/protobuf)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log lines as text or as JSON objects (json: time, level, msg, role, job_id, attempt, epoch, ...)")
}

// apply sets the variables the flags stand for.
func (f *otelFlags) apply() error {
	if f.logFormat != "text" && f.logFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	switch f.protocol {
	case "", "grpc", "http/protobuf":
	default:
		return fmt.Errorf("--otlp-protocol %q: want grpc or http/protobuf", f.protocol)
	}
	if f.endpoint != "" {
		os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f.endpoint)
	}
	if f.protocol != "" {
		os.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", f.protocol)
	}
	return nil
}
