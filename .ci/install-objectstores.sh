#!/usr/bin/env bash
# Installs the object-store servers the objectstore tests start on
# 127.0.0.1 (connectors/objectstore/ostest): MinIO (S3), fake-gcs-server
# (GCS) and Azurite (Azure Blob). Each is built or installed once into a
# cache directory named by its version, and skipped when already there;
# the tests look there (and on PATH). MinIO is AGPL: it is only ever run
# as an external binary, never imported. .ci/install-deps.sh calls it.
#
#   --check            install nothing: print each server's path or
#                      "missing", and exit 1 when one is missing
#   CLINK_TOOLS_CACHE  cache directory (default $HOME/.cache/clink-tools)
#   SUDO               the command apt runs under for npm (default: sudo
#                      unless root; .ci/install-deps.sh sets it)
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0

cache="${CLINK_TOOLS_CACHE:-$HOME/.cache/clink-tools}"
minio="$cache/minio-$MINIO_VERSION/minio"
fakegcs="$cache/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server"
azurite_dir="$cache/azurite-$AZURITE_VERSION"
azurite="$azurite_dir/node_modules/.bin/azurite-blob"

if [ "${1:-}" = --check ]; then
  rc=0
  for p in "minio $MINIO_VERSION:$minio" "fake-gcs-server $FAKE_GCS_VERSION:$fakegcs" "azurite $AZURITE_VERSION:$azurite"; do
    if [ -x "${p#*:}" ]; then
      echo "${p%%:*}: ${p#*:}"
    else
      echo "${p%%:*}: missing (not in ${p#*:})"
      rc=1
    fi
  done
  exit $rc
fi
mkdir -p "$cache"

# go_tool MODULE VERSION NAME: go install MODULE@VERSION into
# $cache/NAME-VERSION/ unless the binary is there.
go_tool() {
  local mod=$1 ver=$2 name=$3
  local dir="$cache/$name-$ver"
  if [ -x "$dir/$name" ]; then
    echo "$name $ver: cached in $dir"
    return
  fi
  echo "$name $ver: building (go install $mod@$ver) ..."
  mkdir -p "$dir.tmp"
  GOBIN="$dir.tmp" GOFLAGS=-mod=mod go install "$mod@$ver"
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "$name $ver: installed in $dir"
}

go_tool github.com/minio/minio "$MINIO_VERSION" minio
go_tool github.com/fsouza/fake-gcs-server "$FAKE_GCS_VERSION" fake-gcs-server

if [ -x "$azurite" ]; then
  echo "azurite $AZURITE_VERSION: cached in $azurite_dir"
else
  if ! command -v npm >/dev/null 2>&1; then
    if [ -n "${SUDO+set}" ]; then sudo=$SUDO; else sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; fi
    $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "azurite $AZURITE_VERSION: npm install ..."
  rm -rf "$azurite_dir.tmp"
  mkdir -p "$azurite_dir.tmp"
  npm install --prefix "$azurite_dir.tmp" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null
  rm -rf "$azurite_dir"
  mv "$azurite_dir.tmp" "$azurite_dir"
  echo "azurite $AZURITE_VERSION: installed in $azurite_dir"
fi

# Each binary runs: a broken install fails here, not in the tests.
"$minio" --version >/dev/null
echo "minio $MINIO_VERSION: $minio"
"$fakegcs" -help >/dev/null 2>&1 || [ $? = 2 ]
echo "fake-gcs-server $FAKE_GCS_VERSION: $fakegcs"
echo "azurite-blob $("$azurite" --version): $azurite"
