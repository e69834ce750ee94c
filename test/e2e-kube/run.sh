#!/usr/bin/env bash
# run.sh runs Kubernetes' own e2e suite (k8s.io/kubernetes/test/e2e, v1.37.2) against lapis and
# against kube-reference (kube-apiserver + kube-controller-manager 1.37,
# ../shared/reference/kube-reference), one after the other, selecting
#
#   sig-api-machinery && !Disruptive && !Flaky && !/^Feature:/     (ginkgo's --label-filter)
#
# and prints, for each server, the specs passed/failed/skipped, then every spec that passes on
# kube and fails on lapis with the first lines of lapis's failure message (from the JUnit XML).
#
#   test/e2e-kube/run.sh [OUT]            # build what is missing, run both, report
#   test/e2e-kube/run.sh --report [OUT]   # report the last run in OUT again
#
# OUT defaults to /tmp/lapis-e2e-kube. The e2e binary (and the ginkgo CLI of the same version)
# is built once by build.sh into ${XDG_CACHE_HOME:-~/.cache}/lapis-e2e/v1.37.2 (about half an
# hour on 2 cores); kube-reference builds its binaries once too. lapis is $LAPIS_BIN, else
# ./cmd/lapis built into OUT.
#
# Each server starts fresh (lapis: a new data dir; kube-reference: a new etcd) and is stopped
# after its run. The suite runs with the flags a cluster without nodes needs: --provider skeleton
# --num-nodes=0 --allowed-not-ready-nodes=-1 --minStartupPods=-1
# --e2e-verify-service-account=false. Specs that need a running pod fail on both servers.
#
# Environment:
#   E2E_TARGETS   which servers, in this order (default "lapis kube")
#   E2E_PROCS     ginkgo's parallel processes (default 6: most specs wait on the
#                 server or on a timeout, not on the CPU)
#   E2E_LABELS    the label filter (default the selection above)
#   E2E_FOCUS     also a ginkgo --focus regexp (default none), to rerun a few specs
#   E2E_TIMEOUT   ginkgo's suite timeout (default 4h)
#
# In OUT: <target>/junit_01.xml (the framework's JUnit report), <target>/e2e.log (ginkgo's
# output), <target>/seconds (wall time of the suite), the server's logs, summary.txt (the
# counts) and kube-pass-lapis-fail.txt (the list).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
shared=${LAPIS_SHARED:-$repo/../shared}
report_only=
if [ "${1:-}" = --report ]; then report_only=1; shift; fi
out=${1:-/tmp/lapis-e2e-kube}
targets=${E2E_TARGETS:-lapis kube}
procs=${E2E_PROCS:-6}
labels=${E2E_LABELS:-'sig-api-machinery && !Disruptive && !Flaky && !/^Feature:/'}
focus=${E2E_FOCUS:-}
suite_timeout=${E2E_TIMEOUT:-4h}

report() { python3 "$here/report.py" "$out"; }
if [ -n "$report_only" ]; then report; exit 0; fi

mkdir -p "$out"
e2e=$(bash "$here/build.sh")
ginkgo=$(dirname "$e2e")/ginkgo

lapis_pid= kube_dir= kc=
cleanup() {
  if [ -n "$lapis_pid" ]; then kill "$lapis_pid" 2>/dev/null || true; wait "$lapis_pid" 2>/dev/null || true; fi
  stop_kube
}

# stop_kube: kube-reference stop, then waits for its processes to end (kube-apiserver lingers
# once its etcd is gone: SIGKILL after 10 s).
stop_kube() {
  [ -n "$kube_dir" ] || return 0
  local pids p
  pids=$(cat "$kube_dir"/*.pid 2>/dev/null || true)
  bash "$shared/reference/kube-reference" stop "$kube_dir" >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do
    local alive=
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
  kube_dir=
}
trap cleanup EXIT

# start_lapis DIR: lapis on a fresh data dir DIR/data; sets lapis_pid, and kc to its kubeconfig
# once it is ready (not in $(...): lapis_pid must reach cleanup).
start_lapis() {
  local dir=$1 bin=${LAPIS_BIN:-}
  if [ -z "$bin" ]; then
    bin=$out/lapis-bin
    (cd "$repo" && go build -o "$bin" ./cmd/lapis) >&2
  fi
  rm -rf "$dir/data"
  # --allow-privileged as kube-reference runs kube-apiserver.
  "$bin" serve --data-dir "$dir/data" --listen 127.0.0.1:0 --allow-privileged >"$dir/lapis.log" 2>&1 &
  lapis_pid=$!
  for _ in $(seq 1 600); do
    [ -f "$dir/data/kubeconfig" ] && { kc=$dir/data/kubeconfig; return 0; }
    kill -0 "$lapis_pid" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$dir/lapis.log" >&2
  echo "lapis did not become ready" >&2
  return 1
}

# run_suite TARGET KUBECONFIG: the selection against one server, into $out/TARGET.
run_suite() {
  local dir=$out/$1 kubeconfig=$2 started rc=0
  local args=(--procs="$procs" --label-filter="$labels" --timeout="$suite_timeout" --no-color --silence-skips)
  [ -z "$focus" ] || args+=(--focus="$focus")
  started=$(date +%s)
  echo "e2e against $1: $procs processes, log in $dir/e2e.log" >&2
  "$ginkgo" "${args[@]}" "$e2e" -- \
    --kubeconfig="$kubeconfig" --provider=skeleton --num-nodes=0 --allowed-not-ready-nodes=-1 \
    --minStartupPods=-1 --e2e-verify-service-account=false --report-dir="$dir" \
    >"$dir/e2e.log" 2>&1 || rc=$?
  echo $(($(date +%s) - started)) >"$dir/seconds"
  echo "e2e against $1: exit $rc after $(cat "$dir/seconds") s" >&2
}

for t in $targets; do
  dir=$out/$t
  rm -rf "$dir"; mkdir -p "$dir"
  case $t in
  lapis)
    start_lapis "$dir"
    run_suite lapis "$kc"
    kill "$lapis_pid"; wait "$lapis_pid" 2>/dev/null || true; lapis_pid=
    ;;
  kube)
    kube_dir=$dir/reference
    kc=$(bash "$shared/reference/kube-reference" start "$kube_dir")
    run_suite kube "$kc"
    stop_kube
    ;;
  *) echo "unknown target $t (lapis, kube)" >&2; exit 2 ;;
  esac
done
report
