#!/usr/bin/env bash
# Gets and sets with 50 connections against caskade's memcached front end and
# a real memcached on this machine, back to back in one run, with the same Go
# load generator (server/memcache's BenchmarkLoad*), printing ops/s and the
# caskade/memcached ratio. caskade runs with its default --sync everysec, then
# with --sync always, where every set waits for an fsync that memcached,
# which writes nothing to disk, never pays.
#
#   bench/memcache.sh        (as root: installs memcached if missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need memcached memcached
start_work
build_caskade "$work"
(cd "$here/.." && go test -c -o "$work/loadgen.test" ./server/memcache)

load() { # ADDR BENCH -> ops/s
  MEMCACHE_ADDR="$1" "$work/loadgen.test" -test.run '^$' -test.bench "^$2\$" -test.benchtime 5s -loadgen.conns 50 |
    awk '/ns\/op/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") printf "%.0f\n", 1e9 / $i }'
}

echo "# 50 connections, 10000 keys, 100-byte values, 5 s per run; memcached $(memcached -V | awk '{print $2}') with -t $(nproc)"
echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| caskade --sync | op | caskade ops/s | memcached ops/s | ratio |"
echo "| --- | --- | --- | --- | --- |"
mport=$(freeport)
memcached -u root -l 127.0.0.1 -p "$mport" -U 0 -t "$(nproc)" -c 4096 -m 1024 & pids+=($!)
waitport "$mport"
for mode in everysec always; do  # the default policy, then the strictest
  cport=$(freeport)
  "$work/caskade" serve --dir "$work/c-$mode" --sync "$mode" --redis-addr "" --http-addr "" \
    --memcache-addr "127.0.0.1:$cport" 2>"$work/caskade-$mode.log" & cpid=$!
  waitport "$cport"
  for op in Set Get; do
    c=$(load "127.0.0.1:$cport" "BenchmarkLoad$op")
    m=$(load "127.0.0.1:$mport" "BenchmarkLoad$op")
    echo "| $mode | $op | $c | $m | $(ratio "$c" "$m")x |"
  done
  kill "$cpid"; wait "$cpid" 2>/dev/null || true
done
