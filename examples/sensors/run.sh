#!/usr/bin/env bash
# Runs the reference sensor pipeline end to end and verifies its output:
#   1. builds bin/clink (unless $CLINK names an engine binary) and the
#      example's gen and verify tools into bin/ at the repository root,
#   2. generates data/readings.jsonl,
#   3. runs pipeline.sql with the engine (output in out/),
#   4. verifies out/ against the workload definition; exits with its status.
# Extra arguments are workload flags (-sensors -ticks -n -start -late-sensor
# -late-by) and are passed to both gen and verify, e.g. ./run.sh -n 1000000
set -euo pipefail

orig_dir=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(cd ../.. && pwd)

if [[ -z "${CLINK:-}" ]]; then
  echo "run.sh: building $root/bin/clink" >&2
  (cd "$root" && go build -o bin/clink ./cmd/clink)
  CLINK=$root/bin/clink
elif [[ $CLINK == */* && $CLINK != /* ]]; then
  CLINK=$orig_dir/$CLINK # a relative path given by the caller
fi

(cd "$root" && go build -o bin/sensors-gen ./examples/sensors/gen &&
  go build -o bin/sensors-verify ./examples/sensors/verify)

mkdir -p data
"$root/bin/sensors-gen" -out data/readings.jsonl "$@"
echo "run.sh: generated $(wc -l <data/readings.jsonl) readings in data/readings.jsonl" >&2

rm -rf out
echo "run.sh: $CLINK run pipeline.sql" >&2
"$CLINK" run pipeline.sql

status=0
"$root/bin/sensors-verify" -in out -lag 3000 -window 10000 "$@" || status=$?
exit "$status"
