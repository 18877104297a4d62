#!/usr/bin/env bash
# The maintenance measurements of issue #3, in one run:
#
#  1. cmd/maintbench: Get and Set latency with and without a merge running,
#     merge throughput, backup and restore speed (see its doc comment);
#  2. bulk load of the same KEYS pairs (16-byte keys, 100-byte values), back
#     to back: `caskade load DIR < dump` of a dump stream written by
#     `caskade dump`, against `redis-cli --pipe < file` of RESP SET commands
#     into redis-server with --appendonly yes --appendfsync everysec
#     --save "". Also, for information, the same RESP file piped into
#     `caskade serve --sync everysec`, and `caskade load` with 1 MiB batches.
#
#   bench/maint.sh                              (as root: installs redis-server/redis-tools if missing)
#   KEYS=100000 bench/maint.sh -duration 1s -max-file-size 4000000
#                                               (KEYS pairs; extra arguments go to maintbench;
#                                               fewer keys need smaller files for merge to have work)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
need redis-server redis-server
need redis-cli redis-tools
KEYS=${KEYS:-1000000}
start_work
build_caskade "$work"
(cd "$here" && go build -o "$work/maintbench" ./cmd/maintbench)

# Which caskade the numbers are for (read-only git queries).
label="caskade work tree"
if rev=$(git -C "$here/.." rev-parse --short HEAD 2>/dev/null); then
  label="$label at commit $rev"
  if [ -n "$(git -C "$here/.." status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    label="$label, with uncommitted changes"
  fi
fi
echo "# maintenance benchmarks (issue #3): $KEYS keys, $label; $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$work/maintbench" -keys "$KEYS" "$@"
echo

# The pairs, once as a database for `caskade dump` and once as RESP.
"$work/maintbench" -keys "$KEYS" -gen-db "$work/src" -gen-resp "$work/set.resp"
"$work/caskade" dump "$work/src" -o "$work/pairs.dump" >&2
rm -rf "$work/src"
sync

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
rate() { awk -v n="$KEYS" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
# expect FILE PATTERN: fail unless FILE has a line matching PATTERN.
expect() {
  grep -q "$2" "$1" && return
  echo "unexpected output in $1 (want /$2/):" >&2
  cat "$1" >&2
  exit 1
}
# pipe PORT NAME: redis-cli --pipe of the RESP file into PORT; prints the seconds.
pipe() {
  local t0=$EPOCHREALTIME
  redis-cli -p "$1" --pipe <"$work/set.resp" >"$work/$2.out" 2>&1
  local t1=$EPOCHREALTIME
  expect "$work/$2.out" "errors: 0, replies: $KEYS\$"
  [ "$(redis-cli -p "$1" dbsize)" = "$KEYS" ] || { echo "$2: dbsize is not $KEYS" >&2; exit 1; }
  secs "$t0" "$t1"
}

# load NAME [FLAGS...]: `caskade load` of the dump into a new directory in a
# new process (open, batches without fsync, one final sync, close); prints
# the seconds.
load() {
  local name=$1; shift
  local t0=$EPOCHREALTIME
  "$work/caskade" load "$work/$name" "$@" <"$work/pairs.dump" >"$work/$name.out"
  local t1=$EPOCHREALTIME
  expect "$work/$name.out" "^loaded $KEYS pairs"
  secs "$t0" "$t1"
}

# (a) caskade load with its default batch size (--batch-bytes 1 MiB), and
# for information with 8 MiB batches.
cs=$(load c-load)
cs1=$(load c-load-8m --batch-bytes 8388608)

# (b) redis-cli --pipe into redis-server with an append-only file.
rport=$(freeport)
mkdir -p "$work/r"
redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/r" --save "" \
  --appendonly yes --appendfsync everysec --daemonize no >"$work/redis.log" 2>&1 & pids+=($!)
waitport "$rport"
rs=$(pipe "$rport" redis)

# (c) for information: the same RESP file into caskade's Redis front end.
cport=$(freeport)
"$work/caskade" serve --dir "$work/c-serve" --sync everysec --redis-addr "127.0.0.1:$cport" \
  --memcache-addr "" --http-addr "" 2>"$work/caskade.log" & pids+=($!)
waitport "$cport"
ss=$(pipe "$cport" caskade-serve)

echo "### Bulk load: $KEYS pairs, 16-byte keys, 100-byte values"
echo
echo "Wall time of the client command, input file in the page cache: dump stream (written by \`caskade dump\`) $(stat -c %s "$work/pairs.dump") bytes, RESP $(stat -c %s "$work/set.resp") bytes. redis-server $(redis-server --version | awk '{print $3}') with --appendonly yes --appendfsync everysec --save \"\"; every SET acknowledged (redis-cli --pipe: errors: 0, replies: $KEYS) and DBSIZE checked. Ratio: caskade load's keys/s ÷ the row's."
echo
echo "| load | seconds | keys/s | ratio | target: caskade faster |"
echo "| --- | --- | --- | --- | --- |"
echo "| \`caskade load DIR < dump\` (new DB, default --batch-bytes 1 MiB, one final sync) | $cs | $(rate "$cs") | — | |"
echo "| \`redis-cli --pipe < resp\` into redis-server, AOF everysec | $rs | $(rate "$rs") | $(ratio "$rs" "$cs")x | $(awk -v a="$rs" -v b="$cs" 'BEGIN { print (b < a) ? "met" : "missed" }') |"
echo "| (information) \`caskade load --batch-bytes 8388608 DIR < dump\` | $cs1 | $(rate "$cs1") | | |"
echo "| (information) \`redis-cli --pipe < resp\` into \`caskade serve --sync everysec\` | $ss | $(rate "$ss") | | |"
echo
echo "caskade load's own summaries (their times cover reading the stream, the batches and the final sync; not process start, open and close):"
echo
sed 's/^/    /' "$work/c-load.out" "$work/c-load-8m.out"
