#!/usr/bin/env bash
# Installs PostgreSQL for the postgres sink's tests (Debian's postgresql
# package) unless its server binaries are already there, and prints the
# version. The tests (connectors/postgres/pgtest) start private servers
# of their own with initdb on free ports; they need initdb, postgres and
# psql, which Debian keeps in /usr/lib/postgresql/<major>/bin. A cluster
# the package's install starts (Debian's <major>/main on port 5432) is
# stopped again: nothing uses it. As root, the tests run the server as the
# 'postgres' user the package creates. .ci/install-deps.sh calls it.
#
#   --check             install nothing: print the bin directory or
#                       "missing", and exit 1 when it is missing
#   CLINK_POSTGRES_BIN  a bin directory to use instead (checked, not installed)
#   SUDO                the command apt runs under (default: sudo unless root;
#                       .ci/install-deps.sh sets it)
set -euo pipefail

# bindir prints the directory holding initdb, postgres and psql, or nothing.
bindir() {
  local d
  if [ -n "${CLINK_POSTGRES_BIN:-}" ]; then
    d=$CLINK_POSTGRES_BIN
    [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ] && echo "$d"
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5nr); do
    if [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ]; then
      echo "$d"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1; then
    d=$(dirname "$(command -v initdb)")
    [ -x "$d/postgres" ] && [ -x "$d/psql" ] && echo "$d"
  fi
  return 0
}

bin=$(bindir)
if [ "${1:-}" = --check ]; then
  if [ -z "$bin" ]; then
    echo "PostgreSQL: missing (no initdb, postgres and psql in ${CLINK_POSTGRES_BIN:-/usr/lib/postgresql/*/bin or on PATH})"
    exit 1
  fi
  echo "PostgreSQL in $bin: $("$bin/postgres" --version)"
  exit 0
fi
if [ -z "$bin" ]; then
  if [ -n "${CLINK_POSTGRES_BIN:-}" ]; then
    echo "CLINK_POSTGRES_BIN=$CLINK_POSTGRES_BIN has no initdb, postgres and psql" >&2
    exit 1
  fi
  if [ -n "${SUDO+set}" ]; then sudo=$SUDO; else sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; fi
  # Noninteractive: no debconf question may block the install.
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters --no-header 2>/dev/null | while read -r ver cluster _port status _rest; do
      if [ "$status" = online ]; then
        $sudo pg_ctlcluster "$ver" "$cluster" stop || true
      fi
    done
  fi
  bin=$(bindir)
  if [ -z "$bin" ]; then
    echo "installed postgresql, but found no initdb, postgres and psql in /usr/lib/postgresql/*/bin" >&2
    exit 1
  fi
fi
echo "PostgreSQL in $bin: $("$bin/postgres" --version)"
