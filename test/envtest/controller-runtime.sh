#!/usr/bin/env bash
# controller-runtime.sh runs controller-runtime v0.25.2's own envtest-based test suites
# (pkg/client, pkg/cache, pkg/controller, pkg/builder, pkg/manager, pkg/envtest, pkg/webhook,
# each with its subpackages) twice: with KUBEBUILDER_ASSETS pointing at lapis
# (`lapis envtest-assets DIR`), then at kube's real binaries, and prints a table of the specs
# passed/failed/skipped on each and the seconds each suite took, then the specs that pass on
# kube-apiserver and fail on lapis.
#
#   test/envtest/controller-runtime.sh [SUITE...]     # from the repository root; SUITE: client, cache, ...
#
# It copies controller-runtime's source from the Go module cache (downloading it with
# `go mod download` if absent) into $CR_WORK (default /tmp/lapis-controller-runtime; kept between
# runs so that compiled test binaries are reused — CR_REBUILD=1 recompiles them), builds lapis
# (`go build ./cmd/lapis`), compiles each test package once (`go test -c`) and runs the binaries
# one at a time, in their package directory, with -ginkgo.json-report. Ginkgo specs are counted
# from those reports (an It is one spec); a package without a Ginkgo suite counts its top-level
# Go tests instead.
#
# kube's binaries: kube-apiserver from $KUBE_REFERENCE_DIR (default
# ~/.cache/kube-reference/v1.37.2, built by ../shared/reference/kube-reference), etcd from PATH
# (the one kube-reference uses), kubectl from PATH (else lapis's). When kube-apiserver or etcd is
# absent the script says so and runs lapis only. CR_TARGETS="lapis" (or "kube") runs one side.
#
# envtest waits 20 s by default for each binary to start; on a loaded machine kube-apiserver can
# take longer, so the script sets KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=120s (both sides alike)
# unless it is set already. Each package's binary runs with -test.timeout=$CR_TIMEOUT (30m).
# Logs and reports: $CR_WORK/out/<target>/<package>.{log,json}; the table: $CR_WORK/out/table.md.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=v0.25.2
work=${CR_WORK:-/tmp/lapis-controller-runtime}
kubedir=${KUBE_REFERENCE_DIR:-$HOME/.cache/kube-reference/v1.37.2}
timeout=${CR_TIMEOUT:-30m}
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-120s}
export GOFLAGS=${GOFLAGS:--mod=mod} GOWORK=off
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(envtest builder client cache controller manager webhook)

mkdir -p "$work"
src=$work/src
if [ ! -f "$src/go.mod" ]; then
  modcache=$(go env GOMODCACHE)
  if [ ! -d "$modcache/sigs.k8s.io/controller-runtime@$version" ]; then
    (cd "$repo" && go mod download sigs.k8s.io/controller-runtime@$version)
  fi
  rm -rf "$src.tmp"
  cp -r "$modcache/sigs.k8s.io/controller-runtime@$version" "$src.tmp"
  chmod -R u+w "$src.tmp"
  mv "$src.tmp" "$src"
fi
(cd "$src" && go mod download)

echo "building lapis" >&2
(cd "$repo" && go build -o "$work/lapis" ./cmd/lapis)
rm -rf "$work/assets/lapis"
"$work/lapis" envtest-assets "$work/assets/lapis"

targets=(${CR_TARGETS:-lapis kube})
if [[ " ${targets[*]} " == *" kube "* ]]; then
  etcd=$(command -v etcd || true)
  if [ ! -x "$kubedir/kube-apiserver" ] || [ -z "$etcd" ]; then
    echo "kube's binaries are absent (kube-apiserver in $kubedir: $([ -x "$kubedir/kube-apiserver" ] && echo yes || echo no); etcd on PATH: ${etcd:-no}); build them with ../shared/reference/kube-reference start; running lapis only" >&2
    targets=(${targets[@]/kube})
  else
    rm -rf "$work/assets/kube"; mkdir -p "$work/assets/kube"
    ln -s "$kubedir/kube-apiserver" "$work/assets/kube/kube-apiserver"
    ln -s "$etcd" "$work/assets/kube/etcd"
    ln -s "$(command -v kubectl || echo "$work/assets/lapis/kubectl")" "$work/assets/kube/kubectl"
  fi
fi

out=$work/out
mkdir -p "$work/bin"
declare -A secs
for suite in "${suites[@]}"; do
  pkgs=$(cd "$src" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' "./pkg/$suite/...")
  for dir in $pkgs; do
    rel=${dir#"$src"/}
    name=${rel//\//_}
    if [ ! -x "$work/bin/$name.test" ] || [ -n "${CR_REBUILD:-}" ]; then
      echo "compiling $rel" >&2
      (cd "$src" && go test -c -o "$work/bin/$name.test" "./$rel")
    fi
  done
  for t in "${targets[@]}"; do
    mkdir -p "$out/$t"
    start=$(date +%s.%N)
    for dir in $pkgs; do
      rel=${dir#"$src"/}
      name=${rel//\//_}
      rm -f "$out/$t/$name.json"
      echo "running $rel against $t" >&2
      (cd "$dir" && KUBEBUILDER_ASSETS=$work/assets/$t "$work/bin/$name.test" -test.v -test.count=1 \
        -test.timeout="$timeout" -ginkgo.json-report="$out/$t/$name.json" >"$out/$t/$name.log" 2>&1) || true
    done
    secs[$suite/$t]=$(echo "$(date +%s.%N) - $start" | bc)
  done
done

# count prints "passed failed skipped" for one target's packages of a suite.
count() {
  local t=$1 suite=$2 p=0 f=0 s=0 a b c
  for log in "$out/$t"/pkg_"$suite".log "$out/$t"/pkg_"$suite"_*.log; do
    [ -f "$log" ] || continue
    json=${log%.log}.json
    if [ -s "$json" ]; then
      read -r a b c < <(jq -r '[.[].SpecReports[]? | select(.LeafNodeType=="It")] |
        "\(map(select(.State=="passed"))|length) \(map(select(.State!="passed" and .State!="skipped" and .State!="pending"))|length) \(map(select(.State=="skipped" or .State=="pending"))|length)"' "$json")
    else
      a=$(grep -c '^--- PASS' "$log" || true); b=$(grep -c '^--- FAIL' "$log" || true); c=$(grep -c '^--- SKIP' "$log" || true)
      # a test binary that failed without reporting a test (build, panic, timeout) counts as one failure
      if [ "$a$b$c" = 000 ] && ! grep -q '^ok\|^PASS' "$log"; then b=1; fi
    fi
    p=$((p + a)); f=$((f + b)); s=$((s + c))
  done
  echo "$p $f $s"
}

{
  echo "| suite | lapis passed / failed / skipped | kube-apiserver passed / failed / skipped | seconds on lapis | seconds on kube-apiserver |"
  echo "|---|---|---|---|---|"
  for suite in "${suites[@]}"; do
    row="| pkg/$suite"
    for t in lapis kube; do
      if [[ " ${targets[*]} " == *" $t "* ]]; then read -r a b c < <(count "$t" "$suite"); row+=" | $a / $b / $c"; else row+=" | –"; fi
    done
    for t in lapis kube; do
      if [ -n "${secs[$suite/$t]:-}" ]; then row+=" | $(printf %.0f "${secs[$suite/$t]}")"; else row+=" | –"; fi
    done
    echo "$row |"
  done
} | tee "$out/table.md"

# The specs that pass on kube-apiserver and fail on lapis.
if [[ " ${targets[*]} " == *" lapis "* && " ${targets[*]} " == *" kube "* ]]; then
  specs() { # STATE TARGET: "package: container > ... > It" of the specs in that state
    for json in "$out/$2"/*.json; do
      [ -s "$json" ] || continue
      jq -r --arg st "$1" --arg pkg "$(basename "$json" .json)" '.[].SpecReports[]? | select(.LeafNodeType=="It") |
        select(if $st=="failed" then (.State!="passed" and .State!="skipped" and .State!="pending") else .State==$st end) |
        "\($pkg): \((.ContainerHierarchyTexts // []) + [.LeafNodeText] | join(" > "))"' "$json"
    done | sort -u
  }
  echo
  echo "specs that pass on kube-apiserver and fail on lapis:"
  comm -12 <(specs passed kube) <(specs failed lapis) | tee "$out/regressions.txt"
fi
