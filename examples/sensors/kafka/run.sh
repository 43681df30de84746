#!/usr/bin/env bash
# The sensor pipeline through Kafka, with nothing but the clink binary:
#   1. builds bin/clink (unless $CLINK names an engine binary) and the
#      example's gen and verify tools into bin/ at the repository root,
#   2. starts `clink kafka serve` (the embedded dev broker) in the background
#      on port $KAFKA_PORT (default 9092),
#   3. creates the topic readings with 4 partitions and produces the
#      generated workload into it with `clink kafka produce`, keyed by
#      sensor_id (Kafka's murmur2 partitioner: one partition per sensor),
#   4. runs pipeline.sql (Kafka source, bounded at the end offsets) into out/,
#   5. verifies out/ with ../verify, stops the broker, exits with the
#      verifier's status.
# Extra arguments are workload flags, passed to both gen and verify.
set -euo pipefail

orig_dir=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(cd ../../.. && pwd)

if [[ -z "${CLINK:-}" ]]; then
  echo "run.sh: building $root/bin/clink" >&2
  (cd "$root" && go build -o bin/clink ./cmd/clink)
  CLINK=$root/bin/clink
elif [[ $CLINK == */* && $CLINK != /* ]]; then
  CLINK=$orig_dir/$CLINK # a relative path given by the caller
fi
(cd "$root" && go build -o bin/sensors-gen ./examples/sensors/gen &&
  go build -o bin/sensors-verify ./examples/sensors/verify)

port=${KAFKA_PORT:-9092}
tmp=$(mktemp -d)
"$CLINK" kafka serve --port "$port" >"$tmp/addr" 2>"$tmp/broker.log" &
broker=$!
cleanup() {
  kill "$broker" 2>/dev/null || true
  wait "$broker" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
for _ in $(seq 100); do
  [[ -s $tmp/addr ]] && break
  if ! kill -0 "$broker" 2>/dev/null; then
    echo "run.sh: clink kafka serve failed:" >&2
    cat "$tmp/broker.log" >&2
    exit 1
  fi
  sleep 0.1
done
addr=$(head -n1 "$tmp/addr")
echo "run.sh: broker on $addr" >&2

"$CLINK" kafka create-topic --brokers "$addr" --topic readings --partitions 4
"$root/bin/sensors-gen" "$@" | "$CLINK" kafka produce --brokers "$addr" --topic readings --key-field sensor_id >&2

sql=pipeline.sql
if [[ $addr != localhost:9092 && $addr != 127.0.0.1:9092 ]]; then
  sql=$tmp/pipeline.sql
  sed "s/'localhost:9092'/'$addr'/" pipeline.sql >"$sql"
fi
rm -rf out
echo "run.sh: $CLINK run pipeline.sql (brokers $addr)" >&2
"$CLINK" run "$sql"

status=0
"$root/bin/sensors-verify" -in out -lag 3000 -window 10000 "$@" || status=$?
exit "$status"
