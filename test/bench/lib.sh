# Shared by compare.sh, compare-kube.sh and compare-builds.sh (sourced, not run): starting and
# stopping a lapis binary and kube-reference, reading a process's memory, and turning benchmark
# output into "metric value" lines. Expects $work and $shared set and
# stop_all called on exit.
lapis_pid=
kube_dir=

# start_lapis BIN NAME [FLAGS...]: starts BIN serve on a fresh data dir $work/NAME-data and waits
# for its kubeconfig; sets lapis_pid and ready_ms (start to kubeconfig, milliseconds).
start_lapis() {
  local bin=$1 name=$2 started
  shift 2
  started=$(date +%s%N)
  "$bin" serve --data-dir "$work/$name-data" --listen 127.0.0.1:0 "$@" >"$work/$name.log" 2>&1 &
  lapis_pid=$!
  for _ in $(seq 1 6000); do
    if [ -f "$work/$name-data/kubeconfig" ]; then
      ready_ms=$((($(date +%s%N) - started) / 1000000))
      return 0
    fi
    kill -0 "$lapis_pid" 2>/dev/null || { tail -n 20 "$work/$name.log"; echo "$name exited" >&2; exit 1; }
    sleep 0.01
  done
  tail -n 20 "$work/$name.log"; echo "$name did not become ready" >&2; exit 1
}

stop_lapis() {
  [ -n "$lapis_pid" ] || return 0
  kill "$lapis_pid" 2>/dev/null || true
  wait "$lapis_pid" 2>/dev/null || true
  lapis_pid=
}

# start_kube: kube-apiserver 1.37 alone on etcd with fsync (KCM=0 REFERENCE_FSYNC=1, as envtest
# runs it) in $kube_dir, which the caller sets (this runs in $(...)); prints its kubeconfig
# path, or fails saying why.
start_kube() {
  KCM=0 REFERENCE_FSYNC=1 bash "$shared/reference/kube-reference" start "$kube_dir" 2>"$work/kube.err" ||
    { echo "kube-reference did not start: $(tail -n 3 "$work/kube.err")" >&2; return 1; }
}

stop_kube() {
  [ -n "$kube_dir" ] || return 0
  local pids
  pids=$(cat "$kube_dir"/*.pid 2>/dev/null || true)
  bash "$shared/reference/kube-reference" stop "$kube_dir" >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do
    local alive=
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  kube_dir=
}

stop_all() {
  stop_lapis
  stop_kube
}

# rss_mib PID...: the processes' resident memory together in MiB, the median of 5 readings a
# second apart.
rss_mib() {
  for _ in 1 2 3 4 5; do
    local total=0 p kib
    for p in "$@"; do
      kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
      total=$((total + ${kib:-0}))
    done
    echo "$total"
    sleep 1
  done | sort -n | sed -n 3p | awk '{ printf "%.1f", $1 / 1024 }'
}

# rss_split PID: anonymous (heap, stacks) and file-backed (the binary's pages, mapped files)
# resident memory.
rss_split() {
  awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { printf "anon %.1f + file %.1f", a / 1024, f / 1024 }' "/proc/$1/status"
}

# benchlines FILE: "Benchmark/sub:unit value" for each metric of each benchmark line.
benchlines() {
  awk '/^Benchmark/ { name = $1; sub(/-[0-9]+$/, "", name); for (i = 3; i < NF; i += 2) print name ":" $(i+1), $i }' "$1"
}

# apibenchlines FILE: "apibench/op:ops/s", ":p50-ms", ":p99-ms" and (with -server-pids)
# ":server-cpu-ms/op" of each apibench row.
apibenchlines() {
  awk '
    function ms(d) {
      if (d ~ /µs$/) return substr(d, 1, length(d) - 2) / 1000
      if (d ~ /ms$/) return substr(d, 1, length(d) - 2) + 0
      if (d ~ /ns$/) return substr(d, 1, length(d) - 2) / 1e6
      if (d ~ /s$/) return substr(d, 1, length(d) - 1) * 1000
      return d + 0
    }
    $2 ~ /^ops=/ {
      print "apibench/" $1 ":ops/s", $3
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^p50=/) print "apibench/" $1 ":p50-ms", ms(substr($i, 5))
        if ($i ~ /^p99=/) print "apibench/" $1 ":p99-ms", ms(substr($i, 5))
        if ($i ~ /^server-cpu=/) print "apibench/" $1 ":server-cpu-ms/op", substr($i, 12) + 0
      }
    }' "$1"
}
