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

bench() { # PORT PIPELINE TEST PID -> "rps<TAB>server CPU µs per request"
  local before after rps
  before=$(cputicks "$4")
  rps=$("${cli[@]}" redis-benchmark -p "$1" -t "$3" -c 50 -n "$N" -r 1000000 -P "$2" -q --csv |
    awk -F'","' 'NR > 1 { gsub(/"/, "", $2); printf "%.0f\n", $2 }')
  after=$(cputicks "$4")
  printf "%s\t%s\n" "$rps" "$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$N" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
}

# redis_quiet PORT: wait (up to a minute) while the redis-server on PORT
# has a child rewriting its AOF or saving (Redis starts a rewrite by itself
# once its AOF has doubled): the child takes a whole core, under PIN=1 the
# one caskade's next run gets.
redis_quiet() {
  for _ in $(seq 300); do
    redis-cli -p "$1" info persistence | grep -Eq '^(aof_rewrite|rdb_bgsave)_in_progress:1' || return 0
    sleep 0.2
  done
}

echo "# redis-benchmark -t set,get,incr,mset -c 50 -n $N -r 1000000, caskade vs redis-server ($(redis-server --version | awk '{print $3}'))"
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)${srv:+, servers pinned to core 1 and the client to core 0}"
echo "# CPU: the server process's user+system time per request (median of the runs), steadier than"
echo "# requests/s on a shared machine; the CPU ratio is Redis's over caskade's (above 1: caskade uses less)."
echo

echo "| durability | pipeline | test | caskade req/s | redis req/s | ratio of medians | ratio per run ($REPS runs) | caskade CPU µs/req | redis CPU µs/req | CPU ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for mode in everysec always; do
  cport=$(freeport)
  "${srv[@]}" "$work/caskade" serve --dir "$work/c-$mode" --sync "$mode" --redis-addr "127.0.0.1:$cport" \
    --memcache-addr "" --http-addr "" 2>"$work/caskade-$mode.log" & pids+=($!); cpid=$!
  rport=$(freeport)
  mkdir -p "$work/r-$mode"
  "${srv[@]}" redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/r-$mode" --save "" \
    --appendonly yes --appendfsync "$mode" --daemonize no >"$work/redis-$mode.log" 2>&1 & pids+=($!); rpid=$!
  waitport "$cport"; waitport "$rport"
  for p in 1 16; do
    for t in set get incr mset; do
      c="" r="" cc="" rc="" runs=""
      for _ in $(seq "$REPS"); do
        redis_quiet "$rport"
        IFS=$'\t' read -r c1 cc1 < <(bench "$cport" "$p" "$t" "$cpid")
        IFS=$'\t' read -r r1 rc1 < <(bench "$rport" "$p" "$t" "$rpid")
        c+=" $c1" r+=" $r1" cc+=" $cc1" rc+=" $rc1" runs+=" $(ratio "$c1" "$r1")"
      done
      cm=$(echo "$c" | median) rm=$(echo "$r" | median)
      ccm=$(echo "$cc" | median) rcm=$(echo "$rc" | median)
      name=${t^^}; [ "$t" = mset ] && name="MSET (10 keys)"
      echo "| $mode | $p | $name | $cm | $rm | $(ratio "$cm" "$rm")x | $runs | $ccm | $rcm | $(ratio "$rcm" "$ccm")x |"
    done
  done
  kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=()
done
