#!/usr/bin/env bash
# Regenerates zz_generated.openapi.go: the OpenAPI definitions of the built-in types lapis serves.
# Run from anywhere (`go generate ./internal/openapi/generated/` does it); needs the Go module proxy.
# openapi-gen is run at the kube-openapi version go.mod pins and is not added to go.mod.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

version=$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)
packages=(
	k8s.io/api/apps/v1
	k8s.io/api/autoscaling/v1
	k8s.io/api/autoscaling/v2
	k8s.io/api/batch/v1
	k8s.io/api/coordination/v1
	k8s.io/api/core/v1
	k8s.io/api/discovery/v1
	k8s.io/api/events/v1
	k8s.io/api/networking/v1
	k8s.io/api/policy/v1
	k8s.io/api/rbac/v1
	k8s.io/api/scheduling/v1
	k8s.io/api/scheduling/v1alpha3 # batch/v1 Job refers to its workload types
	k8s.io/api/storage/v1
	k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
	k8s.io/apimachinery/pkg/api/resource
	k8s.io/apimachinery/pkg/apis/meta/v1
	k8s.io/apimachinery/pkg/runtime
	k8s.io/apimachinery/pkg/util/intstr
	k8s.io/apimachinery/pkg/version
)

go run "k8s.io/kube-openapi/cmd/openapi-gen@${version}" \
	--output-dir . \
	--output-pkg github.com/lapis-dev/lapis/internal/openapi/generated \
	--output-file zz_generated.openapi.go \
	--go-header-file /dev/null \
	--report-filename /dev/null \
	"${packages[@]}"
