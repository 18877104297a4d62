#!/usr/bin/env bash
# Two builds of caskade side by side under one redis-benchmark line, to see
# whether a change helps: on a shared machine, where a run moves by 20% and
# more, only runs of the two taken in turn, in one session, compare.
#
#   bench/redis-ab.sh OLD [NEW]      (revisions; NEW defaults to the work tree)
#   TEST=incr P=16 SYNC=always REPS=5 bench/redis-ab.sh HEAD~1
#
# Each build serves its own data directory (--sync $SYNC, default
# everysec), loaded first with $LOAD (default 2000000) pipelined random SETs
# over the same 1M keys, so that GET finds keys and the key directory has
# the same shape in both. Then redis-benchmark -t $TEST (default get) -c 50
# -n $N (default 1000000) -r 1000000 -P $P (default 16) runs REPS times
# (default 4) against each in turn. It prints each run's requests/s and the
# server's CPU time per request, and the NEW/OLD ratio of the medians.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need redis-benchmark redis-tools
[ $# -ge 1 ] || { sed -n '2,15p' "$0"; exit 2; }
TEST=${TEST:-get} P=${P:-16} SYNC=${SYNC:-everysec} N=${N:-1000000} REPS=${REPS:-4} LOAD=${LOAD:-2000000}
start_work

# build NAME REV: build caskade at REV (empty: the work tree) as $work/NAME.
build() {
  if [ -z "$2" ]; then
    build_caskade "$work" && mv "$work/caskade" "$work/$1"
    return
  fi
  mkdir -p "$work/src-$1"
  git -C "$here/.." archive "$2" | tar -x -C "$work/src-$1"
  (cd "$work/src-$1" && go build -o "$work/$1" ./cmd/caskade)
}
old=$(git -C "$here/.." rev-parse --short "$1")
new=${2:+$(git -C "$here/.." rev-parse --short "$2")}
build old "$old"
build new "$new"

declare -A port pid
for v in old new; do
  port[$v]=$(freeport)
  "$work/$v" serve --dir "$work/data-$v" --sync "$SYNC" --redis-addr "127.0.0.1:${port[$v]}" \
    --memcache-addr "" --http-addr "" 2>"$work/$v.log" & pids+=($!); pid[$v]=$!
  waitport "${port[$v]}"
  redis-benchmark -p "${port[$v]}" -t set -c 50 -n "$LOAD" -r 1000000 -P 16 -q >/dev/null
done

echo "# redis-benchmark -t $TEST -c 50 -n $N -r 1000000 -P $P, --sync $SYNC, old $old vs new ${new:-work tree}"
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rps cpu
for i in $(seq "$REPS"); do
  for v in old new; do
    before=$(cputicks "${pid[$v]}")
    r=$(redis-benchmark -p "${port[$v]}" -t "$TEST" -c 50 -n "$N" -r 1000000 -P "$P" -q --csv |
      awk -F'","' 'NR > 1 { gsub(/"/, "", $2); printf "%.0f\n", $2 }')
    after=$(cputicks "${pid[$v]}")
    c=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$N" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
    rps[$v]+=" $r" cpu[$v]+=" $c"
    echo "run $i $v: $r req/s, server CPU $c us/req"
  done
done
ro=$(echo "${rps[old]}" | median) rn=$(echo "${rps[new]}" | median)
co=$(echo "${cpu[old]}" | median) cn=$(echo "${cpu[new]}" | median)
echo "medians: old $ro req/s, $co us/req; new $rn req/s, $cn us/req; new/old throughput $(ratio "$rn" "$ro")x, CPU per request $(ratio "$cn" "$co")x"
