#!/usr/bin/env bash
# Gets and sets with 50 connections against caskade's memcached front end and
# a real memcached on this machine, back to back in one run, with the same Go
# load generator (server/memcache's BenchmarkLoad*: sets, gets, and noreply
# sets in pipelines of 100 ended by mn), printing ops/s, each
# server's CPU time per operation and the caskade/memcached ratios. caskade
# runs with its default --sync everysec, then with --sync always, where every
# set waits for an fsync that memcached, which writes nothing to disk, never
# pays.
#
#   bench/memcache.sh              (as root: installs memcached if missing)
#   OPS=400000 bench/memcache.sh   (operations per run; default 400000)
#   REPS=5 bench/memcache.sh       (runs per line, caskade and memcached
#                                   alternating; default 3: the table shows the
#                                   medians and every run's ratio)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need memcached memcached
start_work
build_caskade "$work"
(cd "$here/.." && go test -c -o "$work/loadgen.test" ./server/memcache)

OPS=${OPS:-400000}
REPS=${REPS:-3}
load() { # ADDR BENCH PID -> "ops/s<TAB>server CPU µs per operation"
  local before after rate
  before=$(cputicks "$3")
  rate=$(MEMCACHE_ADDR="$1" "$work/loadgen.test" -test.run '^$' -test.bench "^$2\$" -test.benchtime "${OPS}x" -loadgen.conns 50 |
    awk '/ns\/op/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") printf "%.0f\n", 1e9 / $i }')
  after=$(cputicks "$3")
  printf "%s\t%s\n" "$rate" "$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" -v n="$OPS" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')"
}

echo "# 50 connections, 10000 keys, 100-byte values, $OPS operations per run, $REPS runs per line (caskade and memcached in turn; medians); memcached $(memcached -V | awk '{print $2}') with -t $(nproc)"
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CPU: the server process's user+system time per operation (median of the runs), counting the load generator's"
echo "# two preloads of 10000 noreply sets (its 1-operation run, then the measured one) against the"
echo "# same servers; the CPU ratio is memcached's over caskade's (above 1: caskade uses less)."
echo
echo "| caskade --sync | op | caskade ops/s | memcached ops/s | ratio of medians | ratio per run ($REPS runs) | caskade CPU µs/op | memcached CPU µs/op | CPU ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
mport=$(freeport)
memcached -u root -l 127.0.0.1 -p "$mport" -U 0 -t "$(nproc)" -c 4096 -m 1024 & pids+=($!); mpid=$!
waitport "$mport"
for mode in everysec always; do  # the default policy, then the strictest
  cport=$(freeport)
  "$work/caskade" serve --dir "$work/c-$mode" --sync "$mode" --redis-addr "" --http-addr "" \
    --memcache-addr "127.0.0.1:$cport" 2>"$work/caskade-$mode.log" & cpid=$!
  waitport "$cport"
  for op in Set Get SetPipelined; do
    c="" m="" cc="" mc="" runs=""
    for _ in $(seq "$REPS"); do
      IFS=$'\t' read -r c1 cc1 < <(load "127.0.0.1:$cport" "BenchmarkLoad$op" "$cpid")
      IFS=$'\t' read -r m1 mc1 < <(load "127.0.0.1:$mport" "BenchmarkLoad$op" "$mpid")
      c+=" $c1" m+=" $m1" cc+=" $cc1" mc+=" $mc1" runs+=" $(ratio "$c1" "$m1")"
    done
    cm=$(echo "$c" | median) mm=$(echo "$m" | median)
    ccm=$(echo "$cc" | median) mcm=$(echo "$mc" | median)
    echo "| $mode | $op | $cm | $mm | $(ratio "$cm" "$mm")x | $runs | $ccm | $mcm | $(ratio "$mcm" "$ccm")x |"
  done
  kill "$cpid"; wait "$cpid" 2>/dev/null || true
done
