#!/usr/bin/env bash
# Runs kvbench's default suite (caskade against pebble, bbolt, badger and
# bitcask; 1M keys, 3 s per run; about 5 minutes on a 2-core machine) and
# writes the report to bench/results/ (git-ignored).
#
#   bench/engine.sh                    # default suite, caskade from the work tree (../)
#   bench/engine.sh -bigkeys=10000000  # add the 10M-key runs (slow)
#   bench/engine.sh -workloads=set -peers=pebble -reps=3
#   CASKADE_REV=HEAD bench/engine.sh   # caskade as committed at a revision
#
# Extra arguments are passed to kvbench as flags. With CASKADE_REV set, the
# revision is exported with `git archive` into a temporary directory and
# kvbench is built against it through a temporary -modfile, so a work tree
# in the middle of an edit neither breaks nor skews the run. Nothing in the
# repository is changed either way.
set -euo pipefail
cd "$(dirname "$0")"

# caskade comes from ../ through a replace directive, so when its go.mod
# gains a requirement this module's go.sum lags; let the go command fill it.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"

mkdir -p results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="results/kvbench-$stamp.md"
log="results/kvbench-$stamp.log"

modflag=()
label=""
if [ -n "${CASKADE_REV:-}" ]; then
  rev=$(git -C .. rev-parse --short "$CASKADE_REV")
  src=$(mktemp -d "${TMPDIR:-/tmp}/kvbench-caskade-$rev-XXXXXX")
  trap 'rm -rf "$src"' EXIT
  git -C .. archive "$rev" | tar -x -C "$src"
  sed "s|^replace github.com/caskade/caskade => .*|replace github.com/caskade/caskade => $src|" go.mod >"$src/bench.mod"
  cp go.sum "$src/bench.sum"
  modflag=(-modfile="$src/bench.mod")
  label="caskade commit $rev"
elif rev=$(git -C .. rev-parse --short HEAD 2>/dev/null); then
  # Record which caskade the numbers are for (read-only git queries).
  label="caskade work tree at commit $rev"
  if [ -n "$(git -C .. status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    label="$label, with uncommitted changes"
  fi
fi

echo "df -h ${TMPDIR:-/tmp}:"
df -h "${TMPDIR:-/tmp}" | tail -n 1

go run "${modflag[@]}" ./cmd/kvbench -label="$label" -out="$out" "$@" 2>&1 | tee "$log"
echo "report: bench/$out (progress log: bench/$log)"
