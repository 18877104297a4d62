#!/usr/bin/env bash
# redis-benchmark against caskade and redis-server on this machine, back to
# back in one run, printing requests/s and the caskade/Redis ratio per line:
# caskade --sync everysec vs Redis with appendonly yes + appendfsync
# everysec, and --sync always vs appendfsync always.
#
#   bench/redis.sh            (as root: installs redis-server/redis-tools if missing)
#   N=200000 bench/redis.sh   (requests per test; default 200000)
#   PIN=1 bench/redis.sh      (each server on core 1 and redis-benchmark on
#                              core 0: equal CPU for both servers, none
#                              taken from the client)
#   REPS=5 bench/redis.sh     (runs per line, caskade and Redis alternating;
#                              default 3: the table shows the medians and
#                              each run's ratio, because single runs on a
#                              shared machine move by up to 25%)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need redis-server redis-server
need redis-benchmark redis-tools
N=${N:-200000}
REPS=${REPS:-3}
srv=() cli=()
if [ "${PIN:-0}" = 1 ]; then
  srv=(taskset -c 1) cli=(taskset -c 0)
fi
start_work
build_caskade "$work"

bench() { # PORT PIPELINE -> "test<TAB>rps" lines
  "${cli[@]}" redis-benchmark -p "$1" -t set,get,incr,mset -c 50 -n "$N" -r 1000000 -P "$2" -q --csv |
    awk -F'","' 'NR > 1 { gsub(/"/, "", $1); gsub(/"/, "", $2); printf "%s\t%.0f\n", $1, $2 }'
}

echo "# redis-benchmark -t set,get,incr,mset -c 50 -n $N -r 1000000, caskade vs redis-server ($(redis-server --version | awk '{print $3}'))"
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)${srv:+, servers pinned to core 1 and the client to core 0}"
echo
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "| durability | pipeline | test | caskade req/s | redis req/s | ratio of medians | ratio per run ($REPS runs) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for mode in everysec always; do
  cport=$(freeport)
  "${srv[@]}" "$work/caskade" serve --dir "$work/c-$mode" --sync "$mode" --redis-addr "127.0.0.1:$cport" \
    --memcache-addr "" --http-addr "" 2>"$work/caskade-$mode.log" & pids+=($!)
  rport=$(freeport)
  mkdir -p "$work/r-$mode"
  "${srv[@]}" redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/r-$mode" --save "" \
    --appendonly yes --appendfsync "$mode" --daemonize no >"$work/redis-$mode.log" 2>&1 & pids+=($!)
  waitport "$cport"; waitport "$rport"
  for p in 1 16; do
    declare -A c r runs
    for _ in $(seq "$REPS"); do
      declare -A c1 r1
      while IFS=$'\t' read -r t v; do c1[$t]=$v; c[$t]+=" $v"; done < <(bench "$cport" "$p")
      while IFS=$'\t' read -r t v; do r1[$t]=$v; r[$t]+=" $v"; done < <(bench "$rport" "$p")
      for t in "${!c1[@]}"; do runs[$t]+=" $(ratio "${c1[$t]}" "${r1[$t]:-0}")"; done
      unset c1 r1
    done
    for t in SET GET INCR "MSET (10 keys)"; do
      cm=$(echo "${c[$t]:-0}" | median) rm=$(echo "${r[$t]:-0}" | median)
      echo "| $mode | $p | $t | $cm | $rm | $(ratio "$cm" "$rm")x | ${runs[$t]:- ?} |"
    done
    unset c r runs
  done
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=()
done
