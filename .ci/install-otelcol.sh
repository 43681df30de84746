#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the observability tests start on
# 127.0.0.1 (receiver otlp, exporter file) with the collector builder,
# from .ci/otelcol/builder.yaml, once into a cache directory named by its
# version. .ci/install-deps.sh calls it; the tests find it through
# CLINK_OTELCOL or in the cache.
#
#   --check            build nothing: print its path or "missing", and
#                      exit 1 when it is missing
#   CLINK_TOOLS_CACHE  cache directory (default $HOME/.cache/clink-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

OTELCOL_VERSION=v0.161.0
# BUILD counts changes of builder.yaml at one version: the cache key.
BUILD=2
cache="${CLINK_TOOLS_CACHE:-$HOME/.cache/clink-tools}"
out="$cache/otelcol-$OTELCOL_VERSION-$BUILD/otelcol-clink"

if [ "${1:-}" = --check ]; then
  if [ -x "$out" ]; then
    echo "otelcol: $out"
    exit 0
  fi
  echo "otelcol: missing (not in $out)"
  exit 1
fi
[ -x "$out" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp .ci/otelcol/builder.yaml "$work/"
echo "install-otelcol: building the collector $OTELCOL_VERSION (collector builder)"
(cd "$work" && go run "go.opentelemetry.io/collector/cmd/builder@$OTELCOL_VERSION" --config builder.yaml >build.log 2>&1) || {
  tail -20 "$work/build.log" >&2
  exit 1
}
mkdir -p "$(dirname "$out")"
mv "$work/build/otelcol-clink" "$out"
echo "install-otelcol: $out"
