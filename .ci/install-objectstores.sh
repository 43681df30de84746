#!/usr/bin/env bash
# Installs the object-store servers the objectstore tests start on
# 127.0.0.1 (connectors/objectstore/ostest): MinIO (S3), fake-gcs-server
# (GCS) and Azurite (Azure Blob). Each is built or installed once into a
# cache directory named by its version, and skipped when already there;
# the tests look there (and on PATH). MinIO is AGPL: it is only ever run
# as an external binary, never imported.
#
#   CLINK_TOOLS_CACHE  cache directory (default $HOME/.cache/clink-tools)
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.37.0

cache="${CLINK_TOOLS_CACHE:-$HOME/.cache/clink-tools}"
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

dir="$cache/azurite-$AZURITE_VERSION"
if [ -x "$dir/node_modules/.bin/azurite-blob" ]; then
  echo "azurite $AZURITE_VERSION: cached in $dir"
else
  if ! command -v npm >/dev/null 2>&1; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  echo "azurite $AZURITE_VERSION: npm install ..."
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  npm install --prefix "$dir.tmp" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
  echo "azurite $AZURITE_VERSION: installed in $dir"
fi

# Each binary runs: a broken install fails here, not in the tests.
"$cache/minio-$MINIO_VERSION/minio" --version >/dev/null
echo "minio $MINIO_VERSION: $cache/minio-$MINIO_VERSION/minio"
"$cache/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server" -help >/dev/null 2>&1 || [ $? = 2 ]
echo "fake-gcs-server $FAKE_GCS_VERSION: $cache/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server"
echo "azurite-blob $("$dir/node_modules/.bin/azurite-blob" --version): $dir/node_modules/.bin/azurite-blob"
