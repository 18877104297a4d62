#!/usr/bin/env bash
# wrk with keep-alive against caskade's GET /v1/kv/{key} and against a
# minimal net/http handler serving the same bytes from a Go map
# (bench/cmd/mapserver), back to back in one run, printing requests/s and
# the ratio.
#
#   bench/http.sh            (as root: installs wrk if missing)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need wrk wrk
start_work
build_caskade "$work"
(cd "$here" && go build -o "$work/mapserver" ./cmd/mapserver)

cport=$(freeport); mport=$(freeport)
"$work/caskade" serve --dir "$work/c" --redis-addr "" --memcache-addr "" --http-addr "127.0.0.1:$cport" 2>"$work/caskade.log" & pids+=($!)
"$work/mapserver" -addr "127.0.0.1:$mport" & pids+=($!)
waitport "$cport"; waitport "$mport"
# The same 10,000 keys of 100 bytes in both.
value=$(head -c 100 /dev/zero | tr '\0' 'v')
for i in $(seq 0 9999); do printf 'loadgen:%08d\n' "$i"; done |
  xargs -P 8 -I{} curl -s -o /dev/null -X PUT --data-binary "$value" "http://127.0.0.1:$cport/v1/kv/{}"

rps() { wrk -t 2 -c 50 -d 10s "$1" | awk '/Requests\/sec/ { printf "%.0f\n", $2 }'; }
c=$(rps "http://127.0.0.1:$cport/v1/kv/loadgen:00000042")
m=$(rps "http://127.0.0.1:$mport/v1/kv/loadgen:00000042")
echo "# wrk -t 2 -c 50 -d 10s, keep-alive, one 100-byte value; $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| server | req/s | ratio (caskade / minimal handler) |"
echo "| --- | --- | --- |"
echo "| caskade GET /v1/kv/{key} | $c | $(ratio "$c" "$m")x |"
echo "| minimal net/http map handler | $m | |"
