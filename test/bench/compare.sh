#!/usr/bin/env bash
# Benchmarks lapis: the Go benchmarks of this package, then shared/tools/apibench against a lapis
# started here and, when shared/reference/reference-server starts, against the reference
# (apiextensions-apiserver on etcd with fsync on, REFERENCE_FSYNC=1, as lapis's embedded etcd
# has), printed side by side. Everything it starts is stopped when it exits.
#
#   test/bench/compare.sh [apibench flags, e.g. -n 2000 -c 8 -watchers 50]
#
# BENCHTIME (default 3x) is passed to `go test -benchtime`; GO_BENCH=0 skips the Go benchmarks,
# REFERENCE=0 the reference server.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
shared=${LAPIS_SHARED:-$repo/../shared}
work=$(mktemp -d "${TMPDIR:-/tmp}/lapis-bench.XXXXXX")
lapis_pid=
reference_dir=

# stop_reference stops the reference server started in $reference_dir and waits until it is gone.
stop_reference() {
  [ -n "$reference_dir" ] || return 0
  local pids
  pids=$(cat "$reference_dir"/*.pid 2>/dev/null || true)
  bash "$shared/reference/reference-server" stop "$reference_dir" >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do
    local alive=
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  reference_dir=
}

cleanup() {
  if [ -n "$lapis_pid" ]; then
    kill "$lapis_pid" 2>/dev/null || true
    wait "$lapis_pid" 2>/dev/null || true
  fi
  stop_reference
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$repo"
if [ "${GO_BENCH:-1}" != 0 ]; then
  echo "== go test ./test/bench/ -bench . -benchtime ${BENCHTIME:-3x}"
  go test ./test/bench/ -run '^$' -bench . -benchtime "${BENCHTIME:-3x}" -timeout 60m
  echo
fi

if [ ! -f "$shared/tools/apibench/run" ]; then
  echo "no $shared/tools/apibench: skipping the apibench comparison"
  exit 0
fi

echo "== apibench $* against lapis"
go build -o "$work/lapis" ./cmd/lapis
"$work/lapis" serve --data-dir "$work/lapis-data" --listen 127.0.0.1:0 >"$work/lapis.log" 2>&1 &
lapis_pid=$!
for _ in $(seq 1 600); do
  [ -f "$work/lapis-data/kubeconfig" ] && break
  kill -0 "$lapis_pid" 2>/dev/null || { cat "$work/lapis.log"; echo "lapis exited" >&2; exit 1; }
  sleep 0.1
done
[ -f "$work/lapis-data/kubeconfig" ] || { cat "$work/lapis.log"; echo "lapis did not become ready" >&2; exit 1; }
TMPDIR=$work bash "$shared/tools/apibench/run" "$work/lapis-data/kubeconfig" "$@" | tee "$work/lapis.txt"
kill "$lapis_pid" && wait "$lapis_pid" 2>/dev/null || true
lapis_pid=

have_reference=
if [ "${REFERENCE:-1}" != 0 ] && [ -f "$shared/reference/reference-server" ]; then
  echo
  echo "== apibench $* against the reference (REFERENCE_FSYNC=1)"
  reference_dir=$work/reference
  if kubeconfig=$(REFERENCE_FSYNC=1 bash "$shared/reference/reference-server" start "$reference_dir" 2>"$work/reference.err"); then
    TMPDIR=$work bash "$shared/tools/apibench/run" "$kubeconfig" "$@" | tee "$work/reference.txt"
    have_reference=1
  else
    echo "reference server did not start: $(tail -n 3 "$work/reference.err")"
  fi
  stop_reference
fi

# Side by side: one row per operation, throughput and p50/p99 latency of each server.
echo
[ -n "$have_reference" ] || : >"$work/reference.txt"
awk '
  function row(line,   f, i, out) {
    n = split(line, f, " ")
    out = sprintf("%11s", f[3])
    for (i = 1; i <= n; i++) if (f[i] ~ /^p(50|99)=/) out = out sprintf(" %12s", substr(f[i], 5))
    return out
  }
  FNR == 1 { file++ }
  file == 1 { order[++rows] = $1; lapis[$1] = row($0) }
  file == 2 { ref[$1] = row($0) }
  END {
    printf "%-28s %11s %12s %12s   %11s %12s %12s\n", "operation", "lapis ops/s", "p50", "p99", "ref ops/s", "p50", "p99"
    for (i = 1; i <= rows; i++) {
      k = order[i]
      printf "%-28s %s   %s\n", k, lapis[k], (k in ref) ? ref[k] : sprintf("%11s", "-")
    }
  }' "$work/lapis.txt" "$work/reference.txt"
