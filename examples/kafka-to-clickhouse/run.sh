#!/usr/bin/env bash
# Kafka to ClickHouse on a Clink cluster, with the Worker killed mid-stream:
#   1. builds bin/clink, which runs `clink coordinator` and `clink worker`
#      (unless $CLINK names a clink binary), and the sensor example's gen
#      and verify tools into bin/ at the repository root;
#      installs clickhouse-server with apt-get if there is none,
#   2. starts, on 127.0.0.1 and free ports, with every file in one temporary
#      directory: the dev Kafka broker; a private ClickHouse server with the
#      table sensor_window_stats (a ReplacingMergeTree ordered by sensor and
#      window); one Coordinator and one Worker sharing a checkpoint directory,
#   3. creates the topic readings (4 partitions), submits pipeline.sql and
#      produces the 2,440 sensor readings at about $RATE per second (50),
#   4. SIGKILLs the Worker mid-stream, at the first checkpoint completed after
#      $KILL_AFTER seconds (15) plus 4 s, and starts it again a second later:
#      the Coordinator restarts the job from that checkpoint, so the windows
#      fired in those 4 s (pipeline.sql checkpoints every 5 s) are inserted
#      into ClickHouse again (the sink is at least once),
#   5. once every reading is produced, reads sensor_window_stats back with
#      ClickHouse's own SQL, every row inserted (merges, which would collapse
#      duplicates, are stopped), and runs the independent verifier on it
#      until it passes, for at most $VERIFY_TIMEOUT seconds (60): the 240
#      closed windows exact, the 8 that the watermark never passes absent,
#      any duplicate identical.
# Exit status 0 on PASS. On failure it prints the logs. Every process it
# started is killed and the temporary directory removed when it exits.
# KAFKA_PORT, CLICKHOUSE_HTTP_PORT, CLICKHOUSE_TCP_PORT, COORDINATOR_ADDR
# and COORDINATOR_HTTP_ADDR replace the free ports it picks.
set -euo pipefail

orig_dir=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(cd ../.. && pwd)

rate=${RATE:-50}
kill_after=${KILL_AFTER:-15}
verify_timeout=${VERIFY_TIMEOUT:-60}
lag_ms=3000 # pipeline.sql's watermark_lag_ms
window_ms=10000

say() { echo "run.sh: $*" >&2; }

if [[ -z "${CLINK:-}" ]]; then
  say "building $root/bin/clink"
  (cd "$root" && go build -o bin/clink ./cmd/clink)
  CLINK=$root/bin/clink
elif [[ $CLINK == */* && $CLINK != /* ]]; then
  CLINK=$orig_dir/$CLINK # a relative path given by the caller
fi
(cd "$root" && go build -o bin/sensors-gen ./examples/sensors/gen &&
  go build -o bin/sensors-verify ./examples/sensors/verify)

# clickhouse_binary sets ch_bin (and ch_args) as connectors/clickhouse/chtest
# finds the server: $CLINK_CLICKHOUSE_BINARY, clickhouse-server, or the single
# clickhouse binary's server mode.
clickhouse_binary() {
  ch_bin= ch_args=()
  if [[ -n ${CLINK_CLICKHOUSE_BINARY:-} ]]; then
    ch_bin=$(command -v "$CLINK_CLICKHOUSE_BINARY") || return 1
    [[ $(basename "$ch_bin") == clickhouse ]] && ch_args=(server)
    return 0
  fi
  local b
  for b in clickhouse-server /usr/sbin/clickhouse-server /usr/bin/clickhouse-server; do
    if ch_bin=$(command -v "$b"); then return 0; fi
  done
  for b in clickhouse /usr/bin/clickhouse; do
    if ch_bin=$(command -v "$b"); then
      ch_args=(server)
      return 0
    fi
  done
  return 1
}
if ! clickhouse_binary; then
  if [[ -n ${CLINK_CLICKHOUSE_BINARY:-} ]]; then
    say "CLINK_CLICKHOUSE_BINARY=$CLINK_CLICKHOUSE_BINARY is not an executable"
    exit 1
  fi
  say "no clickhouse-server: installing it with apt-get"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clickhouse-server >/dev/null
  clickhouse_binary || {
    say "clickhouse-server is still missing after apt-get install"
    exit 1
  }
fi

tmp=$(mktemp -d)
pids=() # every background process, stopped at exit in reverse order

# stop ends one process: SIGTERM, then SIGKILL after 5 s.
stop() {
  local pid=$1
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# forget PID: a process that has ended and been waited for (its pid may be
# reused) is not stopped at exit.
forget() {
  local i
  for i in "${!pids[@]}"; do
    [[ ${pids[i]} != "$1" ]] || unset 'pids[i]'
  done
  pids=("${pids[@]}")
}

show() { # FILE [LINES]: the end of a log, indented
  [[ -s $1 ]] || return 0
  echo "--- ${1#"$tmp"/} (last ${2:-60} lines):" >&2
  tail -n "${2:-60}" "$1" | sed 's/^/  /' >&2
}

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop "${pids[i]}"
  done
  if [[ $code != 0 ]]; then
    say "FAILED (exit $code); logs:"
    show "$tmp/coordinator.log" 200
    show "$tmp/worker.log" 80
    show "$tmp/submit.log"
    show "$tmp/produce.log"
    show "$tmp/broker.log" 20
    show "$tmp/clickhouse/log/server.err.log" 40
    show "$tmp/clickhouse/log/stdout.log" 20
  fi
  rm -rf "$tmp"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# free_port sets REPLY to a port on 127.0.0.1 that nothing listens on and
# that this script has not handed out yet, below Linux's ephemeral range
# (32768-60999) so that no outgoing connection holds it. Another process may
# still take it first: ClickHouse is started again on other ports if it
# cannot bind. (The broker and the Coordinator take port 0 and say which.)
given=" "
free_port() {
  local p
  for _ in $(seq 500); do
    p=$((20000 + RANDOM % 12000))
    [[ $given == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      given+="$p "
      REPLY=$p
      return 0
    fi
  done
  say "no free port found"
  return 1
}

# wait_for FILE REGEX SECONDS PID WHAT: waits until FILE has a line matching
# REGEX while PID lives.
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    if ! kill -0 "$4" 2>/dev/null; then
      say "$5 exited"
      return 1
    fi
    sleep 0.1
  done
  say "$5: no line matching '$2' in $1 after $3 s"
  return 1
}

# --- Kafka: the dev broker.
"$CLINK" kafka serve --port "${KAFKA_PORT:-0}" >"$tmp/broker.addr" 2>"$tmp/broker.log" &
pids+=($!)
wait_for "$tmp/broker.addr" . 10 "${pids[-1]}" "clink kafka serve"
brokers=$(head -n1 "$tmp/broker.addr")
say "Kafka dev broker on $brokers"

# --- ClickHouse: a private server, its files under $tmp/clickhouse.
ch=$tmp/clickhouse
ch_config() {
  cat >"$ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>information</level>
        <log>$ch/log/server.log</log>
        <errorlog>$ch/log/server.err.log</errorlog>
        <console>0</console>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$ch_http</http_port>
    <tcp_port>$ch_tcp</tcp_port>
    <path>$ch/data/</path>
    <tmp_path>$ch/tmp/</tmp_path>
    <user_files_path>$ch/user_files/</user_files_path>
    <format_schema_path>$ch/format_schemas/</format_schema_path>
    <users_config>$ch/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>67108864</mark_cache_size>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
EOF
  cat >"$ch/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
    <profiles><default></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default></default></quotas>
</yandex>
EOF
}

# start_clickhouse starts the server and waits until /ping answers Ok.;
# it fails if the server exits first (a port taken) or takes over 30 s.
start_clickhouse() {
  rm -rf "$ch"
  mkdir -p "$ch"/{data,tmp,user_files,format_schemas,log}
  ch_config
  (cd "$ch" && exec "$ch_bin" "${ch_args[@]}" --config-file="$ch/config.xml" >"$ch/log/stdout.log" 2>&1) &
  ch_pid=$!
  pids+=("$ch_pid")
  local i
  for ((i = 0; i < 300; i++)); do
    kill -0 "$ch_pid" 2>/dev/null || break
    if [[ $(curl -s --max-time 2 "http://127.0.0.1:$ch_http/ping" 2>/dev/null) == Ok. ]] && kill -0 "$ch_pid" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  stop "$ch_pid"
  forget "$ch_pid"
  return 1
}

started=
for attempt in 1 2 3; do
  if [[ -n ${CLICKHOUSE_HTTP_PORT:-} ]]; then ch_http=$CLICKHOUSE_HTTP_PORT; else free_port && ch_http=$REPLY; fi
  if [[ -n ${CLICKHOUSE_TCP_PORT:-} ]]; then ch_tcp=$CLICKHOUSE_TCP_PORT; else free_port && ch_tcp=$REPLY; fi
  if start_clickhouse; then
    started=1
    break
  fi
  say "ClickHouse did not start on ports $ch_http/$ch_tcp (attempt $attempt)"
  show "$ch/log/server.err.log" 5
  [[ -z ${CLICKHOUSE_HTTP_PORT:-}${CLICKHOUSE_TCP_PORT:-} ]] || break
done
[[ -n $started ]] || exit 1

# ch_query SQL OUT [SETTINGS]: runs SQL over ClickHouse's HTTP interface as
# the default user, the answer into OUT; a non-200 answer is an error.
ch_query() {
  local code
  code=$(curl -sS --max-time 60 -o "$2" -w '%{http_code}' --data-binary "$1" "http://127.0.0.1:$ch_http/?${3:-}") || return 1
  if [[ $code != 200 ]]; then
    say "ClickHouse: HTTP $code for: $1"
    sed 's/^/  /' "$2" >&2
    return 1
  fi
}

ch_query "SELECT version()" "$tmp/ch.out"
say "ClickHouse $(cat "$tmp/ch.out") ($ch_bin) on http 127.0.0.1:$ch_http, tcp $ch_tcp"
ch_query "CREATE TABLE sensor_window_stats (
  sensor_id    String,
  window_start DateTime,
  window_end   DateTime,
  readings     UInt64,
  avg_temp     Float64,
  min_temp     Float64,
  max_temp     Float64
) ENGINE = ReplacingMergeTree ORDER BY (sensor_id, window_start)" "$tmp/ch.out"
# Background merges would collapse duplicates before they are read: stopped,
# the verifier sees every row the sink inserted. FINAL collapses them below.
ch_query "SYSTEM STOP MERGES sensor_window_stats" "$tmp/ch.out"

# --- The cluster: one Coordinator, one Worker, one checkpoint directory.
"$CLINK" coordinator --addr "${COORDINATOR_ADDR:-127.0.0.1:0}" --http-addr "${COORDINATOR_HTTP_ADDR:-127.0.0.1:0}" \
  --checkpoint-dir "$tmp/checkpoints" >"$tmp/coordinator.log" 2>&1 &
pids+=($!)
wait_for "$tmp/coordinator.log" 'listening: flight [^ ]+, http ' 20 "${pids[-1]}" "clink coordinator"
listen=$(grep -m1 -oE 'listening: flight [^ ,]+, http [^ ]+' "$tmp/coordinator.log")
flight=$(sed -E 's/listening: flight ([^ ,]+), http .*/\1/' <<<"$listen")
api=$(sed -E 's/.*, http ([^ ]+)/\1/' <<<"$listen")
say "Coordinator: flight $flight, http $api; checkpoints in $tmp/checkpoints"

worker=
start_worker() {
  echo "=== clink worker --id worker-1 started at $(date -u +%T)" >>"$tmp/worker.log"
  "$CLINK" worker --coordinator "$flight" --slots 1 --id worker-1 >>"$tmp/worker.log" 2>&1 &
  worker=$!
  pids+=("$worker")
}
start_worker
wait_for "$tmp/coordinator.log" 'worker registered: worker-1' 20 "$worker" "clink worker"
say "Worker worker-1 registered (pid $worker)"

# job_field NAME: a top-level string or number of the job's JSON (GET
# /api/v1/jobs/ID, indented by two spaces per level); for an object, its
# "id" (latest_checkpoint). Empty if the Coordinator does not answer.
job_field() {
  local body
  body=$(curl -s --max-time 5 "http://$api/api/v1/jobs/$job") || return 0
  awk -v key="\"$1\":" '
    $1 == key && /^  "/ { v = $2; if (v != "{") { found = 1 } else { inside = 1; next } }
    inside && $1 == "\"id\":" && /^    "/ { v = $2; found = 1 }
    found { gsub(/[",]/, "", v); print v; exit }' <<<"$body"
}

# --- Kafka topic, job, readings.
"$CLINK" kafka create-topic --brokers "$brokers" --topic readings --partitions 4 >&2
sql=$tmp/pipeline.sql
sed -e "s/'localhost:9092'/'$brokers'/" -e "s/^\( *port *= *\)'9000'/\1'$ch_tcp'/" pipeline.sql >"$sql"
grep -q "'$brokers'" "$sql" && grep -q "'$ch_tcp'" "$sql" || {
  say "could not substitute the broker address and ClickHouse port in pipeline.sql"
  exit 1
}
if ! "$CLINK" run --coordinator "$flight" "$sql" >"$tmp/submit.out" 2>"$tmp/submit.log"; then
  say "clink run --coordinator failed: $(cat "$tmp/submit.out")"
  exit 1
fi
job=$(sed -n 's/^job_id=//p' "$tmp/submit.out")
[[ -n $job ]] || {
  say "clink run --coordinator did not print a job_id: $(cat "$tmp/submit.out")"
  exit 1
}
say "submitted pipeline.sql: job_id=$job, $(tr '\n' ' ' <"$tmp/submit.log")"
for _ in $(seq 100); do
  [[ $(job_field state) == RUNNING ]] && break
  sleep 0.1
done
[[ $(job_field state) == RUNNING ]] || {
  say "job $job is not RUNNING: $(curl -s --max-time 5 "http://$api/api/v1/jobs/$job")"
  exit 1
}

readings=$("$root/bin/sensors-gen" | wc -l)
say "producing $readings readings at $rate per second (about $((readings / rate)) s)"
mkfifo "$tmp/feed"
"$root/bin/sensors-gen" -rate "$rate" >"$tmp/feed" &
pids+=($!)
gen=$!
"$CLINK" kafka produce --brokers "$brokers" --topic readings --key-field sensor_id <"$tmp/feed" >"$tmp/produce.log" 2>&1 &
pids+=($!)
producer=$!
started_at=$SECONDS

# --- SIGKILL the Worker mid-stream, start it again. The kill comes 4 s
# after a checkpoint, 1 s before the next: the most there is to replay.
sleep "$kill_after"
ck=$(job_field latest_checkpoint)
for _ in $(seq 100); do
  [[ $(job_field latest_checkpoint) == "$ck" ]] || break
  sleep 0.1
done
ck=$(job_field latest_checkpoint)
sleep 4
kill -0 "$producer" 2>/dev/null || {
  say "the producer ended before the Worker was killed (KILL_AFTER=$kill_after is too late)"
  exit 1
}
say "$((SECONDS - started_at)) s in: job $job $(job_field state), checkpoint $ck completed 4 s ago; SIGKILL worker-1 (pid $worker)"
kill -9 "$worker"
wait "$worker" 2>/dev/null || true
forget "$worker"
sleep 1
start_worker
say "worker-1 started again (pid $worker)"

if ! wait "$producer"; then
  say "clink kafka produce failed"
  exit 1
fi
wait "$gen"
forget "$producer"
forget "$gen"
say "$(tail -n1 "$tmp/produce.log") in $((SECONDS - started_at)) s"

# --- Verify: ClickHouse's rows, read with ClickHouse's SQL, against the
# workload's definition. No FINAL: every stored row, duplicates included.
# window_start/end go back to epoch ms, as the verifier expects, and 64-bit
# integers as JSON numbers (ClickHouse quotes them by default).
select="SELECT sensor_id,
  toInt64(toUnixTimestamp(window_start)) * 1000 AS window_start,
  toInt64(toUnixTimestamp(window_end)) * 1000 AS window_end,
  readings, avg_temp, min_temp, max_temp
FROM sensor_window_stats FORMAT JSONEachRow"
deadline=$((SECONDS + verify_timeout))
while :; do
  state=$(job_field state)
  if [[ $state == FAILED || $state == CANCELED || $state == FINISHED ]]; then
    say "job $job is $state: $(curl -s --max-time 5 "http://$api/api/v1/jobs/$job")"
    exit 1
  fi
  ch_query "$select" "$tmp/windows.jsonl" "output_format_json_quote_64bit_integers=0"
  if "$root/bin/sensors-verify" -in "$tmp/windows.jsonl" -closed-only -allow-duplicates \
    -lag "$lag_ms" -window "$window_ms" >"$tmp/verify.out" 2>"$tmp/verify.err"; then
    break
  fi
  if ((SECONDS >= deadline)); then
    cat "$tmp/verify.err" >&2
    say "no PASS within $verify_timeout s after the last reading; the verifier's last answer:"
    cat "$tmp/verify.out"
    exit 1
  fi
  sleep 2
done

echo "run.sh: the Coordinator's log around the kill:" >&2
grep -E 'worker lost|awaiting_restart|waiting for capacity|worker registered|restore point|starting fresh|attempt [0-9]+ running' \
  "$tmp/coordinator.log" | sed 's/^/  /' >&2
restarts=$(job_field restarts)
ch_query "SELECT count() FROM sensor_window_stats" "$tmp/stored"
ch_query "SELECT count() FROM sensor_window_stats FINAL" "$tmp/final"
say "job $job: $(job_field state), $restarts restart(s), latest checkpoint $(job_field latest_checkpoint)"
say "ClickHouse holds $(cat "$tmp/stored") rows in sensor_window_stats; SELECT ... FINAL (as a merge would) collapses them to $(cat "$tmp/final")"
cat "$tmp/verify.err" >&2
if [[ ${restarts:-0} == 0 ]]; then
  say "FAIL: the job was never restarted, so the kill showed nothing"
  cat "$tmp/verify.out"
  exit 1
fi
cat "$tmp/verify.out"
say "done in $SECONDS s"
