#!/usr/bin/env bash
# Installs what `make test` needs, or stops at once naming what is
# missing and how to install it (docs/testing.md). `make test` runs it
# first; so does CI, through `make test`.
#
#   from apt (with sudo unless root; noninteractive):
#     kcat, clickhouse-server, curl, chromium, a C compiler (gcc, g++: the race
#     detector and DuckDB are cgo), PostgreSQL (.ci/install-postgres.sh),
#     nodejs and npm when Azurite is to be installed
#   built once into the cache, by version:
#     MinIO, fake-gcs-server, Azurite (.ci/install-objectstores.sh;
#     about 9 minutes cold, MinIO's build), the OpenTelemetry Collector
#     (.ci/install-otelcol.sh; about 1-3 minutes cold), Prometheus
#     (.ci/install-prometheus.sh; about 2 minutes cold) and gotestsum (the
#     test runner, pinned by .ci/tools/go.mod)
#
# It installs only what is missing, then checks that everything is there.
# Without apt-get, or without root and a sudo that works, it installs
# nothing and stops, naming each missing program.
#
#   --check            install nothing: report, and exit 1 when something
#                      is missing
#   CLINK_TOOLS_CACHE  cache directory (default $HOME/.cache/clink-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=0
[ "${1:-}" = --check ] && check_only=1
cache="${CLINK_TOOLS_CACHE:-$HOME/.cache/clink-tools}"

if ! command -v go >/dev/null; then
  echo "install-deps: no go on PATH; install Go 1.26 (https://go.dev/dl/) first" >&2
  exit 1
fi
gotestsum_version=$(awk '$1 == "gotest.tools/gotestsum" { print $2 }' .ci/tools/go.mod)
gotestsum="$cache/gotestsum-$gotestsum_version/gotestsum"

# Each check prints what it found and returns 0, or returns 1.
# prog NAME prints the executable NAME resolves to (command -v alone
# also names a file that is not executable).
prog() {
  local p
  p=$(command -v "$1") && [ -x "$p" ] && [ ! -d "$p" ] && echo "$p"
}
have_kcat() { prog kcat; }
have_clickhouse() {
  local p
  if [ -n "${CLINK_CLICKHOUSE_BINARY:-}" ]; then
    prog "$CLINK_CLICKHOUSE_BINARY"
    return
  fi
  for p in clickhouse-server /usr/sbin/clickhouse-server /usr/bin/clickhouse-server clickhouse /usr/bin/clickhouse; do
    if prog "$p"; then return 0; fi
  done
  return 1
}
have_cc() {
  local cc cxx
  cc=$(go env CC) cxx=$(go env CXX)
  cc=$(prog "$cc") && cxx=$(prog "$cxx") && echo "$cc, $cxx"
}
have_curl() { prog curl; }
have_chromium() { prog chromium || prog chromium-browser; }
have_postgres() { ./.ci/install-postgres.sh --check | sed 's/^PostgreSQL in //'; }
# have_objectstore NAME: the line of NAME in install-objectstores.sh --check.
have_objectstore() {
  local line
  line=$({ ./.ci/install-objectstores.sh --check || true; } | grep "^$1 ")
  case $line in *": missing"*) return 1 ;; esac
  echo "${line#* }"
}
have_gotestsum() { [ -x "$gotestsum" ] && echo "$gotestsum"; }
have_otelcol() { ./.ci/install-otelcol.sh --check | sed 's/^otelcol: //'; }
have_prometheus() { ./.ci/install-prometheus.sh --check | sed 's/^prometheus: //'; }

# name | check | apt packages (empty: not from apt) | how to install by hand
components=(
  "kcat|have_kcat|kcat|apt-get install kcat"
  "clickhouse-server|have_clickhouse|clickhouse-server|apt-get install clickhouse-server (or CLINK_CLICKHOUSE_BINARY=/path/to/clickhouse)"
  "curl|have_curl|curl|apt-get install curl"
  "Chromium (headless, for the console's browser test)|have_chromium|chromium|apt-get install chromium"
  "C compiler ($(go env CC), $(go env CXX))|have_cc|gcc g++|apt-get install gcc g++"
  "PostgreSQL (initdb, postgres, psql)|have_postgres||apt-get install postgresql (or CLINK_POSTGRES_BIN=/path/to/bin)"
  "MinIO|have_objectstore minio||.ci/install-objectstores.sh (go install from the Go module proxy)"
  "fake-gcs-server|have_objectstore fake-gcs-server||.ci/install-objectstores.sh (go install from the Go module proxy)"
  "Azurite|have_objectstore azurite||.ci/install-objectstores.sh (npm install azurite; needs nodejs and npm)"
  "Prometheus|have_prometheus||.ci/install-prometheus.sh (go install -tags remove_all_sd from the Go module proxy)"
  "OpenTelemetry Collector|have_otelcol||.ci/install-otelcol.sh (the collector builder, from the Go module proxy)"
  "gotestsum $gotestsum_version|have_gotestsum||cd .ci/tools && go build -o $gotestsum gotest.tools/gotestsum"
)

# survey checks every component, prints one line each, and sets missing
# to the indexes of those not found.
missing=()
survey() {
  local i name check out
  missing=()
  for i in "${!components[@]}"; do
    IFS='|' read -r name check _ _ <<<"${components[$i]}"
    if out=$($check 2>&1); then
      echo "  found    $name: $(echo "$out" | paste -sd ';' | sed 's/;/; /g')"
    else
      echo "  missing  $name"
      missing+=("$i")
    fi
  done
}

# stop names every missing component with how to install it, and exits.
stop() {
  local i name how
  echo "install-deps: $1; make test needs:" >&2
  for i in "${missing[@]}"; do
    IFS='|' read -r name _ _ how <<<"${components[$i]}"
    printf '  %-40s %s\n' "$name" "$how" >&2
  done
  echo "(make test-quick runs the tests without them, skipping theirs: not the full test)" >&2
  exit 1
}

echo "install-deps: what make test needs (cache $cache)"
survey
if [ ${#missing[@]} = 0 ]; then
  echo "install-deps: all there"
  exit 0
fi
[ $check_only = 1 ] && stop "--check: installing nothing"

# What needs apt: the packages of the missing components, nodejs and npm
# for Azurite, and PostgreSQL through its script.
apt_pkgs=() need_apt=0 need_pg=0 need_os=0 need_gts=0 need_otelcol=0 need_prom=0
for i in "${missing[@]}"; do
  IFS='|' read -r _ check pkgs _ <<<"${components[$i]}"
  case $check in
  have_postgres) need_pg=1 need_apt=1 ;;
  "have_objectstore azurite")
    need_os=1
    prog npm >/dev/null || apt_pkgs+=(nodejs npm)
    ;;
  have_objectstore*) need_os=1 ;;
  have_gotestsum) need_gts=1 ;;
  have_otelcol) need_otelcol=1 ;;
  have_prometheus) need_prom=1 ;;
  *) apt_pkgs+=($pkgs) ;;
  esac
done
[ ${#apt_pkgs[@]} -gt 0 ] && need_apt=1

if [ $need_apt = 1 ]; then
  prog apt-get >/dev/null || stop "no apt-get here to install with"
  if [ "$(id -u)" = 0 ]; then
    SUDO=""
  elif ! prog sudo >/dev/null; then
    stop "not root and no sudo"
  elif [ -t 0 ]; then
    SUDO=sudo # a terminal: sudo may ask for the password
  elif sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    stop "not root, and sudo needs a password without a terminal to ask on"
  fi
  export SUDO
  if [ ${#apt_pkgs[@]} -gt 0 ]; then
    echo "install-deps: apt-get install ${apt_pkgs[*]}"
    $SUDO apt-get update -qq || stop "apt-get update failed (offline?)"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null ||
      stop "apt-get install ${apt_pkgs[*]} failed"
  fi
fi
if [ $need_pg = 1 ]; then
  echo "install-deps: PostgreSQL (.ci/install-postgres.sh)"
  ./.ci/install-postgres.sh || stop "installing PostgreSQL failed"
fi
if [ $need_os = 1 ]; then
  echo "install-deps: object stores (.ci/install-objectstores.sh)"
  ./.ci/install-objectstores.sh || stop "installing the object-store servers failed (offline? the Go module proxy and npm must be reachable)"
fi
if [ $need_otelcol = 1 ]; then
  ./.ci/install-otelcol.sh || stop "building the OpenTelemetry Collector failed (offline? the Go module proxy must be reachable)"
fi
if [ $need_prom = 1 ]; then
  ./.ci/install-prometheus.sh || stop "building Prometheus failed (offline? the Go module proxy must be reachable)"
fi
if [ $need_gts = 1 ]; then
  echo "install-deps: gotestsum $gotestsum_version: building into $(dirname "$gotestsum")"
  mkdir -p "$(dirname "$gotestsum")"
  rm -rf "$gotestsum.tmp"
  (cd .ci/tools && go build -o "$gotestsum.tmp" gotest.tools/gotestsum) ||
    stop "building gotestsum failed (offline? the Go module proxy must be reachable)"
  mv "$gotestsum.tmp" "$gotestsum"
fi

echo "install-deps: checking again"
survey
[ ${#missing[@]} = 0 ] || stop "still missing after installing"
echo "install-deps: all there"
