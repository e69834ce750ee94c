#!/usr/bin/env bash
# Runs controller-runtime v0.25.2's own envtest-based suites with KUBEBUILDER_ASSETS pointing at
# lapis (`lapis envtest-assets`), or at ASSETS_DIR when given (e.g. a directory of links to
# kube-apiserver, etcd and kubectl), and prints, per suite, its exit status, time and spec
# counts. Needs the module proxy once (ginkgo and gomega for controller-runtime's tests).
#
#   test/envtest/controller-runtime-suites.sh [ASSETS_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

assets=${1:-}
if [ -z "$assets" ]; then
  go build -o "$work/lapis" ./cmd/lapis || exit 1
  "$work/lapis" envtest-assets "$work/assets" || exit 1
  assets=$work/assets
fi
assets=$(cd "$assets" && pwd)

src=$(go env GOMODCACHE)/sigs.k8s.io/controller-runtime@v0.25.2
[ -d "$src" ] || go mod download sigs.k8s.io/controller-runtime@v0.25.2
cp -r "$src" "$work/cr" && chmod -R u+w "$work/cr"

for pkg in envtest client cache controller builder manager webhook; do
  if ! (cd "$work/cr" && GOFLAGS=-mod=mod go test -c -o "$work/$pkg.test" "./pkg/$pkg") >"$work/$pkg.build" 2>&1; then
    echo "pkg/$pkg: build failed"; tail -5 "$work/$pkg.build"; continue
  fi
  start=$(date +%s.%N)
  (cd "$work/cr/pkg/$pkg" && KUBEBUILDER_ASSETS=$assets timeout 1800 "$work/$pkg.test" -ginkgo.no-color >"$work/$pkg.log" 2>&1)
  rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc)
  echo "pkg/$pkg: exit $rc, ${took%.*}s, $(grep -aE '^Ran [0-9]+ of [0-9]+ Specs' "$work/$pkg.log") $(grep -aE '[0-9]+ Passed \|' "$work/$pkg.log")"
  [ $rc -eq 0 ] || grep -aE '^\s*\[FAIL\]' "$work/$pkg.log" | sort -u | head -20
done
