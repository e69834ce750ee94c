#!/usr/bin/env bash
# build.sh builds, once, Kubernetes' e2e test binary (k8s.io/kubernetes/test/e2e at
# $E2E_KUBE_VERSION, default v1.37.2) and the ginkgo CLI of the version it uses (to run it in
# parallel) into $E2E_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/lapis-e2e/VERSION), and prints
# the e2e binary's path; ginkgo is beside it. About half an hour on 2 cores the first time.
#
# k8s.io/kubernetes is not meant to be required as a module: a throw-away module in the cache
# dir requires it and points each staging module at the published release of the same minor
# (the replace block of ../shared/reference/kube-reference).
set -euo pipefail
version=${E2E_KUBE_VERSION:-v1.37.2}
cache=${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lapis-e2e/$version}
bin=$cache/e2e.test
mod=$cache/module
if [ -x "$bin" ] && [ -x "$cache/ginkgo" ]; then echo "$bin"; exit 0; fi
if [ ! -f "$mod/go.sum" ]; then
  rm -rf "$mod"; mkdir -p "$mod"
  cat > "$mod/go.mod" <<GOMOD
module lapise2e
go 1.25
require k8s.io/kubernetes $version
replace (
$(for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
    cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
    cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt \
    kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
    mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
    echo "	k8s.io/$m => k8s.io/$m v0${version#v1}"; done)
)
GOMOD
  printf '//go:build tools\npackage tools\nimport _ "k8s.io/kubernetes/test/e2e"\n' > "$mod/tools.go"
  (cd "$mod" && go mod tidy) >&2
fi
# The e2e package's own test files import the suites, which tidy does not follow for a
# dependency: -mod=mod lets the builds add what they need.
if [ ! -x "$bin" ]; then
  echo "building $bin (about half an hour on 2 cores; once)" >&2
  v=k8s.io/component-base/version minor=${version#v1.}; minor=${minor%%.*}
  (cd "$mod" && GOWORK=off go test -c -mod=mod -o "$bin.tmp" \
    -ldflags "-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean" \
    k8s.io/kubernetes/test/e2e) >&2
  mv "$bin.tmp" "$bin"
fi
if [ ! -x "$cache/ginkgo" ]; then
  (cd "$mod" && GOWORK=off go build -mod=mod -o "$cache/ginkgo" github.com/onsi/ginkgo/v2/ginkgo) >&2
fi
echo "$bin"
