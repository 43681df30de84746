#!/usr/bin/env bash
# Builds Prometheus 3 (the server) from the Go module proxy, without
# service discovery (-tags remove_all_sd: static targets are all the
# tests use), once into a cache directory named by its version. The
# observability tests start it on 127.0.0.1 to scrape a Coordinator and
# Workers (telemetry/oteltest). .ci/install-deps.sh calls it.
#
#   --check            build nothing: print its path or "missing", and
#                      exit 1 when it is missing
#   CLINK_TOOLS_CACHE  cache directory (default $HOME/.cache/clink-tools)
set -euo pipefail

# Go module version v0.316.0 is Prometheus 3.x's server.
PROMETHEUS_VERSION=v0.316.0
cache="${CLINK_TOOLS_CACHE:-$HOME/.cache/clink-tools}"
dir="$cache/prometheus-$PROMETHEUS_VERSION"
out="$dir/prometheus"

if [ "${1:-}" = --check ]; then
  if [ -x "$out" ]; then
    echo "prometheus: $out"
    exit 0
  fi
  echo "prometheus: missing (not in $out)"
  exit 1
fi
[ -x "$out" ] && exit 0
echo "install-prometheus: building Prometheus $PROMETHEUS_VERSION (-tags remove_all_sd; about 2 minutes cold)"
mkdir -p "$dir"
GOBIN="$dir.tmp" go install -tags remove_all_sd "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION"
mv "$dir.tmp/prometheus" "$out"
rmdir "$dir.tmp"
echo "install-prometheus: $out"
