#!/usr/bin/env bash
# Compares two builds of lapis on this machine: BASE (a git revision, default HEAD~1) and the
# working tree, for a change that should leave performance as it was.
#
#   test/bench/compare-builds.sh [BASE]
#
# Both builds serve at once (fsync on, fresh data dirs) and are measured in turn ROUNDS times
# (default 3): this VM's speed drifts by a third within minutes, so rounds taken back to back
# share the drift. Each round runs, against each build, shared/tools/apibench (custom resources:
# apply, get, lists, watch fan-out; with -server-pids, so the server's own CPU per operation is
# reported beside throughput and latency), 4000 GETs of a Deployment and of a custom resource (the
# server's CPU per GET), and this package's Deployment benchmarks. Prints each
# metric's median for both builds and their ratio (now/base). Everything started is stopped on
# exit.
#
# APIBENCH_FLAGS (default "-n 500 -c 8 -watchers 20"), BENCHTIME (default 2s).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
shared=${LAPIS_SHARED:-$repo/../shared}
work=$(mktemp -d "${TMPDIR:-/tmp}/lapis-builds.XXXXXX")
base=${1:-HEAD~1}
rounds=${ROUNDS:-3}
benchtime=${BENCHTIME:-2s}
read -r -a apibench_flags <<<"${APIBENCH_FLAGS:--n 500 -c 8 -watchers 20}"
# shellcheck source=lib.sh
. "$repo/test/bench/lib.sh"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

cd "$repo"
echo "== building the working tree, $base, the benchmarks and apibench"
go build -o "$work/now" ./cmd/lapis
mkdir "$work/src"
git archive "$base" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$work/base" ./cmd/lapis)
go test -c -o "$work/bench.test" ./test/bench/
(cd "$shared/tools/apibench" && go build -o "$work/apibench" .)

start_lapis "$work/base" base && pids+=("$lapis_pid") && base_pid=$lapis_pid
start_lapis "$work/now" now && pids+=("$lapis_pid") && now_pid=$lapis_pid
lapis_pid= # both are stopped by the trap

# seed NAME: a Deployment and a custom resource to GET.
seed() {
  local kc=$work/$1-data/kubeconfig
  KUBECONFIG=$kc kubectl create deployment web --image=nginx >/dev/null
  KUBECONFIG=$kc kubectl apply -f - >/dev/null <<'CRD'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
CRD
  KUBECONFIG=$kc kubectl wait --for condition=established crd/widgets.example.com >/dev/null
  echo '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"a":1}}' |
    KUBECONFIG=$kc kubectl apply -f - >/dev/null
}

# gets NAME PID METRIC PATH: the server's CPU per GET of PATH over 4000 HTTP/2 GETs, four at a
# time (apibench's GET phase is too short to tell small differences apart).
gets() {
  local kc=$work/$1-data/kubeconfig server token t0 t1
  server=$(awk '/server:/ {print $2}' "$kc"); token=$(awk '/token:/ {print $2}' "$kc")
  for _ in $(seq 1 4000); do printf 'url = "%s%s"\noutput = /dev/null\n' "$server" "$4"; done >"$work/urls"
  curl -sk --no-progress-meter --http2 -H "Authorization: Bearer $token" -K "$work/urls" --parallel --parallel-max 4
  t0=$(awk '{print $14+$15}' "/proc/$2/stat")
  curl -sk --no-progress-meter --http2 -H "Authorization: Bearer $token" -K "$work/urls" --parallel --parallel-max 4
  t1=$(awk '{print $14+$15}' "/proc/$2/stat")
  echo "$3 $(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.4f", d * 1000 / hz / 4000}')"
}

# measure NAME PID: one round against one build, "metric value" lines appended to $work/NAME.txt.
measure() {
  local name=$1 pid=$2 kc=$work/$1-data/kubeconfig
  echo "== $name: 4000 GETs of a Deployment and of a custom resource"
  { gets "$name" "$pid" get_deployment_server_cpu_ms/op /apis/apps/v1/namespaces/default/deployments/web
    gets "$name" "$pid" get_custom_resource_server_cpu_ms/op /apis/example.com/v1/namespaces/default/widgets/w1
  } | tee -a "$work/$name.txt"
  echo "== $name: apibench ${apibench_flags[*]}"
  "$work/apibench" -kubeconfig "$kc" -server-pids "$pid" "${apibench_flags[@]}" | tee "$work/$name.apibench"
  apibenchlines "$work/$name.apibench" >>"$work/$name.txt"
  echo "== $name: Deployment benchmarks (-benchtime $benchtime)"
  LAPIS_BENCH_KUBECONFIG=$kc "$work/bench.test" -test.run '^$' -test.bench 'BenchmarkDeployment' \
    -test.benchtime "$benchtime" -test.timeout 30m | grep '^Benchmark' | tee "$work/$name.bench"
  benchlines "$work/$name.bench" >>"$work/$name.txt"
}

seed base; seed now

# Which build goes first alternates, so that neither always runs on a machine the other warmed.
for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds"
  if [ $((round % 2)) = 1 ]; then
    measure base "$base_pid"; measure now "$now_pid"
  else
    measure now "$now_pid"; measure base "$base_pid"
  fi
done

echo
awk '
  FNR == 1 { file++ }
  { k = $1; if (file == 1 && !(k in seen)) { seen[k]; order[++rows] = k }; v[file, k, ++n[file, k]] = $2 + 0 }
  function median(f, k,   c, i, j, x, s) {
    c = n[f, k]
    for (i = 1; i <= c; i++) { x = v[f, k, i]; for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]; s[j + 1] = x }
    return c == 0 ? "" : (c % 2 ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2)
  }
  END {
    printf "%-60s %12s %12s %9s\n", "metric (median of rounds)", "base", "now", "now/base"
    for (r = 1; r <= rows; r++) {
      k = order[r]; a = median(1, k); b = median(2, k)
      printf "%-60s %12s %12s %9s\n", k, a, b, (a + 0 == 0 || b == "") ? "-" : sprintf("%.2f", b / a)
    }
  }' "$work/base.txt" "$work/now.txt"
