# Helpers shared by the bench/*.sh scripts (sourced, not run).

# need CMD PACKAGE: install Debian PACKAGE if CMD is missing.
need() {
  command -v "$1" >/dev/null 2>&1 && return
  echo "installing $2 (for $1)" >&2
  apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
}

# freeport: an unused TCP port on loopback.
freeport() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# waitport PORT: wait up to 30 s for a listener on 127.0.0.1:PORT.
waitport() {
  for _ in $(seq 300); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

# start_work: make the temporary directory $work and, at exit, kill the
# background processes whose pids the script appends to pids and remove
# $work.
start_work() {
  work=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
}

# build_caskade DIR: build the caskade binary into DIR.
build_caskade() {
  (cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$1/caskade" ./cmd/caskade)
}

# ratio A B: A/B with two decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# median reads numbers separated by blanks or newlines and prints the median
# (the upper one of an even count).
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# cputicks PID: the user+system CPU time of process PID so far, in clock
# ticks (getconf CLK_TCK a second).
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
