#!/usr/bin/env bash
# build-sample-apiserver.sh: builds k8s.io/sample-apiserver v0.37.2, the extension API server
# test/aggregation runs behind lapis and kube-apiserver, from the Go module proxy, once, into
# kube-reference's cache (~/.cache/kube-reference/v1.37.2/sample-apiserver, or
# $KUBE_REFERENCE_BIN/sample-apiserver). Tests never build it; they skip, saying so, without it.
#
#   test/aggregation/build-sample-apiserver.sh              build unless already built
#   FORCE=1 test/aggregation/build-sample-apiserver.sh      build again
#   test/aggregation/build-sample-apiserver.sh --if-cached  build only if it is quick (below)
#
# From an empty Go build cache the build compiles k8s.io/apiserver and all it needs: about 14
# CPU-minutes (7 minutes or more on 2 cores). Its dependencies are those kube-apiserver
# v1.37.2 is built with, so after kube-reference's build they are in the cache and it takes
# about 30 s. --if-cached builds only then (what .ci/run uses), and otherwise says so and exits 0.
#
# The throw-away module pins every Kubernetes staging module to the published release of the
# same minor, as ../shared/reference/kube-reference does for kube-apiserver, so that the
# sample-apiserver is built against the libraries of the kube it is compared on.
set -euo pipefail
version=v1.37.2
bin=${KUBE_REFERENCE_BIN:-$HOME/.cache/kube-reference/$version}
if [ -x "$bin/sample-apiserver" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "$bin/sample-apiserver"
  exit 0
fi
staging=v0${version#v1}
mod=$(mktemp -d)
trap 'rm -rf "$mod"' EXIT
# The replace block is kube-reference's (its list of staging modules, same order).
cat > "$mod/go.mod" <<MOD
module samplereference
go 1.25
require k8s.io/sample-apiserver $staging
replace (
$(for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
    cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
    cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
    kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
    mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
    echo "	k8s.io/$m => k8s.io/$m $staging"; done)
)
MOD
printf '//go:build tools\npackage tools\nimport _ "k8s.io/sample-apiserver"\n' > "$mod/tools.go"
(cd "$mod" && go mod tidy >/dev/null)
if [ "${1:-}" = --if-cached ] && [ "$(cd "$mod" && go list -f '{{.Stale}}' k8s.io/apiserver/pkg/server)" != false ]; then
  echo "sample-apiserver not built: its dependencies are not in the Go build cache (a build of minutes); run $0" >&2
  exit 0
fi
mkdir -p "$bin"
v=k8s.io/component-base/version minor=${version#v1.}; minor=${minor%%.*}
(cd "$mod" && go build -o "$bin/sample-apiserver.tmp" \
  -ldflags "-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
  k8s.io/sample-apiserver) >&2
mv "$bin/sample-apiserver.tmp" "$bin/sample-apiserver"
echo "$bin/sample-apiserver"
