#!/usr/bin/env bash
# Fails when the tree holds what it must not: a tracked build output (an
# executable or object file: ELF, Mach-O, PE, or a Go test binary), or a
# go.mod/go.sum that `go mod tidy` would change (the main module's, or the
# test tools' in .ci/tools).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
  7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 4d5a*)
    echo "tracked build output: $f (magic $magic); remove it from git" >&2
    bad=1
    ;;
  esac
done < <(git ls-files -z)
if ! go mod tidy -diff >/dev/null 2>&1; then
  echo "go.mod/go.sum are not tidy; run go mod tidy:" >&2
  go mod tidy -diff >&2 || true
  bad=1
fi
if ! (cd .ci/tools && go mod tidy -diff >/dev/null 2>&1); then
  echo ".ci/tools/go.mod/go.sum are not tidy; run go mod tidy there:" >&2
  (cd .ci/tools && go mod tidy -diff >&2) || true
  bad=1
fi
exit $bad
